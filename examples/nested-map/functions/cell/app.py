"""Cell: square one number (instance Cell-UnumIndex-<row>.<column>)."""


def handler(event, context):
    return event * event
