"""Summarize: count the outcomes of all orders.

Input: ``{"orders": [...], "results": [{"id", "status", ...}, ...]}`` (results in order).
Output: ``{"statuses": {id: status}, "charged_total": number, "counts": {status: n}}``.
"""


def handler(event, context):
    statuses, counts, total = {}, {}, 0
    for r in event["results"]:
        statuses[r["id"]] = r["status"]
        counts[r["status"]] = counts.get(r["status"], 0) + 1
        total += r.get("amount", 0) if r["status"] == "charged" else 0
    return {"statuses": statuses, "counts": counts, "charged_total": total}
