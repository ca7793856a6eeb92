"""Start: pass the number on."""


def handler(event, context):
    return {"n": event["n"]}
