"""Combine: the first two replica answers (a Quorum of 2 of the 3 replicas).

Input: the answers of the first two replicas that committed, in the order the quorum
accepted them. Output: the agreed answer, ``agree`` (both replicas gave the same one),
``replicas`` (which answered, sorted) and ``order`` (the replicas in quorum order, which
depends on timing).
"""


def handler(event, context):
    if not isinstance(event, list) or len(event) != 2:
        raise ValueError(f"Combine expects the 2 answers of the quorum, got {event!r}"[:200])
    answers = [{k: v for k, v in a.items() if k != "replica"} for a in event]
    return {**answers[0], "agree": all(a == answers[0] for a in answers),
            "replicas": sorted(a["replica"] for a in event),
            "order": [a["replica"] for a in event]}
