"""Loop counter (examples/loop-counter) as Python: Init, then Step (one Collatz step) again
while n != 1, then Done (docs/python.md "Loops")."""
from runtime.flow import loop, step, workflow


@step(timeout=30)
def init(event):
    """Start a trajectory: ``{"n": n, "steps": 0, "trajectory_max": n}``."""
    n = event["n"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError("n must be a positive integer")
    return {"n": n, "steps": 0, "trajectory_max": n}


@step(name="Step", timeout=30)
def collatz(event):
    """One Collatz step: n/2 if even, 3n+1 if odd (n = 1 passes through)."""
    n = event["n"]
    if n == 1:
        return dict(event)
    n = n // 2 if n % 2 == 0 else 3 * n + 1
    return {"n": n, "steps": event["steps"] + 1, "trajectory_max": max(event["trajectory_max"], n)}


@step(timeout=30)
def done(event):
    """The end of the loop: ``{"n": 1, "steps": k, "trajectory_max": m}``."""
    if event["n"] != 1:
        raise ValueError("Done reached with n = %r" % event["n"])
    return {"n": 1, "steps": event["steps"], "trajectory_max": event["trajectory_max"]}


@workflow
def loop_counter(start):
    final = loop(collatz, init(start), while_=lambda state: state["n"] != 1)
    return done(final)
