"""Charge: charge one order's card.

Input: the validated order document. A card starting with "0000" is declined
(CardDeclined, caught by the Catch); an order with ``"flaky": true`` fails with
TransientError on its first attempt in this function instance and succeeds when the
state machine's Retry runs it again. Output: ``{"charged": amount, "card_last4": str}``.
"""

_seen: set[str] = set()


class TransientError(Exception):
    pass


class CardDeclined(Exception):
    pass


def handler(event, context):
    order = event["order"]
    if order.get("flaky") and context.instance not in _seen:
        _seen.add(context.instance)
        raise TransientError("payment gateway timed out")
    if order["card"].startswith("0000"):
        raise CardDeclined(f"card ending {order['card'][-4:]} declined")
    return {"charged": order["amount"], "card_last4": order["card"][-4:]}
