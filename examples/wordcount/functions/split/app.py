"""Split: cut the text into ``chunks`` pieces for the mappers.

Input: ``{"text": str, "chunks": int, "reducers": int}``. Each cut is moved forward to
the next whitespace character, so no word is ever split between two pieces; there are
always exactly ``chunks`` pieces (some may be empty for tiny texts).
Output: a list of ``{"text": piece, "reducers": R}`` (Map edge to Mapper).
"""


def handler(event, context):
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
