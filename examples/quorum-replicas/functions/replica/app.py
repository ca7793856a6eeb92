"""Replica: one replica of a slow service that indexes a document.

Input: the request ``{"text", "slow_replica", "delay_seconds"}``; ``context.index`` is this
replica's number. Output: ``{"replica": i, "words": <word count>, "distinct": <distinct
words>, "digest": <SHA-256 of the text, 16 hex digits>}``. The replica numbered
``slow_replica`` first sleeps ``delay_seconds`` (a straggler: a cold start, a busy host).
"""
import hashlib
import re
import time


def handler(event, context):
    if context.index == event.get("slow_replica"):
        time.sleep(float(event.get("delay_seconds", 0)))
    words = re.findall(r"[a-z']+", event["text"].lower())
    return {"replica": context.index, "words": len(words), "distinct": len(set(words)),
            "digest": hashlib.sha256(event["text"].encode()).hexdigest()[:16]}
