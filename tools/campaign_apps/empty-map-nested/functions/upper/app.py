"""Upper: one cell."""


def handler(event, context):
    return event.upper()
