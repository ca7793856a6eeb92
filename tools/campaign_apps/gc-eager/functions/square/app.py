"""Square: one Map branch."""


def handler(event, context):
    return {"sq": event["x"] * event["x"], "nonce": event["nonce"]}
