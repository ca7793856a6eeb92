"""Check: {"lines": [{"item", "qty", "unit_cents"}]} -> the order, checked."""


def handler(event, context):
    for line in event.get("lines", []):
        if not isinstance(line.get("qty"), int) or line["qty"] < 1:
            raise ValueError(f"line {line.get('item')!r}: qty must be a positive integer")
    return event
