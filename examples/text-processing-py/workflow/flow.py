"""Text processing (examples/text-processing) as Python: Ingest fans out to UserMention and
FindUrl -> ShortenUrl in parallel; CreatePost joins them; Publish (docs/python.md)."""
import re
import unicodedata
import uuid

from runtime.flow import parallel, step, workflow

URL = re.compile(r"https?://\S*[^\s.,;:!?)\]}'\"]")
MENTION = re.compile(r"(?<![\w@.])@([A-Za-z0-9_]{1,15})\b")
PREFIX = "https://sho.rt/"
MAX_LENGTH = 280


@step(timeout=30)
def ingest(event):
    """NFC-normalise the post and collapse whitespace: ``{"text": post}``."""
    text = event["text"] if isinstance(event, dict) else event
    if not isinstance(text, str):
        raise ValueError("the post text must be a string")
    text = unicodedata.normalize("NFC", text)
    return {"text": re.sub(r"\s+", " ", text).strip()}


@step(timeout=30)
def user_mention(event):
    """The @mentions of the post, lower-cased, once each in order."""
    mentions = []
    for name in MENTION.findall(event["text"]):
        if name.lower() not in mentions:
            mentions.append(name.lower())
    return {"mentions": mentions}


@step(timeout=30)
def find_url(event):
    """The http(s) URLs of the post, once each in order."""
    urls = []
    for url in URL.findall(event["text"]):
        if url not in urls:
            urls.append(url)
    return {"text": event["text"], "urls": urls}


@step(timeout=30)
def shorten_url(event):
    """A random short link per URL (nondeterministic on purpose)."""
    links = {url: PREFIX + uuid.uuid4().hex[:8] for url in event["urls"]}
    return {"text": event["text"], "urls": event["urls"], "links": links}


@step(timeout=30)
def create_post(event):
    """Join ``[mentions, shortened]``: the text with its URLs replaced by short links."""
    mentioned, shortened = event
    links = shortened["links"]
    text = URL.sub(lambda m: links.get(m.group(0), m.group(0)), shortened["text"])
    return {"text": text, "mentions": mentioned["mentions"], "links": links}


@step(timeout=30)
def publish(event):
    """The published post, with deterministic fields for comparison."""
    post = event["text"]
    template = post
    for short in sorted(set(event["links"].values()), key=len, reverse=True):
        template = template.replace(short, "<short>")
    if len(post) > MAX_LENGTH:
        raise ValueError("post is longer than %d characters" % MAX_LENGTH)
    return {"status": "published", "post": post, "post_template": template, "length": len(post),
            "mentions": event["mentions"], "short_link_count": len(event["links"]),
            "short_links": event["links"]}


@workflow
def text_processing(raw):
    post = ingest(raw)
    branches = parallel(post, user_mention, lambda p: shorten_url(find_url(p)))
    return publish(create_post(branches))
