"""Apps and state machines for Task timeouts, heartbeats and callbacks
(.waitForTaskToken) on the local target (docs/stepfunctions.md "Timeouts, heartbeats and
callbacks"): the handlers' source, the machines that run them, and `sfn_app` writing one to
disk. Used by tests/runtime/asl/test_timeouts_and_callbacks.py and bench/asl_callbacks.py."""

from __future__ import annotations

import json
import time
from pathlib import Path

import yaml

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"

# sleeps past its TimeoutSeconds on the attempts listed in the event, counting attempts in a file
SLEEPY = """
import json, os, time
def handler(event, context):
    log = event["log"]
    n = len(open(log).read().splitlines()) if os.path.exists(log) else 0
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\\n")
    if n in event.get("slow_attempts", []):
        time.sleep(event.get("sleep", 30))
    return {"attempt": n, "pid": os.getpid()}
"""

# writes its task token where the test can read it, and returns
TOKEN_WRITER = """
import json
def handler(event, context):
    with open(event["token_file"], "w") as f:
        f.write(event["token"])
    return {"sent": True}
"""

# completes its own token from inside the function (the Python API)
SELF_COMPLETE = """
from runtime.asl.callback import client
def handler(event, context):
    client(context).send_task_success(event["token"], {"self": event["x"] * 2})
    return {"ignored": True}
"""


def sfn_app(root: Path, definition: dict, functions: dict[str, str], name: str = "cb-app") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "sm.json").write_text(json.dumps(definition))
    manifest = {"version": 1, "app": name, "workflow": {"stepfunctions": "sm.json"}, "functions": {}}
    for fn, code in functions.items():
        d = root / "functions" / fn.lower()
        d.mkdir(parents=True, exist_ok=True)
        (d / "app.py").write_text(code)
        manifest["functions"][fn] = {"code": f"functions/{fn.lower()}", "handler": "app.handler"}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


def timeout_machine(retry: list | None = None, catch: bool = True) -> dict:
    work = {"Type": "Task", "Resource": ARN + "Sleepy", "TimeoutSeconds": 1, "End": True}
    if retry is not None:
        work["Retry"] = retry
    if catch:
        work["Catch"] = [{"ErrorEquals": ["States.TaskFailed"], "Next": "WrongCatch"},
                         {"ErrorEquals": ["States.Timeout"], "ResultPath": "$.err", "Next": "Caught"}]
    states = {"Work": work}
    if catch:
        states["WrongCatch"] = {"Type": "Fail", "Error": "Wrong", "Cause": "States.TaskFailed matched a timeout"}
        states["Caught"] = {"Type": "Pass", "End": True}
    return {"StartAt": "Work", "States": states}


def callback_machine(heartbeat: int | None = None, timeout: int | None = None,
                     resource_fn: str = "Waiter") -> dict:
    task = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": ARN + resource_fn,
                           "Payload": {"token.$": "$$.Task.Token", "token_file.$": "$.token_file",
                                       "x.$": "$.x"}},
            "ResultPath": "$.cb", "Next": "After",
            "Catch": [{"ErrorEquals": ["States.HeartbeatTimeout"], "ResultPath": "$.err", "Next": "NoBeat"},
                      {"ErrorEquals": ["Payment.Declined"], "ResultPath": "$.err", "Next": "Declined"}]}
    if heartbeat is not None:
        task["HeartbeatSeconds"] = heartbeat
    if timeout is not None:
        task["TimeoutSeconds"] = timeout
    return {"StartAt": "Wait4", "States": {
        "Wait4": task,
        "After": {"Type": "Pass", "Parameters": {"got.$": "$.cb", "x.$": "$.x"}, "End": True},
        "NoBeat": {"Type": "Pass", "Parameters": {"nobeat.$": "$.err.Error"}, "End": True},
        "Declined": {"Type": "Pass", "Parameters": {"declined.$": "$.err"}, "End": True}}}


def wait_file(path: Path, seconds: float = 60) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")
