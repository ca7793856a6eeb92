"""Check: fan-in of the Use branches; did they all see one value?"""


def handler(event, context):
    return {"consumers": len(event),
            "all_equal": len({e["sha256"] for e in event}) == 1,
            "length": event[0]["length"]}
