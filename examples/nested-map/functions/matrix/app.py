"""Matrix: emit the rows of a ragged matrix (outer Map).

Input: ``{"rows": [[numbers], ...]}``. Output: the list of rows. Every row must be
non-empty: a Map over an empty list has no branches, so its fan-in would never fire.
"""


def handler(event, context):
    rows = event["rows"]
    if not rows or any(not isinstance(row, list) or not row for row in rows):
        raise ValueError("rows must be a non-empty list of non-empty lists")
    return rows
