"""Split: cut a text into passages of ``passage`` words (whitespace-separated) and deal
consecutive passages out to ``chunks`` Indexers.

Input: ``{"text": str, "chunks": int, "passage": int}``. Output: a list of exactly ``chunks``
objects ``{"first": n, "passages": [text, ...]}`` (``first`` is the 1-based number of the
first passage; Map edge to Indexer). Some pieces may be empty for tiny texts.
"""


def handler(event, context):
    words, chunks, size = event["text"].split(), int(event["chunks"]), int(event.get("passage", 25))
    if chunks < 1 or size < 1:
        raise ValueError("chunks and passage must be >= 1")
    passages = [" ".join(words[i:i + size]) for i in range(0, len(words), size)]
    n = len(passages)
    cuts = [k * n // chunks for k in range(chunks + 1)]
    return [{"first": a + 1, "passages": passages[a:b]} for a, b in zip(cuts, cuts[1:])]
