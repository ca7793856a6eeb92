"""ShortenUrl: give each URL a short link (parallel branch 1, second step).

NONDETERMINISTIC on purpose: the short code is 8 random hex digits from ``uuid.uuid4()``,
so a re-execution yields different codes. With checkpointing on, every consumer must
still see the one committed value (the fault campaign checks this).
Output: ``{"text": <post>, "urls": [...], "links": {url: "https://sho.rt/<code>"}}``.
"""
import uuid

PREFIX = "https://sho.rt/"


def handler(event, context):
    links = {url: PREFIX + uuid.uuid4().hex[:8] for url in event["urls"]}
    return {"text": event["text"], "urls": event["urls"], "links": links}
