"""Use: one consumer of Gen's value; returns its digest and length."""
import hashlib


def handler(event, context):
    blob = event["blob"]
    return {"sha256": hashlib.sha256(blob.encode()).hexdigest(), "length": len(blob)}
