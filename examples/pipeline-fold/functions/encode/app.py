"""Encode: stage 1, compress one chunk on its own.

Output: ``{"index": i, "raw_b64": <chunk bytes, base64>, "solo": <size of the chunk
compressed alone with zlib level 9>}``. Its Next edges hand the output to Recode i and,
unless it is the last chunk, to Recode i+1 (partial fan-in, not a barrier).
"""
import base64
import zlib


def handler(event, context):
    raw = event["text"].encode("utf-8")
    return {
        "index": event["index"],
        "raw_b64": base64.b64encode(raw).decode("ascii"),
        "solo": len(zlib.compress(raw, 9)),
    }
