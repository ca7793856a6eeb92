"""Partition: the shuffle step between mappers and reducers (fan-in of all Mappers).

Input: the ordered list of Mapper outputs. Output: one object per reducer,
``{"reducer": r, "counts": [mapper 0's counts for r, mapper 1's counts for r, ...]}``
(Map edge to Reducer).
"""


def handler(event, context):
    reducers = len(event[0]["partitions"])
    if any(len(m["partitions"]) != reducers for m in event):
        raise ValueError("mappers disagree on the number of reducers")
    return [{"reducer": r, "counts": [m["partitions"][r] for m in event]}
            for r in range(reducers)]
