"""Ask the payment provider to charge the order; the provider confirms later with the task token.

This stub plays the provider too. With "auto_confirm": true it answers at once through the
Python API (as a webhook handler would): SendTaskSuccess with the payment, or SendTaskFailure
`Payment.Declined` for a card ending in "declined". Otherwise it prints the token (to the
function's log, stderr) so that you answer by hand:

    unumctl send-task-success examples/order-payment-sfn --token TOKEN --output paid.json
"""

import sys

from runtime.asl.callback import client


def handler(event, context):
    order, token = event["order"], event["token"]
    if not event.get("auto_confirm"):
        print(f"payment requested for order {order['id']}; task token: {token}", file=sys.stderr)
        return {"requested": True}
    provider = client(context)
    if str(order.get("card", "")).endswith("declined"):
        provider.send_task_failure(token, "Payment.Declined", f"card {order['card']} was declined")
    else:
        provider.send_task_success(token, {"paid": order["amount"], "confirmation": f"pay-{order['id']}"})
    return {"requested": True}
