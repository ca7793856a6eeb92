"""Double: flaky Map branch."""
import random


def handler(event, context):
    if random.random() < 0.3:
        raise RuntimeError("transient failure (flaky by design)")
    return event * 2
