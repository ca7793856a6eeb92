"""Merge: the join of every Posting (``Values: [Posting-UnumIndex-*]``, words in code-point
order). Output: ``{"words": K, "postings": P, "index": {word: [passage numbers]}}``."""


def handler(event, context):
    index = {word: lines for word, lines in event}
    return {"words": len(index), "postings": sum(len(v) for v in index.values()), "index": index}
