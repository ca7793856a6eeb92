"""Item: one element (never runs for [])."""


def handler(event, context):
    return event * 10
