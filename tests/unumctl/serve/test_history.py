"""A history in states (issue 24 item 6): which state ran, in which compiled function, with
which input and output (runtime/asl/steps.py), and GetExecutionHistory's state-level events
on `unumctl serve` (unumctl/serve/history.py) as boto3's `stepfunctions` client reads them."""

from __future__ import annotations

import json

import pytest

from runtime.asl.machine import Machine
from runtime.asl.steps import StepLog, expand
from tests.unumctl.serve.test_serve import LAMBDA, ROLE, Serve, exec_arn, fns, short_tmp, wait_status  # noqa: F401

CHOICE_MAP_TASK = {"StartAt": "Route", "States": {
    "Route": {"Type": "Choice", "Choices": [
        {"And": [{"Variable": "$.fail", "IsPresent": True}, {"Variable": "$.fail", "BooleanEquals": True}],
         "Next": "Broken"},
        {"Variable": "$.items[0]", "IsPresent": True, "Next": "Each"}], "Default": "Nothing"},
    "Nothing": {"Type": "Pass", "Result": "none", "End": True},
    "Broken": {"Type": "Task", "Resource": LAMBDA + "Echo", "Parameters": {"fail": True}, "End": True},
    "Each": {"Type": "Map", "ItemsPath": "$.items", "End": True, "ItemProcessor": {
        "StartAt": "Work", "States": {
            "Work": {"Type": "Task", "Resource": LAMBDA + "Echo", "Next": "Done"},
            "Done": {"Type": "Pass", "End": True}}}}}}


def _machine(definition):
    m = Machine(definition, {"Id": "x", "Name": "x", "StartTime": "t", "Input": None,
                             "StateMachine": {"Id": "m", "Name": "m"}}, lambda: 100.0, lambda s: None)
    m.steps = StepLog(m.clock)
    return m


def test_walk_records_inline_states_and_the_choice_rule_that_matched():
    m = _machine(CHOICE_MAP_TASK)
    stop = m.walk("", "Route", {"items": [1], "fail": False})
    assert (stop.kind, stop.name) == ("Map", "Each")
    [route] = m.steps.steps
    assert route == {"state": "Route", "type": "Choice", "t": 100.0, "in": {"items": [1], "fail": False},
                     "out": {"items": [1], "fail": False}, "next": "Each", "rule": 1}
    m = _machine(CHOICE_MAP_TASK)
    assert m.walk("", "Route", {"fail": False}).kind == "End"
    full = m.steps.steps
    assert [s["rule"] for s in full if "rule" in s] == ["Default"] and full[0]["next"] == "Nothing"
    assert full[1] == {"state": "Nothing", "type": "Pass", "t": 100.0, "in": {"fail": False}, "out": "none"}
    # recorded compactly: the values the event has, or the previous step's, left out ...
    rec = {"t0": 99.5, "input": {"fail": False}, "output": "none"}
    small = m.steps.compact(rec)
    assert small == [{"state": "Route", "type": "Choice", "out": {"fail": False}, "next": "Nothing",
                      "rule": "Default", "ms": 500},
                     {"state": "Nothing", "type": "Pass", "ms": 500}]
    # ... and put back by the reader
    assert expand(small, t0=99.5, input=rec["input"], output=rec["output"]) == \
        [{**s, "scope": ""} for s in full]
    # an envelope's AslInput counts as the value; another value is kept
    env = {"t0": 100.0, "input": {"AslState": "Route", "AslInput": {"fail": False}}, "output": "other"}
    small = m.steps.compact(env)
    assert "in" not in small[0] and small[1]["out"] == "none"
    assert expand(small, t0=100.0, **{k: env[k] for k in ("input", "output")})[0]["in"] == {"fail": False}


def test_run_task_records_the_function_and_an_uncaught_error():
    from runtime.asl.errors import AslError
    m = _machine(CHOICE_MAP_TASK)

    def boom(resource, event):
        raise AslError("ValueError", "asked to fail")
    with pytest.raises(AslError):
        m.run_task("", "Broken", {"x": 1}, boom)
    [step] = m.steps.steps
    assert step["resource"] == LAMBDA + "Echo" and step["error"] == "ValueError" and "out" not in step
    m = _machine(CHOICE_MAP_TASK)
    assert m.run_task("/Each", "Work", 7, lambda r, e: e + 1) == ("Done", 8)
    assert m.steps.steps[0]["scope"] == "/Each" and m.steps.steps[0]["out"] == 8


