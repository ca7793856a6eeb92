"""Nonce: the items plus a random token (nondeterministic)."""
import secrets


def handler(event, context):
    return {"items": list(event["items"]), "nonce": secrets.token_hex(8)}
