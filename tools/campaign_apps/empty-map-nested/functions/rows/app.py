"""Rows: the outer list (Map)."""


def handler(event, context):
    return event
