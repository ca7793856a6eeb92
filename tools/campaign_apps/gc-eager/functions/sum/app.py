"""Sum: fan-in; the total and whether every branch saw the same nonce."""


def handler(event, context):
    return {"total": sum(e["sq"] for e in event),
            "nonce_agree": len({e["nonce"] for e in event}) == 1}
