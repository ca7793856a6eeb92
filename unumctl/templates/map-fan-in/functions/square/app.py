"""Square: one number -> its square."""


def handler(event, context):
    return event * event
