"""Total: fan-in of all RowSums; returns ``{"row_sums": [...], "total": ...}``."""


def handler(event, context):
    return {"row_sums": list(event), "total": sum(event)}
