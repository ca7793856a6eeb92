"""Nested map (examples/nested-map) as Python: a Map over the rows of a matrix, inside it a
Map over each row's cells, a per-row Fan-in (RowSum) and a Fan-in of the rows (Total)."""
from runtime.flow import step, workflow


@step(timeout=30)
def matrix(event) -> list:
    """The rows of ``{"rows": [[numbers], ...]}`` (the outer Map)."""
    rows = event["rows"]
    if not isinstance(rows, list) or any(not isinstance(row, list) for row in rows):
        raise ValueError("rows must be a list of lists")
    return rows


@step(timeout=30)
def row(event) -> list:
    """One row's numbers (the inner Map)."""
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in event):
        raise ValueError("a row must hold numbers")
    return list(event)


@step(timeout=30)
def cell(event):
    """The square of one number."""
    return event * event


@step(timeout=30)
def row_sum(event):
    """The sum of a row's squares."""
    return sum(event)


@step(timeout=30)
def total(event):
    """``{"row_sums": [...], "total": ...}``."""
    return {"row_sums": list(event), "total": sum(event)}


@workflow
def nested_map(doc):
    sums = matrix(doc).map(lambda r: row_sum(row(r).map(cell)))
    return total(sums)
