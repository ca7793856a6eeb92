"""Quorum replicas (examples/quorum-replicas) as Python: one request to three replicas, the
first two answers to commit combined (a k-of-n Fan-in, docs/python.md "Quorum")."""
import hashlib
import re
import time

from runtime.flow import quorum, step, workflow


@step(timeout=30)
def request(event) -> list:
    """One copy of the request per replica."""
    n = int(event.get("replicas", 3))
    if not 1 <= n <= 16:
        raise ValueError(f"replicas: {n} must be between 1 and 16")
    req = {k: event[k] for k in ("text", "slow_replica", "delay_seconds") if k in event}
    return [req] * n


@step(timeout=30)
def replica(event, context):
    """One replica indexing the document; replica ``slow_replica`` straggles."""
    if context.index == event.get("slow_replica"):
        time.sleep(float(event.get("delay_seconds", 0)))
    words = re.findall(r"[a-z']+", event["text"].lower())
    return {"replica": context.index, "words": len(words), "distinct": len(set(words)),
            "digest": hashlib.sha256(event["text"].encode()).hexdigest()[:16]}


@step(timeout=30)
def combine(event):
    """The first two answers: the agreed answer and which replicas gave it."""
    if not isinstance(event, list) or len(event) != 2:
        raise ValueError(f"Combine expects the 2 answers of the quorum, got {event!r}"[:200])
    answers = [{k: v for k, v in a.items() if k != "replica"} for a in event]
    return {**answers[0], "agree": all(a == answers[0] for a in answers),
            "replicas": sorted(a["replica"] for a in event), "order": [a["replica"] for a in event]}


@workflow
def quorum_replicas(doc):
    answers = request(doc).map(replica)
    return combine(quorum(answers, 2))
