"""Total: flaky fan-in."""
import random


def handler(event, context):
    if random.random() < 0.3:
        raise RuntimeError("transient failure (flaky by design)")
    return {"doubled": list(event), "total": sum(event)}