def test_large_values_are_left_out_of_the_steps():
    m = _machine(CHOICE_MAP_TASK)
    m.walk("", "Route", {"fail": False, "pad": "x" * 5000})
    assert m.steps.steps[0]["in"] == {"omitted": True, "bytes": 5023}


def _types(events):
    return [e["type"] for e in events]


def test_boto3_sees_state_level_history_for_choice_map_task(fns, tmp_path, short_tmp):  # noqa: F811
    srv = Serve([fns], tmp_path / "serve", short_tmp, tmp_path / "serve.log")
    sfn = srv.sfn
    try:
        arn = sfn.create_state_machine(name="cmt", definition=json.dumps(CHOICE_MAP_TASK),
                                       roleArn=ROLE)["stateMachineArn"]
        sfn.start_execution(stateMachineArn=arn, name="ok", input=json.dumps({"items": [{"a": 1}, {"a": 2}]}))
        sfn.start_execution(stateMachineArn=arn, name="bad", input=json.dumps({"fail": True}))
        assert wait_status(sfn, exec_arn("cmt", "ok"))["status"] == "SUCCEEDED"
        assert wait_status(sfn, exec_arn("cmt", "bad"))["status"] == "FAILED"
        events = sfn.get_execution_history(executionArn=exec_arn("cmt", "ok"), maxResults=1000)["events"]
        failed = sfn.get_execution_history(executionArn=exec_arn("cmt", "bad"))["events"]
    finally:
        srv.stop()
    types = _types(events)
    assert [e["id"] for e in events] == list(range(1, len(events) + 1))
    assert [e["previousEventId"] for e in events] == list(range(0, len(events)))
    assert types[:5] == ["ExecutionStarted", "ChoiceStateEntered", "ChoiceStateExited",
                         "MapStateEntered", "MapStateStarted"]
    assert events[1]["stateEnteredEventDetails"]["name"] == "Route"
    assert json.loads(events[1]["stateEnteredEventDetails"]["input"]) == {"items": [{"a": 1}, {"a": 2}]}
    assert events[4]["mapStateStartedEventDetails"] == {"length": 2}
    starts = [e["mapIterationStartedEventDetails"] for e in events if e["type"] == "MapIterationStarted"]
    assert sorted(d["index"] for d in starts) == [0, 1] and {d["name"] for d in starts} == {"Each"}
    assert types.count("MapIterationSucceeded") == 2
    entered = [e["stateEnteredEventDetails"] for e in events if e["type"] == "TaskStateEntered"]
    assert [d["name"] for d in entered] == ["Work", "Work"]
    assert sorted(json.loads(d["input"])["a"] for d in entered) == [1, 2]
    sched = [e["lambdaFunctionScheduledEventDetails"] for e in events if e["type"] == "LambdaFunctionScheduled"]
    assert [d["resource"] for d in sched] == [LAMBDA + "Echo"] * 2
    assert types.count("PassStateEntered") == 2 and types.count("PassStateExited") == 2
    assert types[-3:] == ["MapStateSucceeded", "MapStateExited", "ExecutionSucceeded"]
    assert json.loads(events[-2]["stateExitedEventDetails"]["output"]) == [{"a": 1}, {"a": 2}]
    assert all(e["timestamp"] >= events[0]["timestamp"] for e in events)
    # the failure: the Task state that failed, and the cause names the user's source file
    ftypes = _types(failed)
    assert ftypes == ["ExecutionStarted", "ChoiceStateEntered", "ChoiceStateExited", "TaskStateEntered",
                      "LambdaFunctionScheduled", "LambdaFunctionStarted", "LambdaFunctionFailed",
                      "ExecutionFailed"], ftypes
    cause = failed[-1]["executionFailedEventDetails"]["cause"]
    assert failed[-1]["executionFailedEventDetails"]["error"] == "ValueError"
    assert json.loads(cause)["stackTrace"][-1].startswith(
        f'  File "{fns / "functions" / "echo" / "app.py"}", line 6'), cause


