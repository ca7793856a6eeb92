"""Publish: "publish" the post and return it as the workflow result.

Besides the post itself (``post``, ``short_links``: these contain ShortenUrl's random
codes), the result carries deterministic fields that tests can compare exactly:
``post_template`` (the post with every short link replaced by ``<short>``),
``length`` (short links have a fixed length), ``mentions`` and ``short_link_count``.
"""
MAX_LENGTH = 280


def handler(event, context):
    post = event["text"]
    template = post
    for short in sorted(set(event["links"].values()), key=len, reverse=True):
        template = template.replace(short, "<short>")
    if len(post) > MAX_LENGTH:
        raise ValueError("post is longer than %d characters" % MAX_LENGTH)
    return {
        "status": "published",
        "post": post,
        "post_template": template,
        "length": len(post),
        "mentions": event["mentions"],
        "short_link_count": len(event["links"]),
        "short_links": event["links"],
    }
