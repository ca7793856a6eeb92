"""CreatePost: join the two branches into a post document (fan-in).

Input: the ordered list ``[UserMention output, ShortenUrl output]``. Every URL in the
text is replaced by its short link. Output: ``{"text", "mentions", "links"}``.
"""
import re

URL = re.compile(r"https?://\S*[^\s.,;:!?)\]}'\"]")  # same rule as FindUrl


def handler(event, context):
    mentioned, shortened = event
    links = shortened["links"]
    text = URL.sub(lambda m: links.get(m.group(0), m.group(0)), shortened["text"])
    return {"text": text, "mentions": mentioned["mentions"], "links": links}
