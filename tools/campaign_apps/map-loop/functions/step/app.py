"""Step: one pass of the loop."""


def handler(event, context):
    return {"n": event["n"] - 1 if event["n"] > 0 else 0, "steps": event["steps"] + (event["n"] > 0)}
