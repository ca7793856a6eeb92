"""Gen: a random 400,000-character value (blob-sized, nondeterministic)."""
import secrets


def handler(event, context):
    return {"blob": secrets.token_hex(event["bytes"] // 2)}
