"""Use: branch k adds k+1 and echoes the nonce it saw."""


def handler(event, context):
    return {"n": event["n"] + context.index + 1, "nonce": event["nonce"]}
