"""Request: send one request to every replica of the slow service.

Input: ``{"text": <document>, "replicas": n, "slow_replica": i, "delay_seconds": s}``.
Output: a list of n copies of the request, one per replica (the Map edge invokes Replica
once per element; the Quorum edge after it combines the first two answers).
"""


def handler(event, context):
    n = int(event.get("replicas", 3))
    if not 1 <= n <= 16:
        raise ValueError(f"replicas: {n} must be between 1 and 16")
    request = {k: event[k] for k in ("text", "slow_replica", "delay_seconds") if k in event}
    return [request] * n
