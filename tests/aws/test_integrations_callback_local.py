"""Service integrations with the Wait for Callback pattern (`.waitForTaskToken`) on the local
target against moto_server on 127.0.0.1 (the tests/aws fixtures): the integration's request
carries `$$.Task.Token`, the Task waits as a Lambda callback Task does, and
SendTaskSuccess/SendTaskFailure (runtime.asl.callback, what `unumctl send-task-*` and serve
call) complete it. Source: AWS developer guide "Wait for a Callback with Task Token" and the
optimized integrations table (which services offer `.waitForTaskToken`)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import boto3
import pytest

from runtime.asl.callback import CallbackClient, CallbackError
from runtime.local.datastore import SqliteDatastore
from runtime.local.entry import QueueInvoker
from runtime.local.queue import DurableQueue
from unumctl_testing.apps import make_sfn_app
from unumctl.asl.validate import AslValidationError, validate
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

ECHO = "def handler(event, context):\n    return {'echo': event}\n"
ECHO_ARN = "arn:aws:lambda:us-east-1:123456789012:function:Echo"
SEND = "arn:aws:states:::sqs:sendMessage.waitForTaskToken"


@pytest.fixture
def aws(moto_env, monkeypatch):
    """moto for this process and the local workers it starts."""
    return moto_env


def machine(queue_url: str, catch: bool = False) -> dict:
    """Ask (SQS sendMessage.waitForTaskToken with the token in the body) -> Echo (Lambda)."""
    ask = {"Type": "Task", "Resource": SEND,
           "Parameters": {"QueueUrl": queue_url,
                          "MessageBody": {"order.$": "$.order", "token.$": "$$.Task.Token"}},
           "HeartbeatSeconds": 600, "ResultPath": "$.reply", "Next": "Echo"}
    if catch:
        ask["Catch"] = [{"ErrorEquals": ["Order.Rejected"], "ResultPath": "$.err", "Next": "Rejected"}]
    states = {"Ask": ask, "Echo": {"Type": "Task", "Resource": ECHO_ARN, "End": True}}
    if catch:
        states["Rejected"] = {"Type": "Pass", "Parameters": {"rejected.$": "$.err"}, "End": True}
    return {"StartAt": "Ask", "States": states}


def receive(url: str, seconds: float = 60) -> list[dict]:
    """The messages on queue `url` (polled until one arrives)."""
    sqs = boto3.client("sqs")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
        if got:
            return got
    raise AssertionError(f"no message on {url} within {seconds} s")


def client(state: Path) -> CallbackClient:
    ds = SqliteDatastore(state / "unum.db")
    return CallbackClient(ds, QueueInvoker(lambda m: None, DurableQueue(ds), None))


def start(tmp: Path, definition: dict, value: dict, session: str):
    root = make_sfn_app(tmp / "app", definition, {"Echo": ECHO}, "cbinteg")
    return LocalRunner(load_app(root), state=tmp / "state", quiet=True), session, value


def test_sqs_send_message_wait_for_task_token_completed_by_send_task_success(aws, tmp_path):
    """The message read back from the queue carries the token; SendTaskSuccess's output is
    the Task's result (ResultPath $.reply), then the Lambda Task runs; the request was sent
    once while the Task waited."""
    url = boto3.client("sqs").create_queue(QueueName="approvals")["QueueUrl"]
    runner, session, value = start(tmp_path, machine(url), {"order": "o-7"}, "cb-sqs-1")
    with runner as r:
        r.start(value, session)
        msgs = receive(url)
        assert len(msgs) == 1
        body = json.loads(msgs[0]["Body"])
        assert body["order"] == "o-7" and isinstance(body["token"], str) and body["token"]
        assert r.platform.result(session) is None  # the Task waits for its callback
        client(tmp_path / "state").send_task_success(body["token"], {"approved": True})
        item = r.platform.wait_result(session, 60)
        r.platform.wait_drained(session)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"echo": {"order": "o-7", "reply": {"approved": True}}}
    again = boto3.client("sqs").receive_message(QueueUrl=url, MaxNumberOfMessages=10,
                                                VisibilityTimeout=0).get("Messages", [])
    assert again == [], "the request was sent again after the callback"
    with pytest.raises(CallbackError) as e:  # a token is used once
        client(tmp_path / "state").send_task_success(body["token"], {"approved": False})
    assert e.value.code == "TaskTimedOut"


def test_send_task_failure_is_caught(aws, tmp_path):
    """SendTaskFailure with the error name the Catch lists routes to the catcher."""
    url = boto3.client("sqs").create_queue(QueueName="approvals2")["QueueUrl"]
    runner, session, value = start(tmp_path, machine(url, catch=True), {"order": "o-8"}, "cb-sqs-2")
    with runner as r:
        r.start(value, session)
        token = json.loads(receive(url)[0]["Body"])["token"]
        client(tmp_path / "state").send_task_failure(token, "Order.Rejected", "out of stock")
        item = r.platform.wait_result(session, 60)
        r.platform.wait_drained(session)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"rejected": {"Error": "Order.Rejected", "Cause": "out of stock"}}


@pytest.mark.parametrize("resource", [
    "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
    "arn:aws:states:::sns:publish.waitForTaskToken",
    "arn:aws:states:::events:putEvents.waitForTaskToken",
    "arn:aws:states:::aws-sdk:s3:putObject.waitForTaskToken",
])
def test_validator_accepts_the_callback_pattern_where_aws_offers_it(resource):
    params = {"sqs": {"QueueUrl": "u", "MessageBody.$": "$$.Task.Token"},
              "sns": {"TopicArn": "t", "Message.$": "$$.Task.Token"},
              "events": {"Entries": [{"Detail": {"t.$": "$$.Task.Token"}}]},
              "aws-sdk": {"Bucket": "b", "Key": "k", "Body.$": "$$.Task.Token"}}
    fam = "aws-sdk" if ":aws-sdk:" in resource else resource.split(":::")[1].split(":")[0]
    validate({"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": resource,
                                              "Parameters": params[fam], "End": True}}})


def test_validator_refuses_dynamodb_wait_for_task_token_naming_the_state():
    d = {"StartAt": "Put", "States": {"Put": {
        "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem.waitForTaskToken",
        "Parameters": {"TableName": "t", "Item": {}}, "End": True}}}
    with pytest.raises(AslValidationError) as e:
        validate(d)
    msg = str(e.value)
    assert "\n" not in msg
    assert "States.Put.Resource" in msg and "does not offer the Wait for Callback" in msg, msg
    assert "arn:aws:states:::dynamodb:putItem" in msg


def test_heartbeat_seconds_applies_to_a_waiting_integration_task(aws, tmp_path):
    """No callback within HeartbeatSeconds 1: the local timer records
    States.HeartbeatTimeout, which the Catch routes; the token is refused afterwards."""
    url = boto3.client("sqs").create_queue(QueueName="approvals3")["QueueUrl"]
    d = machine(url)
    d["States"]["Ask"]["HeartbeatSeconds"] = 1
    d["States"]["Ask"]["Catch"] = [{"ErrorEquals": ["States.HeartbeatTimeout"], "ResultPath": "$.err",
                                    "Next": "NoBeat"}]
    d["States"]["NoBeat"] = {"Type": "Pass", "Parameters": {"nobeat.$": "$.err.Error"}, "End": True}
    runner, session, value = start(tmp_path, d, {"order": "o-9"}, "cb-sqs-3")
    with runner as r:
        item = r.run(value, session, 60)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"nobeat": "States.HeartbeatTimeout"}
    token = json.loads(receive(url)[0]["Body"])["token"]
    with pytest.raises(CallbackError) as e:
        client(tmp_path / "state").send_task_success(token, {"late": True})
    assert e.value.code == "TaskTimedOut"


def test_callback_integration_tasks_in_map_iterations(aws, tmp_path):
    """A Map whose iterations are only an SQS sendMessage.waitForTaskToken Task fans out
    (each iteration waits in its own function) instead of running inline, where no journal
    exists; each iteration's output is its callback's."""
    url = boto3.client("sqs").create_queue(QueueName="mapq")["QueueUrl"]
    ask = {"Type": "Task", "Resource": SEND, "End": True,
           "Parameters": {"QueueUrl": url, "MessageBody": {"x.$": "$.x", "token.$": "$$.Task.Token"}}}
    d = {"StartAt": "M", "States": {
        "M": {"Type": "Map", "ItemsPath": "$.items", "Next": "Echo",
              "Iterator": {"StartAt": "Ask", "States": {"Ask": ask}}},
        "Echo": {"Type": "Task", "Resource": ECHO_ARN, "End": True}}}
    runner, session, value = start(tmp_path, d, {"items": [{"x": 1}, {"x": 2}]}, "cb-map")
    with runner as r:
        r.start(value, session)
        msgs: list[dict] = []
        while len(msgs) < 2:
            msgs += receive(url)
        for m in msgs:
            body = json.loads(m["Body"])
            client(tmp_path / "state").send_task_success(body["token"], {"y": body["x"] * 10})
        item = r.platform.wait_result(session, 60)
        r.platform.wait_drained(session)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"echo": [{"y": 10}, {"y": 20}]}


COUNT = """import os


