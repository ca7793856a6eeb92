"""aggregate of the advertising event stream: count the window's events per campaign
(seed 003 §III-C: "count the events per campaign every second"). Input: the window's
objects in order; context.extra["Window"] = {"Name", "Id", "Size"}."""


def handler(events, context):
    counts = {}
    for e in events:
        counts[e["campaign"]] = counts.get(e["campaign"], 0) + 1
    return {"window": context.extra["Window"]["Id"], "counts": dict(sorted(counts.items())),
            "event_ids": [e["event_id"] for e in events]}
