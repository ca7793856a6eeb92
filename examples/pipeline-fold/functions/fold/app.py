"""Fold: ordered fold over the recoded chunks, one step per chunk.

Input (fan-in): ``[Recode 0]`` for step 0, else ``[Fold i-1, Recode i]``.
Output: ``{"step": i, "chunks": [Recode 0, ..., Recode i]}`` (without the ``index``
field, which is the position in the list).
"""


def handler(event, context):
    if len(event) == 1:
        done, recoded = [], event[0]
    else:
        previous, recoded = event
        done = previous["chunks"]
    if recoded["index"] != len(done):
        raise ValueError("fold step %d got chunk %d" % (len(done), recoded["index"]))
    chunk = {k: recoded[k] for k in ("z_b64", "raw_len", "solo")}
    return {"step": recoded["index"], "chunks": done + [chunk]}