def test_history_text_shows_states_first_and_the_compiled_function_as_detail():
    from unumctl.observe.reader import with_states
    from unumctl.observe.render import history_text
    m = _machine(CHOICE_MAP_TASK)
    m.walk("", "Route", {"items": [1, 2], "fail": False})
    m.fan_started("", "Each", {"items": [1, 2], "fail": False}, 2)
    ev = {"kind": "ran", "session": "s", "instance": "Start", "function": "Start", "attempt": 1,
          "t0": 99.9, "t1": 100.2, "input": {"items": [1, 2], "fail": False}}
    ev["states"] = m.steps.compact(ev)
    lines = history_text(with_states([ev])).splitlines()
    assert "Choice" in lines[0] and "Route" in lines[0] and "rule #1 -> Each" in lines[0]
    assert "in {\"items\": [1, 2]" in lines[0]
    assert "Map start" in lines[1] and "2 branches" in lines[1]
    assert lines[2].split()[:3] == ["in", "+", "0.000s"] and "ran" in lines[2] and "Start" in lines[2]


def test_states_survive_the_aws_log_line():
    """On AWS the event is one CloudWatch line (runtime/aws/history.py event_line, t0 rounded
    to the microsecond): the steps read back from it expand to what the machine recorded."""
    from runtime.aws.history import EVENT_MARKER, event_line
    from unumctl.observe.reader import with_states
    m = _machine(CHOICE_MAP_TASK)
    m.walk("", "Route", {"fail": False})
    ev = {"kind": "ran", "session": "s", "instance": "Start", "function": "Start", "t0": 99.1234567,
          "t1": 100.5, "input": {"fail": False}, "output": "none"}
    ev["states"] = m.steps.compact(ev)
    back = json.loads(event_line(ev))
    back.pop(EVENT_MARKER)
    assert with_states([back])[0]["states"] == expand(m.steps.steps)


def test_aws_events_of_an_integration_task_and_a_caught_error():
    """unumctl/serve/history.py on hand-written steps: a service-integration Task is
    TaskScheduled/TaskStarted/TaskSucceeded (resourceType and resource from its ARN), a
    Lambda Task whose error a Catch took is LambdaFunctionFailed, then TaskStateExited."""
    from unumctl.serve.history import sfn_history_events
    steps = [{"state": "Send", "type": "Task", "t": 10.0, "in": {"q": 1},
              "resource": "arn:aws:states:::sqs:sendMessage", "out": {"MessageId": "m"}, "next": "Call"},
             {"state": "Call", "type": "Task", "t": 10.5, "resource": "Fn", "error": "Boom", "caught": True,
              "out": {"err": "Boom"}}]
    ev = {"kind": "ran", "session": "s", "instance": "Send", "function": "Send", "t0": 9.9, "t1": 11.0,
          "states": steps}
    out = sfn_history_events({"start": 9.0, "status": "SUCCEEDED", "end": 11.0, "input": {}, "output": {}},
                     [ev], "arn:aws:iam::000000000000:role/unum")
    assert [e["type"] for e in out] == [
        "ExecutionStarted", "TaskStateEntered", "TaskScheduled", "TaskStarted", "TaskSucceeded",
        "TaskStateExited", "TaskStateEntered", "LambdaFunctionScheduled", "LambdaFunctionStarted",
        "LambdaFunctionFailed", "TaskStateExited", "ExecutionSucceeded"]
    assert out[2]["taskScheduledEventDetails"]["resourceType"] == "sqs"
    assert out[2]["taskScheduledEventDetails"]["resource"] == "sendMessage"
    assert json.loads(out[4]["taskSucceededEventDetails"]["output"]) == {"MessageId": "m"}
    assert out[7]["lambdaFunctionScheduledEventDetails"]["resource"] == \
        "arn:aws:lambda:us-east-1:000000000000:function:Fn"
    assert out[9]["lambdaFunctionFailedEventDetails"] == {"error": "Boom"}
    assert json.loads(out[10]["stateExitedEventDetails"]["output"]) == {"err": "Boom"}
    assert [e["timestamp"] for e in out[1:5]] == [10.0, 10.0, 10.0, 10.5]
