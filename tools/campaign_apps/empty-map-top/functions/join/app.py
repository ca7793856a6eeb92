"""Join: fan-in of the Map ([] here)."""


def handler(event, context):
    return {"items": list(event), "count": len(event)}
