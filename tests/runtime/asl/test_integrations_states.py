"""Nested executions (`arn:aws:states:::states:startExecution`, docs/stepfunctions.md
"Nested executions"): a parent machine starts a child machine hosted by the same
`unumctl serve` (the real Service and SfnApi behind the real werkzeug server on 127.0.0.1,
in this process, driven with boto3's `stepfunctions` client; the functions run in the
local platform's worker processes)."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from runtime.asl.integrations import states as states_family
from unumctl_testing.apps import make_sfn_app, sfn_task
from unumctl.serve.server import make_api_server
from unumctl.serve.service import Service
from unumctl.serve.sfn_api import SfnApi

boto3 = pytest.importorskip("boto3", reason="boto3 (the aws extra) drives the API")
from botocore.config import Config  # noqa: E402

PREFIX = "arn:aws:states:us-east-1:000000000000"
CHILD_ARN = f"{PREFIX}:stateMachine:child"
DOUBLE = "def handler(event, context):\n    return {'y': event['x'] * 2}\n"
ECHO = "def handler(event, context):\n    return event\n"

CHILD = {"StartAt": "Double", "States": {"Double": sfn_task("Double")}}


def parent_machine(child: str = CHILD_ARN, pattern: str = "", **extra) -> dict:
    """Prep (Lambda), then the startExecution Task (`pattern`: "", ".sync", ".sync:2") of
    `child` with the parent's id."""
    start = {"Type": "Task", "Resource": states_family.RESOURCE + pattern,
             "Parameters": {"StateMachineArn": child,
                            "Input": {"x.$": "$.x", "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id"}},
             "ResultPath": "$.child", "End": True, **extra}
    states = {"Prep": sfn_task("Prep", "Start"), "Start": start}
    if "Catch" in extra:
        states["Caught"] = {"Type": "Pass", "End": True}
    return {"StartAt": "Prep", "States": states}


@contextmanager
def served(tmp: Path, parent: dict, faults: str | None = None) -> Iterator[tuple[Service, object]]:
    """A Service hosting the apps `parent` and `child`, published on a free port (as
    `unumctl serve` does: the workers get its URL); yields (service, boto3 client)."""
    apps = [make_sfn_app(tmp / "parent", parent, {"Prep": ECHO}, name="parent"),
            make_sfn_app(tmp / "child", CHILD, {"Double": DOUBLE}, name="child")]
    short = tempfile.mkdtemp(prefix="usn-", dir="/tmp")  # short AF_UNIX socket paths for the workers
    old = tempfile.tempdir
    tempfile.tempdir = short
    svc = Service(apps, tmp / "state", faults=faults)
    try:
        svc.start()
        server = make_api_server(SfnApi(svc), 0)
        svc.publish(f"http://127.0.0.1:{server.port}")
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        try:
            yield svc, boto3.client("stepfunctions", endpoint_url=f"http://127.0.0.1:{server.port}",
                                    region_name="us-east-1", aws_access_key_id="fake",
                                    aws_secret_access_key="fake",
                                    config=Config(retries={"max_attempts": 1}, read_timeout=60))
        finally:
            server.shutdown()
            t.join(5)
    finally:
        svc.close()
        tempfile.tempdir = old
        shutil.rmtree(short, ignore_errors=True)


def wait_done(sfn, arn: str, timeout: float = 60.0) -> dict:
    deadline = time.time() + timeout
    while time.time() < deadline:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return d
        time.sleep(0.05)
    raise AssertionError(f"{arn} still RUNNING after {timeout} s")


def run_parent(sfn, x: int = 21) -> tuple[dict, dict]:
    """Start the parent, wait for it and for the child it started: (parent, child) descriptions."""
    arn = sfn.start_execution(stateMachineArn=f"{PREFIX}:stateMachine:parent", name="p1",
                              input=json.dumps({"x": x}))["executionArn"]
    parent = wait_done(sfn, arn)
    assert parent["status"] == "SUCCEEDED", parent
    out = json.loads(parent["output"])
    child = wait_done(sfn, out["child"]["ExecutionArn"])
    return parent, child


