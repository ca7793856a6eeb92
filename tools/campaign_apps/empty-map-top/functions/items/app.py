"""Items: the (empty) list to map over."""


def handler(event, context):
    return list(event["items"])