def handler(event, context):
    path = os.path.join(event['dir'], 'runs')
    with open(path, 'a') as f:
        f.write('x')
    with open(path) as f:
        return {'n': len(f.read())}
"""


def test_resuming_a_callback_task_does_not_rerun_the_states_before_it(aws, tmp_path):
    """Count (Lambda: appends to a file, returns its run count) -> Note (request-response
    sqs:sendMessage) -> Ask (sqs:sendMessage.waitForTaskToken): the callback Task is a
    compiled function of its own, so resuming it after SendTaskSuccess replays neither
    Count's user code nor Note's request (each ran once) and the output carries the value
    that built both requests."""
    sqs = boto3.client("sqs")
    notes = sqs.create_queue(QueueName="notes")["QueueUrl"]
    url = sqs.create_queue(QueueName="approvals4")["QueueUrl"]
    d = {"StartAt": "Count", "States": {
        "Count": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Count",
                  "ResultPath": "$.count", "Next": "Note"},
        "Note": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl": notes, "MessageBody": {"n.$": "$.count.n"}},
                 "ResultPath": None, "Next": "Ask"},
        "Ask": {"Type": "Task", "Resource": SEND, "ResultPath": "$.reply", "End": True,
                "Parameters": {"QueueUrl": url,
                               "MessageBody": {"n.$": "$.count.n", "token.$": "$$.Task.Token"}}}}}
    runs = tmp_path / "runs-dir"
    runs.mkdir()
    root = make_sfn_app(tmp_path / "app", d, {"Count": COUNT}, "cbonce")
    value = {"dir": str(runs)}
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        r.start(value, "cb-once")
        body = json.loads(receive(url)[0]["Body"])
        assert body["n"] == 1
        client(tmp_path / "state").send_task_success(body["token"], {"ok": True})
        item = r.platform.wait_result("cb-once", 60)
        r.platform.wait_drained("cb-once")
    assert item["status"] == "SUCCEEDED", item
    assert (runs / "runs").read_text() == "x", "Count's user code ran again on resume"
    assert item["v"] == {"dir": str(runs), "count": {"n": 1}, "reply": {"ok": True}}
    sent = sqs.receive_message(QueueUrl=notes, MaxNumberOfMessages=10, WaitTimeSeconds=1).get("Messages", [])
    assert [json.loads(m["Body"]) for m in sent] == [{"n": 1}], "Note's request was sent again on resume"


def test_a_loop_through_a_callback_task_waits_again_with_a_new_token(aws, tmp_path):
    """Ask (its own compiled function) -> Choice back to Ask: the second visit is a new
    invocation of Ask's function with a new token; the second callback's output ends it."""
    url = boto3.client("sqs").create_queue(QueueName="loopq")["QueueUrl"]
    d = {"StartAt": "Ask", "States": {
        "Ask": {"Type": "Task", "Resource": SEND, "ResultPath": "$.reply", "Next": "Again",
                "Parameters": {"QueueUrl": url, "MessageBody": {"token.$": "$$.Task.Token"}}},
        "Again": {"Type": "Choice", "Default": "Done", "Choices": [
            {"Variable": "$.reply.again", "BooleanEquals": True, "Next": "Ask"}]},
        "Done": {"Type": "Pass", "End": True}}}
    runner, session, value = start(tmp_path, d, {}, "cb-loop")
    with runner as r:
        r.start(value, session)
        first = json.loads(receive(url)[0]["Body"])["token"]
        client(tmp_path / "state").send_task_success(first, {"again": True})
        tokens = [json.loads(m["Body"])["token"] for m in receive(url)]
        # the send is at-least-once: a redelivered Ask (a slow worker under load) sends the
        # same token again, never a different one
        second = sorted({t for t in tokens if t != first})
        assert len(second) == 1, tokens
        client(tmp_path / "state").send_task_success(second[0], {"again": False})
        item = r.platform.wait_result(session, 60)
        r.platform.wait_drained(session)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"reply": {"again": False}}


def test_serve_send_task_success_completes_an_sqs_callback_task(aws, tmp_path):
    """On `unumctl serve`, boto3's stepfunctions client: StartExecution of a machine whose
    SQS sendMessage.waitForTaskToken Task waits, SendTaskSuccess with the token read from the
    queue -> DescribeExecution SUCCEEDED with the callback's output."""
    from tests.unumctl.serve.test_sfn_api import ECHO as SERVE_ECHO, ROLE, machine_arn, served, wait_status
    url = boto3.client("sqs").create_queue(QueueName="served")["QueueUrl"]
    fns = make_sfn_app(tmp_path / "fns", {"StartAt": "Echo", "States": {"Echo": {
        "Type": "Task", "Resource": ECHO_ARN, "End": True}}}, {"Echo": SERVE_ECHO}, name="fns")
    ask = {"StartAt": "Ask", "States": {"Ask": {
        "Type": "Task", "Resource": SEND, "ResultPath": "$.reply", "End": True,
        "Parameters": {"QueueUrl": url, "MessageBody": {"token.$": "$$.Task.Token"}}}}}
    with served([fns], tmp_path / "state") as (svc, sfn):
        sfn.create_state_machine(name="ask", definition=json.dumps(ask), roleArn=ROLE)
        run_ = sfn.start_execution(stateMachineArn=machine_arn("ask"), name="w1", input='{"order": 3}')
        token = json.loads(receive(url)[0]["Body"])["token"]
        assert sfn.describe_execution(executionArn=run_["executionArn"])["status"] == "RUNNING"
        sfn.send_task_success(taskToken=token, output=json.dumps({"ok": True}))
        d = wait_status(sfn, run_["executionArn"])
    assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", {"order": 3, "reply": {"ok": True}})
