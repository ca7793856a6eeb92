"""Price: the price of one order line.

Input: ``{"sku": str, "qty": int}``. Output: ``{"sku", "qty", "unit", "amount"}`` from a
fixed catalogue; an unknown SKU raises UnknownSku.
"""

CATALOGUE = {"tea": 15, "mug": 40, "pot": 55}


class UnknownSku(Exception):
    pass


def handler(event, context):
    sku = event["sku"]
    if sku not in CATALOGUE:
        raise UnknownSku(f"no such product: {sku}")
    unit = CATALOGUE[sku]
    return {"sku": sku, "qty": event["qty"], "unit": unit, "amount": unit * event["qty"]}
