"""Mapper: count the words of one piece and partition the counts by reducer.

Words are ``re.findall(r"[a-z]+", text.lower())``. Word ``w`` belongs to reducer
``zlib.crc32(w.encode()) % R`` (stable across processes, unlike ``hash()``).
Output: ``{"partitions": [counts for reducer 0, ..., counts for reducer R-1]}``.
"""
import re
import zlib
from collections import Counter


def handler(event, context):
    reducers = int(event["reducers"])
    partitions = [{} for _ in range(reducers)]
    for word, count in Counter(re.findall(r"[a-z]+", event["text"].lower())).items():
        partitions[zlib.crc32(word.encode()) % reducers][word] = count
    return {"partitions": partitions}
