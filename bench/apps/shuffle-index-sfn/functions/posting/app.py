"""Posting (state machine variant): ``[word, [passages]]`` from ``{"key", "values"}``."""


def handler(event, context):
    return [event["key"], event["values"]]