def test_start_execution_request_response(tmp_path):
    """The Task's result is AWS's request-response shape; the child runs to its own end
    with the input the Task gave it, the parent's execution ARN included."""
    with served(tmp_path, parent_machine()) as (_, sfn):
        parent, child = run_parent(sfn)
        out = json.loads(parent["output"])["child"]
        assert out["ExecutionArn"].startswith(f"{PREFIX}:execution:child:p1-")
        assert isinstance(out["StartDate"], int) and out["StartDate"] > 1.6e12  # Unix ms
        assert set(out) == {"ExecutionArn", "StartDate", "SdkHttpMetadata", "SdkResponseMetadata"}
        assert child["status"] == "SUCCEEDED"
        assert json.loads(child["output"]) == {"y": 42}
        assert json.loads(child["input"]) == {"x": 21, "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID":
                                              parent["executionArn"]}
        assert abs(child["startDate"].timestamp() * 1000 - out["StartDate"]) < 1000


@pytest.mark.parametrize("pattern", ["", ".sync:2"])
def test_start_execution_repeated_task_starts_one_child(tmp_path, pattern):
    """Every delivery of a function before its last crashes after it ran
    (`before_checkpoint=1`: the platform delivers it again, 3 times in all): the parent's
    Task ran three times (and, with `.sync`, the child's end completed the token three
    times) and one child exists, the one the committed result names."""
    with served(tmp_path, parent_machine(pattern=pattern), faults="before_checkpoint=1") as (_, sfn):
        parent, child = run_parent(sfn)
        children = sfn.list_executions(stateMachineArn=CHILD_ARN)["executions"]
        assert [c["executionArn"] for c in children] == [child["executionArn"]]
        assert json.loads(child["output"]) == {"y": 42}
        if pattern:
            assert json.loads(parent["output"])["child"]["Output"] == {"y": 42}


def test_child_name_is_derived_from_parent_and_invocation():
    """The child's name: a pure function of (parent ARN, invocation), a valid AWS name."""
    a = states_family.child_name(f"{PREFIX}:execution:parent:p1", "Prep|/Start|abc|0|0")
    assert a == states_family.child_name(f"{PREFIX}:execution:parent:p1", "Prep|/Start|abc|0|0")
    assert a != states_family.child_name(f"{PREFIX}:execution:parent:p1", "Prep|/Start|abc|0|1")
    assert a != states_family.child_name(f"{PREFIX}:execution:parent:p2", "Prep|/Start|abc|0|0")
    assert a.startswith("p1-") and len(a) <= 80


def test_start_execution_error_name_is_caught(tmp_path):
    """A child machine the service does not host: the Task fails with AWS's error name
    `StepFunctions.StateMachineDoesNotExist`, which a Catch on that name catches."""
    parent = parent_machine(f"{PREFIX}:stateMachine:nosuch",
                            Catch=[{"ErrorEquals": ["StepFunctions.StateMachineDoesNotExist"],
                                    "ResultPath": "$.error", "Next": "Caught"}])
    with served(tmp_path, parent) as (_, sfn):
        arn = sfn.start_execution(stateMachineArn=f"{PREFIX}:stateMachine:parent", name="p1",
                                  input=json.dumps({"x": 1}))["executionArn"]
        d = wait_done(sfn, arn)
        assert d["status"] == "SUCCEEDED", d
        out = json.loads(d["output"])
        assert out["error"]["Error"] == "StepFunctions.StateMachineDoesNotExist"
        assert "nosuch" in out["error"]["Cause"]


