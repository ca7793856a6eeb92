"""Step Functions front-end: state machines of the shapes named in the issue compile and
run on the local target with correct results; validation errors are one line naming the
state and the field; Lambda-style errors and Fail states fail the session as AWS reports."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from unumctl_testing.apps import LAMBDA_ARN as ARN
from unumctl_testing.apps import make_sfn_app as write_sfn_app
from unumctl_testing.apps import sfn_task as task
from unumctl.asl import compile_definition, resolver
from unumctl.local import LocalRunner
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

HANDLERS = {
    "Step": "def handler(event, context):\n    return event + [len(event)]\n",
    "Split": "def handler(event, context):\n    return [{'n': i} for i in range(event['parts'])]\n",
    "Square": "def handler(event, context):\n    return event['n'] * event['n']\n",
    "Inc": "def handler(event, context):\n    return event + 1 if isinstance(event, int) else event\n",
    "Total": "def handler(event, context):\n    return {'total': sum(event if isinstance(event, list) else event['xs'])}\n",
    "Pair": "def handler(event, context):\n    return [[event[i], event[i + 1]] for i in range(0, len(event) - 1, 2)]\n",
    "Vpxenc": "def handler(event, context):\n    return {'chunk': event['n'], 'enc': 'vpx%d' % event['n']}\n",
    "Xcdec": "def handler(event, context):\n    return {'chunk': event['chunk'], 'state': event['enc'] + '>dec'}\n",
    "Group": textwrap.dedent("""\
        def handler(event, context):
            return [{'prev': event[i - 1]['state'] if i else None, 'cur': event[i]} for i in range(len(event))]
        """),
    "Reencode": "def handler(event, context):\n    return '%s|%s' % (event['prev'], event['cur']['state'])\n",
    "Fold": "def handler(event, context):\n    return {'video': ' + '.join(event), 'chunks': len(event)}\n",
    "Boom": textwrap.dedent("""\
        class CustomError(Exception):
            pass

        def handler(event, context):
            raise CustomError('it broke: %s' % event)
        """),
}


def make_sfn_app(root: Path, machine: dict, fns: list[str], fmt: str = "json") -> Path:
    return write_sfn_app(root, machine, {fn: HANDLERS[fn] for fn in fns}, fmt=fmt)


def run(root: Path, value, tmp: Path):
    app = load_app(root)
    with LocalRunner(app, state=tmp / "state", quiet=True) as r:
        item = r.run(value, timeout=60)
        r.platform.wait_idle()
        leftovers = r.platform.ds.dump()
        return item, r.platform.stats["deliveries"], leftovers, app


def check_ok(item, leftovers):
    assert item["status"] == "SUCCEEDED", item
    for names in leftovers.values():
        assert names == ["result"], names


def test_six_step_chain(tmp_path):
    sm = {"StartAt": "S1", "States": {f"S{i}": task("Step", f"S{i + 1}" if i < 6 else None)
                                      for i in range(1, 7)}}
    item, invocations, left, app = run(make_sfn_app(tmp_path / "app", sm, ["Step"]), [], tmp_path)
    check_ok(item, left)
    assert item["v"] == [0, 1, 2, 3, 4, 5]
    assert invocations == 6  # one invocation per Task, nothing else
    assert sorted(app.workflow.functions) == [f"S{i}" for i in range(1, 7)]


def test_map_then_final_step_and_empty_map(tmp_path):
    sm = {"StartAt": "Squares", "States": {
        "Squares": {"Type": "Map", "ItemProcessor": {"StartAt": "Sq", "States": {
            "Sq": task("Square")}}, "ItemSelector": {"n.$": "$$.Map.Item.Value"}, "Next": "Sum"},
        "Sum": task("Total")}}
    root = make_sfn_app(tmp_path / "app", sm, ["Square", "Total"])
    item, invocations, left, _ = run(root, [1, 2, 3], tmp_path)
    check_ok(item, left)
    assert item["v"] == {"total": 14}
    assert invocations == 5  # synthesized start (a machine beginning with a Map) + 3 + Sum
    item, _, left, _ = run(root, [], tmp_path / "empty")
    check_ok(item, left)
    assert item["v"] == {"total": 0}  # an empty Map still reaches the next step with []


def test_map_inside_a_chain_with_result_path(tmp_path):
    sm = {"StartAt": "Split", "States": {
        "Split": task("Split", "Wrap", ResultPath="$.parts"),
        "Wrap": {"Type": "Pass", "Parameters": {"items.$": "$.parts", "keep.$": "$.parts"}, "Next": "Sq"},
        "Sq": {"Type": "Map", "ItemsPath": "$.items", "Iterator": {"StartAt": "S", "States": {
            "S": task("Square", "I"), "I": task("Inc")}}, "ResultPath": "$.xs", "Next": "Sum"},
        "Sum": task("Total", ResultPath="$.sum")}}
    item, invocations, left, _ = run(make_sfn_app(tmp_path / "app", sm, ["Split", "Square", "Inc", "Total"]),
                                     {"parts": 4}, tmp_path)
    check_ok(item, left)
    assert item["v"]["xs"] == [1, 2, 5, 10]
    assert item["v"]["sum"] == {"total": 18}
    assert invocations == 1 + 4 * 2 + 1  # the Pass state costs nothing


def test_parallel_with_a_two_step_branch_then_join(tmp_path):
    sm = {"StartAt": "First", "States": {
        "First": task("Inc", "Both"),
        "Both": {"Type": "Parallel", "Branches": [
            {"StartAt": "B1", "States": {"B1": task("Inc")}},
            {"StartAt": "C1", "States": {"C1": task("Inc", "C2"), "C2": task("Inc")}}],
         "Next": "Join"},
        "Join": task("Total")}}
    item, invocations, left, app = run(make_sfn_app(tmp_path / "app", sm, ["Inc", "Total"]), 1, tmp_path)
    check_ok(item, left)
    assert item["v"] == {"total": 3 + 4}
    assert invocations == 5
    fanin = [e for e in app.workflow.functions["C2"].next if e.type == "Fan-in"][0]
    assert [v.source for v in fanin.values] == ["B1-UnumIndex-0", "C2-UnumIndex-1"]


def test_wordcount_shape_map_task_map_task(tmp_path):
    sm = {"StartAt": "Split", "States": {
        "Split": task("Split", "M1"),
        "M1": {"Type": "Map", "ItemProcessor": {"StartAt": "Sq", "States": {"Sq": task("Square")}},
               "Next": "Pair"},
        "Pair": task("Pair", "M2"),
        "M2": {"Type": "Map", "ItemProcessor": {"StartAt": "T", "States": {"T": task("Total")}},
               "Next": "Sum"},
        "Sum": {"Type": "Task", "Resource": ARN + "Total", "Parameters": {"xs.$": "$[*].total"}, "End": True}}}
    item, invocations, left, _ = run(make_sfn_app(tmp_path / "app", sm, ["Split", "Square", "Pair", "Total"]),
                                     {"parts": 6}, tmp_path)
    check_ok(item, left)
    assert item["v"] == {"total": sum(i * i for i in range(6))}
    assert invocations == 1 + 6 + 1 + 3 + 1


def test_excamera_shape(tmp_path):
    sm = {"StartAt": "Split", "States": {
        "Split": task("Split", "Encode"),
        "Encode": {"Type": "Map", "ItemProcessor": {"StartAt": "Vpxenc", "States": {
            "Vpxenc": task("Vpxenc", "Xcdec"), "Xcdec": task("Xcdec")}}, "Next": "Group"},
        "Group": task("Group", "Reencode"),
        "Reencode": {"Type": "Map", "ItemProcessor": {"StartAt": "Re", "States": {"Re": task("Reencode")}},
                     "Next": "Fold"},
        "Fold": task("Fold")}}
    item, invocations, left, _ = run(make_sfn_app(tmp_path / "app", sm, ["Split", "Vpxenc", "Xcdec", "Group",
                                                                        "Reencode", "Fold"]),
                                     {"parts": 3}, tmp_path)
    check_ok(item, left)
    assert item["v"] == {"video": "None|vpx0>dec + vpx0>dec|vpx1>dec + vpx1>dec|vpx2>dec", "chunks": 3}
    assert invocations == 1 + 3 * 2 + 1 + 3 + 1


def test_nested_map_naming_and_choice_start(tmp_path):
    """A machine that begins with a Choice (synthesized start), a Map inside a Map."""
    sm = {"StartAt": "Route", "States": {
        "Route": {"Type": "Choice", "Choices": [{"Variable": "$.go", "BooleanEquals": True, "Next": "Outer"}],
                  "Default": "Nothing"},
        "Nothing": {"Type": "Succeed"},
        "Outer": {"Type": "Map", "ItemsPath": "$.rows", "ItemProcessor": {"StartAt": "Inner", "States": {
            "Inner": {"Type": "Map", "ItemProcessor": {"StartAt": "Sq", "States": {
                "Sq": {"Type": "Task", "Resource": ARN + "Square", "Parameters": {"n.$": "$"}, "End": True}}},
                "Next": "RowSum"},
            "RowSum": task("Total")}}, "End": True}}}
    root = make_sfn_app(tmp_path / "app", sm, ["Square", "Total"])
    item, _, left, app = run(root, {"go": True, "rows": [[1, 2], [3], []]}, tmp_path)
    check_ok(item, left)
    assert item["v"] == [{"total": 5}, {"total": 9}, {"total": 0}]
    fanin = [e for e in app.workflow.functions["Sq"].next if e.type == "Fan-in"][0]
    assert [v.source for v in fanin.values] == ["Sq-UnumIndex-$1.*"]


def test_errors_fail_and_catch_like_aws(tmp_path):
    sm = {"StartAt": "Try", "States": {
        "Try": task("Boom", "Never", Catch=[{"ErrorEquals": ["ValueError"], "Next": "Never"}]),
        "Never": {"Type": "Pass", "End": True}}}
    item, _, _, _ = run(make_sfn_app(tmp_path / "a", sm, ["Boom"]), {"x": 1}, tmp_path / "a")
    assert item["status"] == "FAILED" and item["error"] == "CustomError"
    cause = json.loads(item["cause"])
    assert cause["errorType"] == "CustomError" and cause["errorMessage"] == "it broke: {'x': 1}"
    assert isinstance(cause["stackTrace"], list)
    sm = {"StartAt": "Try", "States": {
        "Try": task("Boom", "Never", Catch=[{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.err",
                                             "Next": "Stop"}]),
        "Never": {"Type": "Pass", "End": True},
        "Stop": {"Type": "Fail", "ErrorPath": "$.err.Error", "CausePath": "States.Format('caught {}', $.x)"}}}
    item, _, _, _ = run(make_sfn_app(tmp_path / "b", sm, ["Boom"], fmt="yaml"), {"x": 1}, tmp_path / "b")
    assert (item["status"], item["error"], item["cause"]) == ("FAILED", "CustomError", "caught 1")


BASE = {"StartAt": "A", "States": {"A": task("Inc", "B"), "B": {"Type": "Pass", "End": True}}}


def _mut(f):
    sm = json.loads(json.dumps(BASE))
    f(sm["States"])
    return sm


@pytest.mark.parametrize("machine,field", [
    (_mut(lambda s: s["A"].pop("Next")), "States.A.Next"),
    (_mut(lambda s: s["A"].update(Next="Nope")), "States.A.Next"),
    (_mut(lambda s: s.update(Orphan={"Type": "Succeed"})), "States.Orphan"),
    (_mut(lambda s: s.update(B={"Type": "Choice", "Choices": [{"Variable": "$.x", "Next": "A"}]})),
     "States.B.Choices[0]"),
    (_mut(lambda s: s.update(B={"Type": "Choice", "Choices": [{"Variable": "$.x", "NumericEquals": "1",
                                                               "Next": "A"}]})),
     "States.B.Choices[0].NumericEquals"),
    (_mut(lambda s: s.update(B={"Type": "Choice", "Choices": [{"Variable": "x", "IsNull": True,
                                                               "Next": "A"}]})),
     "States.B.Choices[0].Variable"),
    (_mut(lambda s: s["A"].update(InputPath="foo")), "States.A.InputPath"),
    (_mut(lambda s: s["A"].update(ResultPath="$.a[?(")), "States.A.ResultPath"),
    (_mut(lambda s: s["A"].pop("Resource")), "States.A.Resource"),
    (_mut(lambda s: s["A"].update(Resource=ARN + "NoSuchFunction")), "States.A.Resource"),
    (_mut(lambda s: s["A"].update(Resource="arn:aws:states:::lambda:invoke")), "States.A.Parameters.FunctionName"),
])
def test_validation_errors_name_state_and_field(machine, field, tmp_path):
    root = make_sfn_app(tmp_path / "app", machine, ["Inc"])
    with pytest.raises(AppError) as exc:
        load_app(root)
    msg = str(exc.value)
    assert "\n" not in msg
    assert f": {field}" in msg, msg
    assert msg.startswith(str(root / "statemachine.json")), msg


def test_compile_is_deterministic_and_folds_pass_choice_into_tasks():
    sm = {"StartAt": "P0", "States": {
        "P0": {"Type": "Pass", "Result": 1, "Next": "A"},
        "A": task("Inc", "C"),
        "C": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericLessThan": 5, "Next": "A"}],
              "Default": "Done"},
        "Done": {"Type": "Succeed"}}}
    funcs = {"Inc": object()}
    c1 = compile_definition(sm, resolver(funcs), ["Inc"])
    c2 = compile_definition(sm, resolver(funcs), ["Inc"])
    assert json.dumps(c1.nodes, sort_keys=True) == json.dumps(c2.nodes, sort_keys=True)
    assert list(c1.nodes) == ["A"]  # the leading Pass runs in A's ingress; Choice in its egress
    assert c1.start == "A"


def test_a_callback_integration_task_is_a_function_of_its_own():
    """Lambda A -> request-response sqs:sendMessage Note -> sqs:sendMessage.waitForTaskToken
    Ask -> Pass Done: Note is walked in A's egress, Ask gets its own function (no user code)
    that A routes to and that walks Done; where() says so too."""
    from unumctl.asl.compiler import Compiler
    from unumctl.asl.compiler import _where
    sm = {"StartAt": "A", "States": {
        "A": task("Inc", "Note"),
        "Note": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl": "u", "MessageBody.$": "$"}, "ResultPath": None, "Next": "Ask"},
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken",
                "Parameters": {"QueueUrl": "u", "MessageBody.$": "$$.Task.Token"}, "Next": "Done"},
        "Done": {"Type": "Pass", "End": True}}}
    funcs = {"Inc": object()}
    c = compile_definition(sm, resolver(funcs), ["Inc"])
    assert sorted(c.nodes) == ["A", "Ask"]
    assert c.code == {"A": "Inc", "Ask": None}
    assert c.nodes["Ask"]["Wrapper"]["Task"] == "Ask"
    assert [e["Name"] for e in c.nodes["A"]["Next"]] == ["Ask"]
    comp = Compiler(sm, resolver(funcs), ["Inc"])
    comp.compile()
    where = _where(comp)
    assert where[("", "Note")] == [("A", "in")]
    assert where[("", "Ask")] == [("Ask", "in")] and where[("", "Done")] == [("Ask", "in")]


def test_wait_is_a_timer_on_local(tmp_path):
    """A Wait after a Task defers the continuation with a platform timer (a delayed
    invocation of the Wait's function) instead of holding the Task's function."""
    import time
    sm = {"StartAt": "A", "States": {
        "A": task("Inc", "Nap"),
        "Nap": {"Type": "Wait", "SecondsPath": "$.s", "InputPath": "$", "Next": "B"},
        "B": {"Type": "Task", "Resource": ARN + "Inc", "InputPath": "$.n", "End": True}}}
    root = make_sfn_app(tmp_path / "app", sm, ["Inc"])
    app = load_app(root)
    assert app.workflow.functions["A"].next[0].delay is not None
    with LocalRunner(app, quiet=True) as r:
        t0 = time.monotonic()
        item = r.run({"n": 1, "s": 2}, "wait-1", timeout=60)  # SecondsPath selects an integer (AWS)
        took = time.monotonic() - t0
        r.platform.wait_idle()
        deliveries = r.platform.stats["deliveries"]
    assert item["status"] == "SUCCEEDED" and item["v"] == 2
    assert took >= 2.0
    assert deliveries == 3  # A, the Wait's timer function, B
    # the timer, not worker start-up, separates A's end from B's start: B's run begins at
    # least the Wait's 2 s after A's ended (the history's run times)
    from unumctl.observe import LocalHistoryReader
    reader = LocalHistoryReader(app)
    ran = {e["instance"]: e for e in reader.history("wait-1") if e.get("kind") == "ran"}
    reader.close()
    assert ran["B"]["t0"] - ran["A"]["t1"] >= 2.0 - 0.05, ran


def test_catch_on_fanout_map_and_parallel_with_tasks(tmp_path):
    """A branch failure fails the Map/Parallel state; its Catch (on the state's input) runs
    in the join function, which the failing branch invokes directly."""
    sm = {"StartAt": "Each", "States": {
        "Each": {"Type": "Map", "ItemProcessor": {"StartAt": "Sq", "States": {
            "Sq": {"Type": "Task", "Resource": ARN + "Square", "Parameters": {"n.$": "$"}, "Next": "Check"},
            "Check": {"Type": "Choice", "Choices": [{"Variable": "$", "NumericGreaterThan": 50,
                                                     "Next": "TooBig"}], "Default": "Fine"},
            "TooBig": {"Type": "Fail", "Error": "TooBig", "Cause": "square over 50"},
            "Fine": {"Type": "Pass", "End": True}}},
            "Catch": [{"ErrorEquals": ["TooBig"], "ResultPath": "$.caught", "Next": "Recover"}],
            "Next": "Sum"},
        "Recover": {"Type": "Pass", "Parameters": {"error.$": "$.caught.Error", "n.$": "States.ArrayLength($.xs)"},
                    "End": True},
        "Sum": {"Type": "Task", "Resource": ARN + "Total", "End": True}}}
    sm["States"]["Each"]["ItemsPath"] = "$.xs"
    sm["States"]["Sum"]["Parameters"] = {"xs.$": "$"}
    root = make_sfn_app(tmp_path / "app", sm, ["Square", "Total"])
    item, _, left, _ = run(root, {"xs": [1, 2, 3]}, tmp_path / "ok")
    check_ok(item, left)
    assert item["v"] == {"total": 14}
    item, _, _, _ = run(root, {"xs": [1, 9, 3]}, tmp_path / "caught")
    # (no leftover check: the other branches may still be running when the session ends)
    assert item["status"] == "SUCCEEDED" and item["v"] == {"error": "TooBig", "n": 3}

    sm = {"StartAt": "Both", "States": {
        "Both": {"Type": "Parallel", "Branches": [
            {"StartAt": "B", "States": {"B": task("Inc")}},
            {"StartAt": "C", "States": {"C": task("Boom")}}],
            "Catch": [{"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.err", "Next": "Handled"}],
            "Next": "Done"},
        "Done": {"Type": "Succeed"},
        "Handled": {"Type": "Task", "Resource": ARN + "Inc", "OutputPath": "$.err.Error", "End": True}}}
    item, _, _, _ = run(make_sfn_app(tmp_path / "p", sm, ["Inc", "Boom"]), {"k": 1}, tmp_path / "p")
    assert item["status"] == "SUCCEEDED" and item["v"] == "CustomError"


def test_retry_on_fanout_with_tasks_compiles_to_a_rerun_edge(tmp_path):
    """Retry on a Map whose branches hold Tasks: the join re-runs the fan-out along a Map
    edge marked Iterate (the new attempt's invocations get new names)."""
    sm = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "Retry": [{"ErrorEquals": ["States.ALL"]}],
        "ItemProcessor": {"StartAt": "I", "States": {"I": task("Inc")}}, "End": True}}}
    app = load_app(make_sfn_app(tmp_path / "app", sm, ["Inc"]))
    join = app.workflow.functions["M_Join"]
    assert [(e.target, e.type, e.iterate) for e in join.next] == [("I", "Map", True)]
