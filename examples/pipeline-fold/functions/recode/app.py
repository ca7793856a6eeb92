"""Recode: stage 2, compress chunk i using chunk i-1 as zlib preset dictionary.

Input (fan-in): ``[Encode 0]`` for i = 0, else ``[Encode i-1, Encode i]``. Recode i
starts as soon as those two encodes are done, whatever the other chunks are doing.
Output: ``{"index": i, "z_b64": <compressed bytes, base64>, "raw_len", "solo"}``.
"""
import base64
import zlib


def handler(event, context):
    *prev, cur = event
    raw = base64.b64decode(cur["raw_b64"])
    if prev:
        if prev[0]["index"] != cur["index"] - 1:
            raise ValueError("Recode got chunks %s and %s" % (prev[0]["index"], cur["index"]))
        comp = zlib.compressobj(level=9, zdict=base64.b64decode(prev[0]["raw_b64"]))
    else:
        if cur["index"] != 0:
            raise ValueError("Recode %s got no previous chunk" % cur["index"])
        comp = zlib.compressobj(level=9)
    z = comp.compress(raw) + comp.flush()
    return {
        "index": cur["index"],
        "z_b64": base64.b64encode(z).decode("ascii"),
        "raw_len": len(raw),
        "solo": cur["solo"],
    }
