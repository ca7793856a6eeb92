"""GetExecutionHistory's events checked against the Step Functions API model, field by
field: botocore's `stepfunctions` service model is the API reference in machine-readable
form (HistoryEvent and its `<type>EventDetails` shapes). Every event of a run with a
retried Lambda Task, a mocked service integration Task, a Choice, a Map and a Parallel is
read as raw JSON from `serve` on 127.0.0.1 (boto3 drops members the model lacks, so it
could not see a wrong one): each details member is the one HistoryEvent names for its type,
each field is one its shape has, required fields are there, `input`/`output` come with
`inputDetails`/`outputDetails` {truncated: false} (HistoryEventExecutionDataDetails:
"Always false for API calls"), and TaskSucceeded / LambdaFunctionSucceeded `output` is
the resource's full response (TaskSucceededEventDetails: "The full JSON response from a
resource"), not the state output after ResultPath. The checker is shown to catch a
misnamed field, an unknown details member and a missing outputDetails."""

from __future__ import annotations

import json
import re
import urllib.request

import botocore.session
import pytest

from tests.unumctl.serve.test_sfn_api import ROLE, machine_arn, served, wait_status
from unumctl_testing.apps import make_sfn_app, sfn_task

LAMBDA = "arn:aws:lambda:us-east-1:000000000000:function:"
FLAKY = ("import os\n"
         "def handler(event, context):\n"
         "    if not os.path.exists(event['marker']):\n"
         "        open(event['marker'], 'w').close()\n"
         "        raise ValueError('first attempt fails')\n"
         "    return {'total': 3}\n")
ECHO = "def handler(event, context):\n    return event\n"


def model_problems(events: list[dict]) -> list[str]:
    """One line per way `events` (raw GetExecutionHistory JSON) departs from botocore's
    HistoryEvent model: an unknown type, a details member other than the type's, a field
    its shape lacks, a required field missing, input/output without their *Details."""
    model = botocore.session.get_session().get_service_model("stepfunctions")
    he = model.shape_for("HistoryEvent")
    types = set(he.members["type"].enum)
    problems = []
    for e in events:
        t = e.get("type")
        if t not in types:
            problems.append(f"event {e.get('id')}: unknown type {t!r}")
            continue
        for k in ("id", "timestamp", "type"):
            if k not in e:
                problems.append(f"event {e.get('id')} {t}: no {k}")
        for key, value in e.items():
            if key in ("id", "timestamp", "type", "previousEventId"):
                continue
            if key not in he.members:
                problems.append(f"event {e['id']} {t}: {key} is not a HistoryEvent member")
                continue
            if key not in details_keys(t, he):
                problems.append(f"event {e['id']} {t}: {key} does not belong to type {t}")
            shape = he.members[key]
            for field in value:
                if field not in shape.members:
                    problems.append(f"event {e['id']} {t}: {key}.{field} is not in {shape.name}")
            for field in shape.required_members:
                if field not in value:
                    problems.append(f"event {e['id']} {t}: {key}.{field} (required) missing")
            for field in ("input", "output"):
                if field in value and f"{field}Details" in shape.members and \
                        value.get(f"{field}Details") != {"truncated": False}:
                    problems.append(f"event {e['id']} {t}: {key}.{field}Details missing")
    return problems


def details_keys(type_: str, he) -> set[str]:
    """The details members a HistoryEvent of `type_` may carry: `<type>EventDetails` in
    camelCase, and the shared stateEntered / stateExited ones of `*StateEntered` /
    `*StateExited`."""
    out = {type_[:1].lower() + type_[1:] + "EventDetails"}
    if type_.endswith("StateEntered"):
        out.add("stateEnteredEventDetails")
    if type_.endswith("StateExited"):
        out.add("stateExitedEventDetails")
    return out & set(he.members)


