"""Ship a paid order (a stub): returns its tracking number."""


def handler(event, context):
    return {"tracking": f"TRK-{event['order_id']}", "confirmation": event["confirmation"]}
