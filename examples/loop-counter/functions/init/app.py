"""Init: start a Collatz trajectory.

Input: ``{"n": <positive integer>}``. Output: ``{"n": n, "steps": 0, "trajectory_max": n}``.
"""


def handler(event, context):
    n = event["n"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError("n must be a positive integer")
    return {"n": n, "steps": 0, "trajectory_max": n}
