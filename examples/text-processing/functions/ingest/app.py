"""Ingest: normalise a social-media post before it is analysed.

Input: ``{"text": <raw post>}``. Applies Unicode NFC normalisation, turns every run of
whitespace (including newlines and no-break spaces) into one space and strips the ends.
Output: ``{"text": <normalised post>}``; both parallel branches receive it.
"""
import re
import unicodedata


def handler(event, context):
    text = event["text"] if isinstance(event, dict) else event
    if not isinstance(text, str):
        raise ValueError("the post text must be a string")
    text = unicodedata.normalize("NFC", text)
    text = re.sub(r"\s+", " ", text).strip()
    return {"text": text}
