"""User code that changes its input in place (issue 33, item 5 of "What to build": handlers
that mutate their input): the engine hands every call of user code its own copy of the
input (runtime/engine.py `_call_user`, runtime.storage.json_copy), as a platform that
decodes the payload for each attempt would. Before, the same object went to every call: an
IR `Retry` attempt got the input as the failed attempt left it, and in a compiled Step
Functions Task the Lambda's changes reached the state's output (ResultPath merges the
result into the state's input) and the next Retry attempt, which AWS never shows (each
Lambda invocation decodes its own event)."""

from __future__ import annotations

import json

from runtime.engine import Engine
from runtime.ir import load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.wrappers import make_wrapper
from unumctl.asl import compile_definition, resolver
from unumctl.asl.compiler import to_workflow

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


class Recorder(Invoker):  # the invoker port, recording the continuations
    def __init__(self):
        self.calls: list = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


def mutating(seen: list, fail_first: bool = True):
    """A handler that records its input, then appends to a list and sets a key in it, and
    raises on its first call."""
    def handler(event, ctx):
        seen.append(json.loads(json.dumps(event)))
        event["log"].append(len(seen))
        event["leak"] = True
        if fail_first and len(seen) == 1:
            raise ValueError("first attempt")
        return {"saw": seen[-1]}
    return handler


def test_an_ir_retry_attempt_gets_the_input_not_the_failed_attempts_changes(tmp_path):
    ir = load_function({"Name": "A", "Retry": {"MaxAttempts": 1, "IntervalSeconds": 0},
                        "Next": {"Name": "B"}})
    seen: list = []
    inv = Recorder()
    eng = Engine(ir, mutating(seen), SqliteDatastore(tmp_path / "db"), inv, FileBlobStore(tmp_path / "b"),
                 sleep=lambda s: None)
    out = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": {"log": []}}})
    assert out.status == "ran"
    assert seen == [{"log": []}, {"log": []}]  # before: the 2nd attempt got {"log": [1], "leak": true}
    [(fn, payload)] = inv.calls
    assert fn == "B" and payload["Data"]["Value"] == {"saw": {"log": []}}


def _compiled_task(tmp_path, handler, **task):
    machine = {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": ARN + "M", "End": True, **task}}}
    comp = compile_definition(machine, resolver({"M": {}}), ["M"], source="t", machine="t")
    [ir] = to_workflow(comp, "t").functions.values()
    ds = SqliteDatastore(tmp_path / "db")
    eng = Engine(ir, handler, ds, Recorder(), FileBlobStore(tmp_path / "b"), sleep=lambda s: None,
                 wrapper=make_wrapper(ir.wrapper))
    out = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": {"job": 1, "log": []}}})
    return out, ds.get("s1", "result")


def test_a_lambdas_changes_to_its_event_do_not_reach_the_states_output(tmp_path):
    """ResultPath `$.r` places the result into the state's input: the input as the state
    received it, not as the Lambda left its event."""
    seen: list = []
    out, result = _compiled_task(tmp_path, mutating(seen, fail_first=False), ResultPath="$.r")
    assert out.status == "ran" and result["status"] == "SUCCEEDED"
    assert result["v"] == {"job": 1, "log": [], "r": {"saw": {"job": 1, "log": []}}}


def test_a_step_functions_retry_attempt_gets_the_states_input(tmp_path):
    """A Task's Retry: every attempt's Lambda gets the Task's input (InputPath/Parameters on
    the state's input), not the event the failed attempt changed."""
    seen: list = []
    out, result = _compiled_task(tmp_path, mutating(seen), ResultPath="$.r", Parameters={"log.$": "$.log"},
                                 Retry=[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 1,
                                         "IntervalSeconds": 1}])
    assert out.status == "ran" and result["status"] == "SUCCEEDED", result
    assert seen == [{"log": []}, {"log": []}]
    assert result["v"] == {"job": 1, "log": [], "r": {"saw": {"log": []}}}


class Events:  # the history port (runtime.ports.Events), recording
    level = "full"
    derived_fields = False

    def __init__(self):
        self.events: list = []
        self.started: list = []

    def record(self, events):
        self.events.extend(events)

    def session_started(self, session, function, start, input):
        self.started.append(input)

    def result_fields(self, session, function, start, input):
        return None

    def session_ended(self, session, status, end, result):
        pass


def test_the_history_records_the_input_as_delivered(tmp_path):
    """The execution's recorded `input` (history `full`) and the session's start record are the
    input the execution was given, not what its handler left of it."""
    ir = load_function({"Name": "A", "Next": {"Name": "B"}})
    ev = Events()
    eng = Engine(ir, mutating([], fail_first=False), SqliteDatastore(tmp_path / "db"), Recorder(),
                 FileBlobStore(tmp_path / "b"), events=ev)
    assert eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": {"log": []}}}).status == "ran"
    assert [e["input"] for e in ev.events if "input" in e] == [{"log": []}]
    assert ev.started == [{"log": []}]
