"""GetExecutionHistory's Task and fan-out failure events as the Step Functions API reference
describes them (HistoryEvent; LambdaFunctionScheduledEventDetails `input`: "The JSON data
input to the Lambda function"; TaskScheduledEventDetails `parameters`: "The JSON data
passed to the resource referenced in a task state"), through boto3 against `serve` on
127.0.0.1:

- each attempt a Retry retried is LambdaFunctionScheduled, LambdaFunctionStarted,
  LambdaFunctionFailed, then the next attempt is scheduled again (AWS records one
  *Scheduled/*Started/*Failed per attempt), and `describe` counts the Task retries;
- the Scheduled input / parameters is the resolved Parameters, not the state input;
- an uncaught failure in a Map iteration or a Parallel branch records MapStateFailed /
  ParallelStateFailed before ExecutionFailed.
"""

from __future__ import annotations

import json

import pytest

from tests.unumctl.serve.test_sfn_api import ROLE, machine_arn, served, wait_status
from unumctl_testing.apps import make_sfn_app, sfn_task

pytestmark = pytest.mark.slow  # each test starts serve's worker processes (5-10 s)

LAMBDA = "arn:aws:lambda:us-east-1:000000000000:function:"
FLAKY = ("def handler(event, context):\n"
         "    if event['retry'] < event['fails']:\n"
         "        raise ValueError(f\"attempt {event['retry']} fails\")\n"
         "    return {'n': event['n'], 'retry': event['retry']}\n")
ECHO = "def handler(event, context):\n    return event\n"


def _types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]


def _run(sfn, name: str, definition: dict, input_: dict) -> tuple[dict, list[dict]]:
    sfn.create_state_machine(name=name, definition=json.dumps(definition), roleArn=ROLE)
    run = sfn.start_execution(stateMachineArn=machine_arn(name), name="e1", input=json.dumps(input_))
    desc = wait_status(sfn, run["executionArn"])
    return desc, sfn.get_execution_history(executionArn=run["executionArn"])["events"]


def test_each_retried_attempt_is_recorded_with_the_resolved_parameters(tmp_path):
    fns = make_sfn_app(tmp_path / "fns", {"StartAt": "E", "States": {"E": sfn_task("Echo")}},
                       {"Echo": ECHO, "Flaky": FLAKY}, name="fns")
    flow = {"StartAt": "Charge", "States": {"Charge": {
        "Type": "Task", "Resource": LAMBDA + "Flaky", "End": True,
        "Parameters": {"n.$": "$.n", "fails.$": "$.fails", "retry.$": "$$.State.RetryCount"},
        "Retry": [{"ErrorEquals": ["ValueError"], "IntervalSeconds": 1, "MaxAttempts": 3}]}}}
    with served([fns], tmp_path / "state") as (svc, sfn):
        desc, events = _run(sfn, "retrying", flow, {"n": 7, "fails": 2, "extra": "not passed"})
        assert desc["status"] == "SUCCEEDED" and json.loads(desc["output"]) == {"n": 7, "retry": 2}
        assert _types(events) == [
            "ExecutionStarted", "TaskStateEntered",
            "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed",
            "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed",
            "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionSucceeded",
            "TaskStateExited", "ExecutionSucceeded"]
        scheduled = [e for e in events if e["type"] == "LambdaFunctionScheduled"]
        # the input is what the function got: the resolved Parameters of each attempt
        assert [json.loads(e["lambdaFunctionScheduledEventDetails"]["input"]) for e in scheduled] == \
            [{"n": 7, "fails": 2, "retry": k} for k in range(3)]
        assert all(e["lambdaFunctionScheduledEventDetails"]["resource"] == LAMBDA + "Flaky" for e in scheduled)
        failed = [e["lambdaFunctionFailedEventDetails"] for e in events if e["type"] == "LambdaFunctionFailed"]
        assert [f["error"] for f in failed] == ["ValueError", "ValueError"]
        assert "attempt 0 fails" in failed[0]["cause"] and "attempt 1 fails" in failed[1]["cause"]
        # the second attempt waited IntervalSeconds * BackoffRate**0 = 1 s after the first failed
        fail0 = next(e for e in events if e["type"] == "LambdaFunctionFailed")
        assert scheduled[1]["timestamp"].timestamp() - fail0["timestamp"].timestamp() >= 0.9
        assert [e["id"] for e in events] == list(range(1, len(events) + 1))
        m = svc.machine(machine_arn("retrying"))
        from unumctl.serve.shapes import session_of
        with m.reader() as r:
            assert r.describe(session_of("e1"))["counts"]["task_retries"] == 2


def test_task_scheduled_parameters_are_the_resolved_parameters(tmp_path):
    flow = {"StartAt": "Put", "States": {
        "Put": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "Next": "Done",
                "Parameters": {"QueueUrl": "http://127.0.0.1:1/000000000000/none", "MessageBody.$": "$.body"},
                "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Done"}]},
        "Done": {"Type": "Succeed"}}}
    with served([], tmp_path / "state") as (_, sfn):
        _, events = _run(sfn, "params", flow, {"body": "hello", "other": 1})
    scheduled = next(e for e in events if e["type"] == "TaskScheduled")["taskScheduledEventDetails"]
    assert (scheduled["resourceType"], scheduled["resource"]) == ("sqs", "sendMessage")
    assert json.loads(scheduled["parameters"]) == {"QueueUrl": "http://127.0.0.1:1/000000000000/none",
                                                   "MessageBody": "hello"}


def test_an_uncaught_iteration_failure_fails_the_map_then_the_execution(tmp_path):
    flow = {"StartAt": "Each", "States": {"Each": {
        "Type": "Map", "ItemsPath": "$.items", "End": True,
        "ItemProcessor": {"StartAt": "Check", "States": {
            "Check": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericEquals": 2, "Next": "Bad"}],
                      "Default": "Ok"},
            "Bad": {"Type": "Fail", "Error": "Two", "Cause": "no twos"},
            "Ok": {"Type": "Pass", "End": True}}}}}}
    with served([], tmp_path / "state") as (_, sfn):
        desc, events = _run(sfn, "mapfail", flow, {"items": [1, 2, 3]})
    assert desc["status"] == "FAILED" and desc["error"] == "Two"
    types = _types(events)
    assert "MapStateEntered" in types and "FailStateEntered" in types
    assert types[-2:] == ["MapStateFailed", "ExecutionFailed"]
    assert "MapStateSucceeded" not in types and "MapStateExited" not in types


def test_an_uncaught_branch_failure_fails_the_parallel_then_the_execution(tmp_path):
    fns = make_sfn_app(tmp_path / "fns", {"StartAt": "E", "States": {"E": sfn_task("Echo")}},
                       {"Echo": ECHO, "Flaky": FLAKY}, name="fns")
    flow = {"StartAt": "Both", "States": {"Both": {
        "Type": "Parallel", "End": True, "Branches": [
            {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": LAMBDA + "Echo", "End": True}}},
            {"StartAt": "B", "States": {"B": {"Type": "Task", "Resource": LAMBDA + "Flaky", "End": True,
                                              "Parameters": {"n": 1, "fails": 1, "retry": 0}}}}]}}}
    with served([fns], tmp_path / "state") as (_, sfn):
        desc, events = _run(sfn, "parfail", flow, {"x": 1})
    assert desc["status"] == "FAILED" and desc["error"] == "ValueError"
    types = _types(events)
    # (branch A may not have run when the execution ends: its events are not asserted)
    assert "ParallelStateEntered" in types and "LambdaFunctionFailed" in types
    assert types[-2:] == ["ParallelStateFailed", "ExecutionFailed"]