@pytest.mark.parametrize("pattern", [".sync:2", ".sync"])
def test_start_execution_sync_continues_parent_at_child_end(tmp_path, pattern):
    """`.sync`: the parent's Task suspends; the child's end completes its task token (no
    polling) and the parent continues with DescribeExecution's shape: Output as JSON
    (`.sync:2`) or JSON text (`.sync`). The child's input has no trace of the continuation."""
    with served(tmp_path, parent_machine(pattern=pattern)) as (_, sfn):
        arn = sfn.start_execution(stateMachineArn=f"{PREFIX}:stateMachine:parent", name="p1",
                                  input=json.dumps({"x": 5}))["executionArn"]
        d = wait_done(sfn, arn)
        assert d["status"] == "SUCCEEDED", d
        out = json.loads(d["output"])["child"]
        child = sfn.describe_execution(executionArn=out["ExecutionArn"])
        assert child["status"] == "SUCCEEDED"
        expect_in = {"x": 5, "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID": arn}
        assert json.loads(child["input"]) == expect_in
        assert out["Status"] == "SUCCEEDED"
        assert out["Name"] == child["name"]
        assert out["StateMachineArn"] == CHILD_ARN
        if pattern == ".sync:2":
            assert out["Output"] == {"y": 10} and out["Input"] == expect_in
        else:
            assert json.loads(out["Output"]) == {"y": 10} and json.loads(out["Input"]) == expect_in
        assert out["StopDate"] >= out["StartDate"]


def test_start_execution_sync_child_failure_fails_task(tmp_path):
    """A `.sync` child that fails: the parent's Task fails with States.TaskFailed, its cause
    the child's description (Status FAILED, Error, Cause), which a Catch sees."""
    child_arn = f"{PREFIX}:stateMachine:child"
    parent = parent_machine(child_arn, ".sync:2",
                            Catch=[{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.error", "Next": "Caught"}])
    with served(tmp_path, parent) as (_, sfn):
        arn = sfn.start_execution(stateMachineArn=f"{PREFIX}:stateMachine:parent", name="p1",
                                  input=json.dumps({"x": None}))["executionArn"]
        d = wait_done(sfn, arn)
        assert d["status"] == "SUCCEEDED", d
        err = json.loads(d["output"])["error"]
        assert err["Error"] == "States.TaskFailed"
        cause = json.loads(err["Cause"])
        assert cause["Status"] == "FAILED" and cause["Error"] == "TypeError"


def _wait_child(sfn, timeout: float = 60.0) -> dict:
    """The description of the first child execution once it is listed."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        found = sfn.list_executions(stateMachineArn=CHILD_ARN)["executions"]
        if found:
            return sfn.describe_execution(executionArn=found[0]["executionArn"])
        time.sleep(0.05)
    raise AssertionError(f"no child execution after {timeout} s")


@pytest.mark.parametrize("outcome", ["success", "failure"])
def test_start_execution_wait_for_task_token(tmp_path, outcome):
    """`states:startExecution.waitForTaskToken`: the child's input carries `$$.Task.Token`
    where the Parameters place it; the child ends without completing it and the parent stays
    RUNNING until someone calls SendTaskSuccess (the parent continues with that output) or
    SendTaskFailure (the Task fails with that error, which a Catch on its name catches)."""
    parent = parent_machine(pattern=".waitForTaskToken",
                            Catch=[{"ErrorEquals": ["Rejected"], "ResultPath": "$.error", "Next": "Caught"}])
    parent["States"]["Start"]["Parameters"]["Input"]["Token.$"] = "$$.Task.Token"
    with served(tmp_path, parent) as (_, sfn):
        arn = sfn.start_execution(stateMachineArn=f"{PREFIX}:stateMachine:parent", name="p1",
                                  input=json.dumps({"x": 4}))["executionArn"]
        child = _wait_child(sfn)
        token = json.loads(child["input"])["Token"]
        assert isinstance(token, str) and token
        assert json.loads(child["input"])["AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"] == arn
        assert wait_done(sfn, child["executionArn"])["status"] == "SUCCEEDED"
        time.sleep(0.5)  # the child's end does not complete the token: the parent waits
        assert sfn.describe_execution(executionArn=arn)["status"] == "RUNNING"
        if outcome == "success":
            sfn.send_task_success(taskToken=token, output=json.dumps({"approved": True}))
        else:
            sfn.send_task_failure(taskToken=token, error="Rejected", cause="by the reviewer")
        d = wait_done(sfn, arn)
        assert d["status"] == "SUCCEEDED", d
        out = json.loads(d["output"])
        if outcome == "success":
            assert out["child"] == {"approved": True}
        else:
            assert out["error"] == {"Error": "Rejected", "Cause": "by the reviewer"}
        assert len(sfn.list_executions(stateMachineArn=CHILD_ARN)["executions"]) == 1
