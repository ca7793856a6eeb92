"""FindUrl: find the http(s) URLs of a post (parallel branch 1, first step).

A URL runs from ``http://`` or ``https://`` to the next whitespace, without trailing
punctuation such as ``.`` ``,`` ``)`` or ``!``. Each URL is listed once, in order.
Output: ``{"text": <post>, "urls": [...]}``.
"""
import re

URL = re.compile(r"https?://\S*[^\s.,;:!?)\]}'\"]")


def handler(event, context):
    urls = []
    for url in URL.findall(event["text"]):
        if url not in urls:
            urls.append(url)
    return {"text": event["text"], "urls": urls}
