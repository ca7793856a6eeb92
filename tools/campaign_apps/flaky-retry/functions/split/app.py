"""Split: flaky; emits the numbers (Map)."""
import random


def handler(event, context):
    if random.random() < 0.3:
        raise RuntimeError("transient failure (flaky by design)")
    return list(event["numbers"])
