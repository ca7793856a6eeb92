"""Charge: charge the order total to the customer's card.

Input: ``{"order": str, "customer": str, "amount": number}``. Output:
``{"receipt": "R-<order>-<amount>", "charged": amount}``.
"""


def handler(event, context):
    amount = event["amount"]
    return {"receipt": f"R-{event['order']}-{amount}", "charged": amount}
