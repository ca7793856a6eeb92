"""Done: end of the loop; returns ``{"n": 1, "steps": k, "trajectory_max": m}``."""


def handler(event, context):
    if event["n"] != 1:
        raise ValueError("Done reached with n = %r" % event["n"])
    return {"n": 1, "steps": event["steps"], "trajectory_max": event["trajectory_max"]}
