"""Validate: check one order.

Input: ``{"order": {"id", "amount", "vip"?, "flaky"?, "card"}, "index": int}``.
Raises InvalidOrder (caught by the state machine's Catch) for a non-positive amount or a
missing card; otherwise returns the input with ``"valid": true``.
"""


class InvalidOrder(Exception):
    pass


def handler(event, context):
    order = event["order"]
    if not isinstance(order.get("amount"), (int, float)) or order["amount"] <= 0:
        raise InvalidOrder(f"order {order.get('id')}: amount must be positive")
    if not order.get("card"):
        raise InvalidOrder(f"order {order.get('id')}: no card")
    return {**event, "valid": True}
