"""Row: one row of the matrix (branch $0 of the outer Map); emits its numbers (inner Map)."""


def handler(event, context):
    if any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in event):
        raise ValueError("a row must hold numbers")
    return list(event)
