"""Matrix: emit the rows of a ragged matrix (outer Map).

Input: ``{"rows": [[numbers], ...]}``. Output: the list of rows. The matrix and any row may
be empty: a Map over ``[]`` runs the join it would reach with ``[]`` (an empty row sums to
0; an empty matrix gives ``{"row_sums": [], "total": 0}``), as a Step Functions Map does.
"""


def handler(event, context):
    rows = event["rows"]
    if not isinstance(rows, list) or any(not isinstance(row, list) for row in rows):
        raise ValueError("rows must be a list of lists")
    return rows
