"""Step: one Collatz step per invocation (the body of the loop).

n -> n/2 if n is even, 3n+1 if n is odd; ``steps`` counts the steps and
``trajectory_max`` keeps the largest value seen. n = 1 is passed through unchanged.
Step invokes itself again while n != 1 (each pass is a new iteration), then Done.
"""


def handler(event, context):
    n = event["n"]
    if n == 1:
        return dict(event)
    n = n // 2 if n % 2 == 0 else 3 * n + 1
    return {
        "n": n,
        "steps": event["steps"] + 1,
        "trajectory_max": max(event["trajectory_max"], n),
    }