def raw_history(sfn, arn: str) -> list[dict]:
    """GetExecutionHistory as the raw JSON serve answers (not through boto3's parser)."""
    req = urllib.request.Request(sfn.meta.endpoint_url + "/", method="POST",
                                 data=json.dumps({"executionArn": arn, "maxResults": 1000}).encode(),
                                 headers={"Content-Type": "application/x-amz-json-1.0",
                                          "X-Amz-Target": "AWSStepFunctions.GetExecutionHistory"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())["events"]


@pytest.mark.slow
def test_every_event_has_the_api_models_shape_and_tasks_record_the_resources_response(tmp_path, monkeypatch):
    mock = tmp_path / "MockConfigFile.json"
    mock.write_text(json.dumps({
        "StateMachines": {"shapes": {"TestCases": {"T": {"Record": "Put"}}}},
        "MockedResponses": {"Put": {"0": {"Return": {"SdkHttpMetadata": {"HttpStatusCode": 200}}}}}}))
    monkeypatch.setenv("UNUM_SFN_MOCK_CONFIG", str(mock))
    monkeypatch.setenv("UNUM_SFN_TEST_CASE", "T")
    fns = make_sfn_app(tmp_path / "fns", {"StartAt": "E", "States": {"E": sfn_task("Echo")}},
                       {"Echo": ECHO, "Flaky": FLAKY}, name="fns")
    flow = {"StartAt": "Validate", "States": {
        "Validate": {"Type": "Task", "Resource": LAMBDA + "Flaky", "ResultPath": "$.checked", "Next": "Route",
                     "Retry": [{"ErrorEquals": ["ValueError"], "IntervalSeconds": 1, "MaxAttempts": 2}]},
        "Route": {"Type": "Choice", "Default": "Each",
                  "Choices": [{"Variable": "$.checked.total", "NumericEquals": 0, "Next": "Done"}]},
        "Each": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.each", "Next": "Both",
                 "ItemProcessor": {"StartAt": "One", "States": {"One": {"Type": "Pass", "End": True}}}},
        "Both": {"Type": "Parallel", "ResultPath": "$.both", "Next": "Done", "Branches": [
            {"StartAt": "Ship", "States": {"Ship": {"Type": "Task", "Resource": LAMBDA + "Echo",
                                                    "Parameters": {"id.$": "$.id"}, "End": True}}},
            {"StartAt": "Record", "States": {"Record": {
                "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "ResultPath": "$.put", "End": True,
                "Parameters": {"TableName": "orders", "Item": {"pk": {"S.$": "$.id"}}}}}}]},
        "Done": {"Type": "Succeed"}}}
    with served([fns], tmp_path / "state") as (_, sfn):
        sfn.create_state_machine(name="shapes", definition=json.dumps(flow), roleArn=ROLE)
        run = sfn.start_execution(stateMachineArn=machine_arn("shapes"), name="e1", input=json.dumps(
            {"id": "o-1", "items": [1, 2], "marker": str(tmp_path / "marker")}))
        desc = wait_status(sfn, run["executionArn"])
        events = raw_history(sfn, run["executionArn"])
    assert desc["status"] == "SUCCEEDED", desc
    assert model_problems(events) == []
    types = [e["type"] for e in events]
    assert types.count("LambdaFunctionFailed") == 1 and "MapStateStarted" in types and "TaskSucceeded" in types
    lam = [json.loads(e["lambdaFunctionSucceededEventDetails"]["output"]) for e in events
           if e["type"] == "LambdaFunctionSucceeded"]
    assert {"total": 3} in lam  # Validate's result, not its state output after ResultPath
    task = next(e["taskSucceededEventDetails"] for e in events if e["type"] == "TaskSucceeded")
    assert json.loads(task["output"]) == {"SdkHttpMetadata": {"HttpStatusCode": 200}}
    assert task["resourceType"] == "dynamodb" and task["resource"] == "putItem"
    exited = next(e["stateExitedEventDetails"] for e in events
                  if e["type"] == "TaskStateExited" and e["stateExitedEventDetails"]["name"] == "Record")
    assert json.loads(exited["output"])["put"] == {"SdkHttpMetadata": {"HttpStatusCode": 200}}
    started = events[0]["executionStartedEventDetails"]
    assert started["inputDetails"] == {"truncated": False} and started["roleArn"] == ROLE


GOOD = [{"id": 1, "timestamp": 0, "type": "ExecutionStarted", "previousEventId": 0,
         "executionStartedEventDetails": {"input": "{}", "inputDetails": {"truncated": False}, "roleArn": ROLE}},
        {"id": 2, "timestamp": 0, "type": "TaskSucceeded", "previousEventId": 1,
         "taskSucceededEventDetails": {"resourceType": "dynamodb", "resource": "putItem", "output": "{}",
                                       "outputDetails": {"truncated": False}}}]


@pytest.mark.parametrize("fault, message", [
    (lambda ev: ev[1]["taskSucceededEventDetails"].__setitem__("parameters", "{}"),
     r"taskSucceededEventDetails.parameters is not in TaskSucceededEventDetails"),
    (lambda ev: ev[1].__setitem__("taskScheduledEventDetails", ev[1].pop("taskSucceededEventDetails")),
     r"taskScheduledEventDetails does not belong to type TaskSucceeded"),
    (lambda ev: ev[1]["taskSucceededEventDetails"].pop("outputDetails"), r"outputDetails missing"),
    (lambda ev: ev[1]["taskSucceededEventDetails"].pop("resourceType"), r"resourceType \(required\) missing"),
    (lambda ev: ev[0].__setitem__("type", "ExecutionBegan"), r"unknown type 'ExecutionBegan'"),
])
def test_the_model_checker_catches_an_injected_fault(fault, message):
    assert model_problems(json.loads(json.dumps(GOOD))) == []
    events = json.loads(json.dumps(GOOD))
    fault(events)
    problems = model_problems(events)
    assert any(re.search(message, p) for p in problems), problems
