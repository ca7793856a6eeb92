"""Check: compares what every Map item and Parallel branch saw."""


def handler(event, context):
    seen = event["mapped"] + event["parallel"]
    return {
        "start_times_equal": len({s["start"] for s in seen}) == 1,
        "start_time_set": all(isinstance(s["start"], str) and s["start"] for s in seen),
        "nonce_seen_by_all": all(s["nonce"] == event["nonce"] for s in seen),
        "indexes": [m["index"] for m in event["mapped"]],
        "values": [m["value"] for m in event["mapped"]],
        "branches": [p["branch"] for p in event["parallel"]],
    }
