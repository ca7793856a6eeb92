"""Echo: returns its input (a Map item or a Parallel branch)."""


def handler(event, context):
    return event
