"""Mid (Checkpoint: false): double the number and attach a random nonce."""
import secrets


def handler(event, context):
    return {"n": event["n"] * 2, "nonce": secrets.token_hex(8)}
