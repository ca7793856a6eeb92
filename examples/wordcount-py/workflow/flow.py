"""Word count (examples/wordcount) as Python: Split -Map-> Mapper -Fan-in-> Partition
-Map-> Reducer -Fan-in-> Summary, compiled to the same IR (docs/python.md)."""
import re
import zlib
from collections import Counter

from runtime.flow import step, workflow


@step(memory=256)
def split(event) -> list:
    """Cut ``{"text", "chunks", "reducers"}`` into ``chunks`` pieces at whitespace."""
    text, chunks, reducers = event["text"], int(event["chunks"]), int(event["reducers"])
    if chunks < 1 or reducers < 1:
        raise ValueError("chunks and reducers must be >= 1")
    n = len(text)
    cuts = [0]
    for k in range(1, chunks):
        p = max(k * n // chunks, cuts[-1])
        while p < n and not text[p].isspace():
            p += 1
        cuts.append(p)
    cuts.append(n)
    return [{"text": text[a:b], "reducers": reducers} for a, b in zip(cuts, cuts[1:])]


@step(memory=256)
def mapper(event) -> dict:
    """Count the words of one piece, partitioned by reducer (crc32 of the word)."""
    reducers = int(event["reducers"])
    partitions = [{} for _ in range(reducers)]
    for word, count in Counter(re.findall(r"[a-z]+", event["text"].lower())).items():
        partitions[zlib.crc32(word.encode()) % reducers][word] = count
    return {"partitions": partitions}


@step(memory=256)
def partition(event) -> list:
    """The shuffle: one ``{"reducer", "counts"}`` per reducer from all mappers' outputs."""
    reducers = len(event[0]["partitions"])
    if any(len(m["partitions"]) != reducers for m in event):
        raise ValueError("mappers disagree on the number of reducers")
    return [{"reducer": r, "counts": [m["partitions"][r] for m in event]} for r in range(reducers)]


@step
def reducer(event) -> dict:
    """Add up the per-mapper counts of one partition."""
    total = {}
    for counts in event["counts"]:
        for word, count in counts.items():
            total[word] = total.get(word, 0) + count
    return total


@step(memory=256)
def summary(event) -> dict:
    """Merge the reducers' outputs, keys sorted."""
    merged = {}
    for counts in event:
        for word, count in counts.items():
            merged[word] = merged.get(word, 0) + count
    return {word: merged[word] for word in sorted(merged)}


@workflow
def wordcount(doc):
    counts = split(doc).map(mapper)
    totals = partition(counts).map(reducer)
    return summary(totals)
