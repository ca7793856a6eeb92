"""Row: one row (inner Map, possibly empty)."""


def handler(event, context):
    return list(event)
