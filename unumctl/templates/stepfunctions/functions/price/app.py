"""Price: one order line -> the line with its price in cents."""


def handler(event, context):
    return {**event, "cents": event["qty"] * event["unit_cents"]}
