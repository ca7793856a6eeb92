"""Items: one counter per branch (Map)."""


def handler(event, context):
    return [{"n": n, "steps": 0} for n in event["counters"]]
