"""Fidelity fixes of issue 9 item 6: bracket-notation keys with escaped quotes and operator
characters in paths, `SecondsPath` must select an integer (AWS's States.Runtime wording),
and `LogType: Tail` on `lambda:invoke` gives `LogResult` (base64 of the last 4 KB of the
function's log) on the local target."""

from __future__ import annotations

import base64
import json
import threading
from pathlib import Path

import pytest
import yaml

from runtime.asl import logtail, paths
from runtime.asl.errors import AslError
from runtime.asl.machine import Machine
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


def machine(definition: dict) -> tuple[Machine, list[float]]:
    clock = [1_700_000_000.0]

    def sleep(s: float) -> None:
        clock[0] += s

    info = {"Id": "e", "Name": "e", "StartTime": "2026-01-01T00:00:00.000Z", "Input": None,
            "StateMachine": {"Id": "sm", "Name": "sm"}}
    return Machine(definition, info, lambda: clock[0], sleep), clock


def run(definition: dict, value, invoke=lambda r, e: e):
    m, clock = machine(definition)
    start = clock[0]
    out = m.run_inline("", definition["StartAt"], value, invoke)
    return out, clock[0] - start


# ---------------------------------------------------------------------------- quoted keys
DATA = {"a'b": 1, 'x"y': 2, "a*b": 3, "a,b": 4, "a..b": 5, "a:b": 6, "a]b": 7, "a[0]": 8}


@pytest.mark.parametrize("path,want", [
    ("$['a\\'b']", 1), ('$["x\\"y"]', 2), ("$['a*b']", 3), ("$['a,b']", 4), ("$['a..b']", 5),
    ("$['a:b']", 6), ("$['a]b']", 7), ("$['a[0]']", 8)])
def test_quoted_bracket_keys_select_one_value(path, want):
    # a quoted key is a name: '*', ',', '..', ':' inside it do not make the path a
    # wildcard, union, descendant or slice (which would return a list)
    assert paths.read(path, DATA) == want
    assert paths.write(path, {}, "v") == {json.loads(json.dumps(_key(path))): "v"}


def _key(path: str) -> str:
    body = path[3:-2]
    return body.replace("\\'", "'").replace('\\"', '"')


def test_quoted_keys_in_a_state_machine():
    sm = {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Parameters": {"v.$": "$['a\\'b']", "w.$": "$['a*b']",
                                             "f.$": "States.Format('{}-{}', $['x\\\"y'], $['a,b'])"},
              "ResultPath": "$['r\\'s']", "Next": "C"},
        "C": {"Type": "Choice", "Choices": [
            {"Variable": "$['r\\'s'].w", "NumericEquals": 3, "Next": "Yes"}], "Default": "No"},
        "Yes": {"Type": "Pass", "OutputPath": "$['r\\'s']", "End": True},
        "No": {"Type": "Fail", "Error": "Wrong"}}}
    from unumctl.asl.validate import validate
    validate(sm, "sm.json")
    out, _ = run(sm, DATA)
    assert out == {"v": 1, "w": 3, "f": "2-4"}


# ---------------------------------------------------------------------------- SecondsPath
def wait_machine() -> dict:
    return {"StartAt": "W", "States": {"W": {"Type": "Wait", "SecondsPath": "$.s", "End": True}}}


def test_seconds_path_with_an_integer_waits_that_long():
    out, waited = run(wait_machine(), {"s": 7})
    assert out == {"s": 7} and waited == 7


@pytest.mark.parametrize("value,wording", [
    (1.5, "cannot be parsed as a long value: $.s == 1.5"),
    (-1.5, "cannot be parsed as a long value: $.s == -1.5"),
    ("10", 'cannot be parsed as a long value: $.s == "10"'),
    (True, "cannot be parsed as a long value: $.s == true"),
    (None, "cannot be parsed as a long value: $.s == null"),
    (-1, "references a negative value: $.s == -1")])
def test_seconds_path_must_select_a_non_negative_integer(value, wording):
    with pytest.raises(AslError) as info:
        run(wait_machine(), {"s": value})
    assert info.value.error == "States.Runtime"
    assert info.value.cause.startswith("The SecondsPath parameter " + wording.split(":")[0])
    assert wording in info.value.cause


# ---------------------------------------------------------------------------- LogType Tail
def test_capture_is_per_thread_and_keeps_the_last_4kb(capsys):
    results: dict[str, str] = {}
    barrier = threading.Barrier(2)

    def work(tag: str, n: int) -> None:
        with logtail.capture() as cap:
            barrier.wait()
            for i in range(n):
                print(f"{tag} line {i}")
        results[tag] = cap.text()
        results[tag + "-log"] = base64.b64decode(cap.result("req-" + tag)).decode()

    threads = [threading.Thread(target=work, args=("one", 3)), threading.Thread(target=work, args=("two", 400))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results["one"] == "one line 0\none line 1\none line 2\n"
    assert "two" not in results["one"] and "one" not in results["two"]
    small = results["one-log"]
    assert small.startswith("START RequestId: req-one Version: $LATEST\none line 0\n")
    assert "\nEND RequestId: req-one\nREPORT RequestId: req-one\tDuration: " in small
    big = results["two-log"]
    assert len(big.encode()) == logtail.TAIL_BYTES and "two line 399\nEND RequestId: req-two" in big
    assert "START" not in big  # the head fell out of the 4 KB tail
    assert "one line 2" in capsys.readouterr().out  # output still reaches the real stream


TALKER = """\
import logging


def handler(event, context):
    print("charging", event["amount"])
    logging.warning("card ends in %s", event["card"])
    return {"charged": event["amount"]}
"""


def test_log_type_tail_gives_log_result_on_the_local_target(tmp_path: Path):
    root = tmp_path / "app"
    (root / "functions" / "talker").mkdir(parents=True)
    (root / "functions" / "talker" / "app.py").write_text(TALKER)
    invoke = {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke"}
    sm = {"StartAt": "Tail", "States": {
        "Tail": {**invoke, "Parameters": {"FunctionName": ARN + "Talker", "Payload.$": "$",
                                          "LogType": "Tail"},
                 "ResultSelector": {"log.$": "$.LogResult", "out.$": "$.Payload"},
                 "ResultPath": "$.tail", "Next": "Plain"},
        "Plain": {**invoke, "Parameters": {"FunctionName": ARN + "Talker",
                                           "Payload": {"amount": 1, "card": "0000"}},
                  "ResultSelector": {"keys.$": "States.JsonToString($)"}, "ResultPath": "$.plain",
                  "End": True}}}
    (root / "statemachine.json").write_text(json.dumps(sm))
    (root / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "tail", "workflow": {"stepfunctions": "statemachine.json"},
        "functions": {"Talker": {"code": "functions/talker"}}}))
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        item = r.run({"amount": 42, "card": "4242"}, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    tail = item["v"]["tail"]
    assert tail["out"] == {"charged": 42}
    log = base64.b64decode(tail["log"]).decode()
    lines = log.splitlines()
    assert lines[0].startswith("START RequestId: ") and lines[0].endswith(" Version: $LATEST")
    assert "charging 42" in lines  # print()
    assert any(ln.endswith("card ends in 4242") for ln in lines)  # logging (via stderr)
    assert lines[-2].startswith("END RequestId: ") and lines[-1].startswith("REPORT RequestId: ")
    assert "LogResult" not in json.loads(item["v"]["plain"]["keys"])  # only with LogType Tail
