"""JSONata and workflow variables in the Step Functions front-end: our own state machines,
run by the interpreter (runtime.asl.machine) and end to end on the local target, plus the
validator's JSONata/variables rules and the compiler's FunctionName from `Arguments`."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from runtime.asl import fanout
from runtime.asl.errors import AslError
from runtime.asl.machine import Machine
from runtime.asl.wrapper import envelope, is_envelope
from runtime.faults import FaultSpec
from unumctl.asl import compile_definition, resolver
from unumctl.asl.validate import AslValidationError, validate
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"
INVOKE = "arn:aws:states:::lambda:invoke"
CAUSE_HEAD = "An error occurred while executing the state '{}' (entered at the event id #"


def machine(sm: dict) -> Machine:
    m = Machine(sm, {"Id": "exec", "Name": "exec", "StartTime": "2024-01-01T00:00:00.000Z",
                     "Input": {}, "StateMachine": {"Id": "sm", "Name": "sm"}},
                clock=time.time, sleep=lambda s: None)
    m.assign_log = []
    return m


def run_inline(sm: dict, value, invoke=None):
    m = machine(sm)
    out = m.run_inline("", sm["StartAt"], value, invoke or (lambda fn, ev: ev))
    return out, m.assign_log


# ---------------------------------------------------------------------------- interpreter
def test_assignments_are_evaluated_before_any_takes_effect_and_output_sees_old_values():
    sm = {"QueryLanguage": "JSONata", "StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"a": 1, "b": 2}, "Next": "Swap"},
        "Swap": {"Type": "Pass", "Assign": {"a": "{% $b %}", "b": "{% $a %}"},
                 "Output": {"a_seen": "{% $a %}", "b_seen": "{% $b %}"}, "Next": "Show"},
        "Show": {"Type": "Pass", "Output": {"seen": "{% $states.input %}", "a": "{% $a %}", "b": "{% $b %}"},
                 "End": True}}}
    out, log = run_inline(sm, {})
    assert out == {"seen": {"a_seen": 1, "b_seen": 2}, "a": 2, "b": 1}
    assert log == [("Init", {"a": 1, "b": 2}), ("Swap", {"a": 2, "b": 1})]


def test_jsonpath_assign_reads_the_result_and_variables_in_paths_and_intrinsics():
    sm = {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Parameters": {"v.$": "$.x", "w": 5},
              "Assign": {"got.$": "$.v", "obj": {"k.$": "$.w"}, "lit": "$.not.a.path"}, "Next": "Q"},
        "Q": {"Type": "Pass", "Parameters": {"g.$": "$got", "k.$": "$obj.k", "lit.$": "$lit",
                                             "f.$": "States.Format('{}-{}', $got, $obj.k)"},
              "Next": "C"},
        "C": {"Type": "Choice", "Choices": [{"Variable": "$got", "NumericEqualsPath": "$.g",
                                             "Assign": {"matched": True}, "Next": "Done"}],
              "Default": "Done"},
        "Done": {"Type": "Pass", "InputPath": "$obj", "End": True}}}
    out, log = run_inline(sm, {"x": 7})
    assert out == {"k": 5}
    assert log[0] == ("P", {"got": 7, "obj": {"k": 5}, "lit": "$.not.a.path"})
    assert ("C", {"matched": True}) in log
    m = machine(sm)
    stop = m.walk("", "P", {"x": 7}, variables=(vs := {}))
    assert stop.kind == "End" and vs["matched"] is True


def test_map_branches_see_outer_variables_read_only():
    sm = {"QueryLanguage": "JSONata", "StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"base": 10, "shadow": "outer"}, "Next": "M"},
        "M": {"Type": "Map", "Items": "{% $states.input.xs %}", "ItemProcessor": {
            "StartAt": "In", "States": {
                "In": {"Type": "Pass", "Assign": {"inner": "{% $states.input + $base %}", "shadow": "inner"},
                       "Next": "Use"},
                "Use": {"Type": "Pass", "Output": "{% [$inner, $shadow] %}", "End": True}}},
              "Next": "After"},
        "After": {"Type": "Pass", "Output": {"r": "{% $states.input %}", "shadow": "{% $shadow %}",
                                            "inner_defined": "{% $exists($inner) %}"}, "End": True}}}
    out, log = run_inline(sm, {"xs": [1, 2]})
    assert out == {"r": [[11, "inner"], [12, "inner"]], "shadow": "outer", "inner_defined": False}
    assert sorted(json.dumps(e) for e in log if e[0] == "In") == sorted(
        json.dumps(["In", {"inner": v, "shadow": "inner"}]) for v in (11, 12))


def test_catcher_assign_and_output_see_error_output_and_input():
    def boom(fn, ev):
        raise AslError("Oops", "it broke")

    sm = {"QueryLanguage": "JSONata", "StartAt": "T", "States": {
        "T": {"Type": "Task", "Resource": ARN + "f", "Assign": {"never": 1},
              "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F",
                         "Assign": {"err": "{% $states.errorOutput.Error %}", "was": "{% $states.input.k %}"},
                         "Output": {"cause": "{% $states.errorOutput.Cause %}"}}], "End": True},
        "F": {"Type": "Pass", "Output": "{% $merge([$states.input, {'err': $err, 'was': $was}]) %}", "End": True}}}
    out, log = run_inline(sm, {"k": "v"}, boom)
    assert out == {"cause": "it broke", "err": "Oops", "was": "v"}
    assert [e[0] for e in log] == ["T"]  # the catcher's Assign, not the state's


@pytest.mark.parametrize("sm_output,field,expr", [
    ({"result": "{% $nothing %}"}, "Output/result", "$nothing"),
    ("{% $states.input.missing %}", "Output", "$states.input.missing"),
])
def test_query_evaluation_error_is_worded_like_aws(sm_output, field, expr):
    sm = {"QueryLanguage": "JSONata", "StartAt": "A", "States": {
        "A": {"Type": "Pass", "Next": "B"},
        "B": {"Type": "Pass", "Output": sm_output, "End": True}}}
    with pytest.raises(AslError) as exc:
        run_inline(sm, {})
    assert exc.value.error == "States.QueryEvaluationError"
    assert exc.value.cause == (f"An error occurred while executing the state 'B' (entered at the event "
                               f"id #4). The JSONata expression '{expr}' specified for the field "
                               f"'{field}' returned nothing (undefined).")


def test_items_type_errors_and_aws_functions():
    sm = {"QueryLanguage": "JSONata", "StartAt": "M", "States": {
        "M": {"Type": "Map", "Items": "{% $states.input.v %}",
              "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}}, "End": True}}}
    with pytest.raises(AslError) as exc:
        run_inline(sm, {"v": {"a": 1}})
    assert exc.value.cause.startswith(CAUSE_HEAD.format("M"))
    assert exc.value.cause.endswith("The JSONata expression '$states.input.v' specified for the field "
                                    "'Items' returned an unexpected result type. Expected 'array', but "
                                    "was 'object' for value: {\"a\":1}")
    sm = {"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {"Type": "Pass", "Output": {
        "parts": "{% $partition([1,2,3,4,5], 2) %}", "range": "{% $range(1, 10, 4) %}",
        "parsed": "{% $parse('{\"a\": [1]}') %}", "hash": "{% $hash('abc', 'SHA-256') %}",
        "uuid": "{% $length($uuid()) %}", "rnd": "{% $random(7) = $random(7) %}"}, "End": True}}}
    out, _ = run_inline(sm, {})
    assert out == {"parts": [[1, 2], [3, 4], [5]], "range": [1, 5, 9], "parsed": {"a": [1]},
                   "hash": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
                   "uuid": 36, "rnd": True}


THREW = "threw an error during evaluation"


@pytest.mark.parametrize("expr,tail", [
    ("0/0", f"{THREW}. D1001: Number out of range"),
    ("$power(10, 400)", f"{THREW}. D1001: Number out of range"),
    ("$round(1e300, 2)", f"{THREW}. D1001: Number out of range"),
    ("$string(/ab/)", f"{THREW}: a regular expression is not a value (use it as an argument of $match, "
                      "$replace, $split or $contains)"),
    ("$eval('1+1')", f"{THREW}. T1006: Attempted to invoke a non-function"),
    ("$count([1..873783])", f"{THREW}: Expression evaluation memory limit exceeded: Check for excessive memory usage"),
    ("$length($pad('', 50000000))", f"{THREW}: Expression evaluation memory limit exceeded: Check for excessive "
                                    "memory usage"),
    ("($p := function($s, $n) { $n = 0 ? $s : $p($s & $s, $n - 1) }; $length($p('x', 23)))",
     f"{THREW}: Expression evaluation memory limit exceeded: Check for excessive memory usage"),
    ("($f := function($x) { 1 + $f($x) }; $f(1))",
     f"{THREW}: Stack overflow error: Check for non-terminating recursive function. Consider rewriting as "
     "tail-recursive."),
])
def test_evaluator_errors_and_bounds_are_query_evaluation_errors_worded_like_aws(expr, tail):
    """Python exceptions of the evaluator and the memory/depth bounds fail the state with
    States.QueryEvaluationError, AWS's sentence naming expression and field."""
    sm = {"QueryLanguage": "JSONata", "StartAt": "B", "States": {
        "B": {"Type": "Pass", "Output": {"r": "{% " + expr + " %}"}, "End": True}}}
    with pytest.raises(AslError) as exc:
        run_inline(sm, {})
    assert exc.value.error == "States.QueryEvaluationError"
    assert exc.value.cause == (f"An error occurred while executing the state 'B' (entered at the event id #2). "
                               f"The JSONata expression '{expr}' specified for the field 'Output/r' {tail}")


def test_a_runaway_expression_fails_at_the_time_bound(monkeypatch):
    """A tail-recursive loop never overflows a stack: only the clock ends it (TIME_LIMIT)."""
    from runtime.asl import jsonata
    monkeypatch.setattr(jsonata, "TIME_LIMIT", 0.5)
    expr = "($f := function($x) { $f($x + 1) }; $f(1))"
    sm = {"QueryLanguage": "JSONata", "StartAt": "B", "States": {"B": {"Type": "Pass", "Output": "{% " + expr + " %}",
                                                                      "End": True}}}
    t0 = time.monotonic()
    with pytest.raises(AslError) as exc:
        run_inline(sm, {})
    assert time.monotonic() - t0 < 5
    assert exc.value.cause.endswith(f"'{expr}' specified for the field 'Output' {THREW}: Expression evaluation "
                                    "timeout: Check for infinite loop")


CATASTROPHIC = "a" * 60 + "!"  # /(a|aa)+$/ backtracks through fib(60) splits before it fails
REGEX_CALLS = [f'$match("{CATASTROPHIC}", /(a|aa)+$/)', f'$replace("{CATASTROPHIC}", /(a|aa)+$/, "x")',
               f'$contains("{CATASTROPHIC}", /(a|aa)+$/)', f'$split("{CATASTROPHIC}", /(a|aa)+$/)',
               f'/(a|aa)+$/("{CATASTROPHIC}")']
_RUN_REGEX_CALLS = """
import json, sys, time
from runtime.asl import jsonata
from runtime.asl.errors import AslError
jsonata.TIME_LIMIT = 0.3
for call in json.loads(sys.argv[1]):
    t0 = time.monotonic()
    try:
        jsonata.evaluate("{% " + call + " %}", {"input": {}}, None, jsonata.Where("B", "Output"))
        print(json.dumps([call, None, None, time.monotonic() - t0]), flush=True)
    except AslError as exc:
        print(json.dumps([call, exc.error, exc.cause, time.monotonic() - t0]), flush=True)
"""


def test_a_catastrophic_regex_fails_at_the_time_bound():
    """A regex runs inside one evaluation step, where the TIME_LIMIT check between steps
    cannot interrupt it (with Python's `re`, which also holds the GIL, each of these runs for
    hours): regex literals are matched with the evaluation's remaining time as the `regex`
    package's timeout, so `$match`, `$replace`, `$contains`, `$split` and a regex called as a
    function fail with AWS's timeout cause within about TIME_LIMIT (0.3 s here). They run in
    a subprocess, so that an unbounded regex fails this test at its 60 s timeout instead of
    hanging the suite."""
    import subprocess
    import sys
    try:
        r = subprocess.run([sys.executable, "-c", _RUN_REGEX_CALLS, json.dumps(REGEX_CALLS)],
                           capture_output=True, text=True, timeout=60, cwd=Path(__file__).resolve().parents[3])
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"a regex ran past 60 s with TIME_LIMIT 0.3 s; finished: {exc.stdout!r}") from None
    assert r.returncode == 0, r.stderr[-2000:]
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [row[0] for row in rows] == REGEX_CALLS
    for call, error, cause, seconds in rows:
        assert error == "States.QueryEvaluationError", (call, cause)
        assert cause.endswith(f"'{call}' specified for the field 'Output' {THREW}: Expression evaluation "
                              "timeout: Check for infinite loop"), cause
        assert seconds < 3, (call, seconds)


def test_regex_functions_keep_their_results_with_the_bounded_engine():
    """The bounded regex engine gives the results of Python's `re` on ordinary patterns,
    including $replace's "$12" read as group 1 then "2" when there is no group 12, and the
    issue's `(a+)+$` example, which the `regex` package answers at once (no match)."""
    sm = {"QueryLanguage": "JSONata", "StartAt": "B", "States": {"B": {"Type": "Pass", "Output": {
        "rep": '{% $replace("abcb", /(b)/, "[$12]") %}', "first": '{% $replace("abcb", /(b)/, "<$1>", 1) %}',
        "split": '{% $split("a1b22c", /[0-9]+/) %}', "ci": '{% $contains("ABC", /b/i) %}',
        "m": '{% $match("ab12", /([a-z])([0-9])?/) %}', "call": '{% /b+/("abbc").match %}',
        "none": '{% $count($match("' + "a" * 29 + '!", /(a+)+$/)) %}'}, "End": True}}}
    out, _ = run_inline(sm, {})
    assert out == {"rep": "a[b2]c[b2]", "first": "a<b>cb", "split": ["a", "b", "c"], "ci": True,
                   "m": [{"match": "a", "index": 0, "groups": ["a", None]},
                         {"match": "b1", "index": 1, "groups": ["b", "1"]}],
                   "call": "bb", "none": 0}


def test_values_up_to_the_memory_bound_evaluate():
    """AWS's boundary (floci-io/floci #2737): 873,782 elements pass, a 4 Mi-character string too."""
    sm = {"QueryLanguage": "JSONata", "StartAt": "B", "States": {"B": {"Type": "Pass", "Output": {
        "n": "{% $count([1..873782]) %}",
        "s": "{% ($p := function($s, $n) { $n = 0 ? $s : $p($s & $s, $n - 1) }; $length($p('x', 22))) %}"},
        "End": True}}}
    assert run_inline(sm, {})[0] == {"n": 873782, "s": 4194304}


# ---------------------------------------------------------------------------- envelopes
def test_envelopes_carry_variables_only_when_present():
    assert envelope("S", 1) == {"AslState": "S", "AslInput": 1}
    env = envelope("S", 1, {"x": [1]})
    assert env == {"AslState": "S", "AslInput": 1, "AslVars": {"x": [1]}} and is_envelope(env)
    assert not is_envelope({"AslState": "S", "AslInput": 1, "Other": 2})

    class Ctx:  # what runtime.engine.UserContext offers the wrapper: publish + committed extra
        def __init__(self):
            self.published, self.extra = {}, {}

        def publish(self, key, value):
            self.published[key] = value

    ctx = Ctx()
    fanout.start(ctx, "J", {"in": 1}, [], [1], None, 0, {"v": 2})
    assert fanout.read_fan(ctx.published[fanout.fan_key("J")]) == ({"in": 1}, [1], {"v": 2})
    fanout.start(ctx, "K", None, [], None, None, 0)
    assert fanout.read_fan(ctx.published[fanout.fan_key("K")]) == (None, [], {})


# ---------------------------------------------------------------------------- validation
BASE_JA = {"QueryLanguage": "JSONata", "StartAt": "A", "States": {
    "A": {"Type": "Task", "Resource": INVOKE, "Arguments": {"FunctionName": "Add", "Payload": "{% $states.input %}"},
          "Next": "B"},
    "B": {"Type": "Pass", "End": True}}}


def _ja(f, top: str = "JSONata"):
    sm = json.loads(json.dumps(BASE_JA))
    sm["QueryLanguage"] = top
    if top == "JSONPath":
        for st in sm["States"].values():
            st["QueryLanguage"] = "JSONata"
    f(sm["States"])
    return sm


@pytest.mark.parametrize("sm,field", [
    (_ja(lambda s: s["B"].update(OutputPath="$.x")), "States.B.OutputPath"),
    (_ja(lambda s: s["A"].update(ResultSelector={"a.$": "$"})), "States.A.ResultSelector"),
    (_ja(lambda s: s["A"].update(Parameters={})), "States.A.Parameters"),
    (_ja(lambda s: s["B"].update(QueryLanguage="JSONPath", Output=1)), "States.B.QueryLanguage"),
    (_ja(lambda s: s["B"].update(QueryLanguage="JSONPath"), top="JSONPath") | {}, None),
    (_ja(lambda s: s["B"].update(QueryLanguage="JSONPath", Output={"a": 1}), top="JSONPath"), "States.B.Output"),
    (_ja(lambda s: s["B"].update(Assign={"states": 1})), "States.B.Assign.states"),
    (_ja(lambda s: s["B"].update(Assign={"1x": 1})), "States.B.Assign.1x"),
    (_ja(lambda s: s["B"].update(Assign={"x.$": "$.a"})), "States.B.Assign.x.$"),
    (_ja(lambda s: s["B"].update(Output={"a": "{% $sum( %}"})), "States.B.Output.a"),
    (_ja(lambda s: s["A"]["Arguments"].pop("FunctionName")), "States.A.Arguments.FunctionName"),
    (_ja(lambda s: s.update(B={"Type": "Choice", "Choices": [{"Variable": "$.x", "IsNull": True, "Next": "A"}]})),
     "States.B.Choices[0].Variable"),
    (_ja(lambda s: s.update(B={"Type": "Choice", "Choices": [{"Condition": "yes", "Next": "A"}]})),
     "States.B.Choices[0].Condition"),
    (_ja(lambda s: s.update(B={"Type": "Succeed", "Assign": {"a": 1}})), "States.B.Assign"),
    (_ja(lambda s: s["A"].update(Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.e", "Next": "B"}])),
     "States.A.Catch[0].ResultPath"),
    (_ja(lambda s: s["B"].update(Type="Wait", Seconds="ten")), "States.B.Seconds"),
    (_ja(lambda s: s.update(B={"Type": "Fail", "Output": "x"})), "States.B.Output"),
    (_ja(lambda s: s["B"].update(Items=[1])), "States.B.Items"),
    (_ja(lambda s: s["B"].update(Output={"a": "{% $eval('1+1') %}"})), "States.B.Output.a"),
    (_ja(lambda s: s["A"]["Arguments"].update(Payload="{% ($f := $eval; $f($states.input.code)) %}")),
     "States.A.Arguments.Payload"),
])
def test_validation_of_jsonata_and_variables_names_state_and_field(sm, field):
    if field is None:  # a JSONPath state in a JSONPath machine whose other states use JSONata
        validate(sm, "sm.json")
        return
    with pytest.raises(AslValidationError) as exc:
        validate(sm, "sm.json")
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"sm.json: {field}: "), msg


def test_validation_accepts_jsonpath_variable_references_but_not_as_result_path():
    sm = {"StartAt": "P", "States": {"P": {"Type": "Pass", "Assign": {"v": 1}, "Next": "Q"},
                                     "Q": {"Type": "Pass", "InputPath": "$v", "Parameters": {"a.$": "$v.x"},
                                           "End": True}}}
    validate(sm, "sm.json")
    sm["States"]["Q"]["ResultPath"] = "$v"
    with pytest.raises(AslValidationError, match=r"^sm.json: States.Q.ResultPath: "):
        validate(sm, "sm.json")


# ---------------------------------------------------------------------------- compiler
def test_function_name_in_arguments_compiles_literal_to_one_function_expression_to_variants():
    funcs = {"Add": object(), "Sum": object()}
    c = compile_definition(BASE_JA, resolver(funcs), list(funcs))
    assert c.code == {"A": "Add"}
    sm = json.loads(json.dumps(BASE_JA))
    sm["States"]["A"]["Arguments"]["FunctionName"] = "{% $states.input.fn %}"
    c = compile_definition(sm, resolver(funcs), list(funcs))
    assert sorted(v for v in c.code.values() if v) == ["Add", "Sum"]


# ---------------------------------------------------------------------------- local target
HANDLERS = {"Add": "def handler(event, context):\n    return event['a'] + event['b']\n",
            "Sum": "def handler(event, context):\n    return sum(event['xs'])\n"}

E2E = {"StartAt": "Setup", "States": {
    "Setup": {"Type": "Pass", "QueryLanguage": "JSONata",
              "Assign": {"fee": 3, "who": "{% $states.input.customer %}", "fn": "Sum"},
              "Output": "{% $states.input.items %}", "Next": "Price"},
    "Price": {"Type": "Map", "QueryLanguage": "JSONata", "Items": "{% $states.input %}",
              "ItemSelector": {"n": "{% $states.context.Map.Item.Value %}"},
              "ItemProcessor": {"StartAt": "Calc", "States": {
                  "Calc": {"Type": "Task", "QueryLanguage": "JSONata", "Resource": ARN + "Add",
                           "Arguments": {"a": "{% $states.input.n %}", "b": "{% $fee %}"},
                           "Assign": {"inner": "{% $states.result %}"}, "Next": "Check"},
                  "Check": {"Type": "Pass", "QueryLanguage": "JSONata",
                            "Output": "{% $inner + $states.input - $states.input %}", "End": True}}},
              "Assign": {"prices": "{% $states.result %}"}, "Output": {"count": "{% $count($states.result) %}"},
              "Next": "Total"},
    "Total": {"Type": "Task", "QueryLanguage": "JSONata", "Resource": INVOKE,
              "Arguments": {"FunctionName": "{% $fn %}", "Payload": {"xs": "{% $prices %}"}},
              "Output": {"total": "{% $states.result.Payload %}", "count": "{% $states.input.count %}",
                         "inner_visible": "{% $exists($inner) %}"},
              "Next": "Final"},
    "Final": {"Type": "Pass", "Parameters": {"total.$": "$.total", "count.$": "$.count", "fee.$": "$fee",
                                             "inner_visible.$": "$.inner_visible",
                                             "msg.$": "States.Format('{} pays {}', $who, $.total)"},
              "End": True}}}
E2E_OUT = {"total": 15, "count": 3, "fee": 3, "inner_visible": False, "msg": "ada pays 15"}


def make_app(root: Path, sm: dict) -> Path:
    for fn, code in HANDLERS.items():
        d = root / "functions" / fn.lower()
        d.mkdir(parents=True, exist_ok=True)
        (d / "app.py").write_text(code)
    (root / "statemachine.json").write_text(json.dumps(sm))
    (root / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "sfn-jsonata", "workflow": {"stepfunctions": "statemachine.json"},
        "functions": {fn: {"code": f"functions/{fn.lower()}"} for fn in HANDLERS}}))
    return root


def test_variables_travel_between_functions_on_local(tmp_path):
    """Variables assigned in one function are read by later functions (the Map's branches,
    the run-time FunctionName variant, the JSONPath state after it); what the branches
    assigned is not visible after the Map."""
    app = load_app(make_app(tmp_path / "app", E2E))
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"customer": "ada", "items": [1, 2, 3]}, timeout=60)
        r.platform.wait_idle()
        leftovers = r.platform.ds.dump()
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == E2E_OUT
    for names in leftovers.values():
        assert names == ["result"], names


@pytest.mark.parametrize("seed", [1, 2])
def test_duplicates_and_crashes_see_the_same_variables(tmp_path, seed):
    """With duplicated deliveries and crashes around the checkpoint, every execution of a
    continuation reads the variables from its committed input: the result is unchanged."""
    app = load_app(make_app(tmp_path / "app", E2E))
    faults = FaultSpec.parse(f"seed={seed},crash=0.15,duplicate=0.3,delay=0.2")
    with LocalRunner(app, faults=faults, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"customer": "ada", "items": [1, 2, 3]}, timeout=120)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == E2E_OUT


def test_fail_error_and_cause_expressions_must_give_strings():
    sm = {"QueryLanguage": "JSONata", "StartAt": "F", "States": {
        "F": {"Type": "Fail", "Error": "{% $states.input.e %}", "Cause": "{% $states.input.c %}"}}}
    with pytest.raises(AslError) as exc:
        run_inline(sm, {"e": "Bad", "c": "because"})
    assert (exc.value.error, exc.value.cause) == ("Bad", "because")
    with pytest.raises(AslError) as exc:
        run_inline(sm, {"e": 5, "c": "because"})
    assert exc.value.error == "States.QueryEvaluationError"
    assert exc.value.cause.endswith("specified for the field 'Error' returned an unexpected result "
                                    "type. Expected 'string', but was 'number' for value: 5")


def test_jsonpath_map_reads_variables_in_items_path_and_tolerated_failure_path():
    sm = {"StartAt": "Init", "States": {
        "Init": {"Type": "Pass", "Assign": {"xs": [1, 2], "tol": 50}, "Next": "M"},
        "M": {"Type": "Map", "ItemsPath": "$xs", "ToleratedFailurePercentagePath": "$tol",
              "ItemSelector": {"v.$": "$$.Map.Item.Value", "tol.$": "$tol"},
              "ItemProcessor": {"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}},
              "End": True}}}
    out, _ = run_inline(sm, {})
    assert out == [{"v": 1, "tol": 50}, {"v": 2, "tol": 50}]
    sm["States"]["Init"]["Assign"]["tol"] = 150
    with pytest.raises(AslError, match="between 0 and 100"):
        run_inline(sm, {})


def test_json_nulls_survive_jsonata_and_undefined_is_dropped_from_arrays():
    sm = {"QueryLanguage": "JSONata", "StartAt": "P", "States": {"P": {
        "Type": "Pass", "Assign": {"v": "{% $states.input.a %}"},
        "Output": {"same": "{% $states.input %}", "arr": "{% [1, $nothing, 2] %}", "nul": "{% null %}"},
        "Next": "Q"},
        "Q": {"Type": "Pass", "Output": "{% $v %}", "End": True}}}
    m = machine(sm)
    stop = m.walk("", "P", {"a": [None, 1], "b": None}, variables=(vs := {}))
    assert vs == {"v": [None, 1]}
    assert stop.value == [None, 1]
    out, _ = run_inline(sm, {"a": [None, 1], "b": None})
    assert out == [None, 1]
    sm["States"]["P"].pop("Next")
    sm["States"]["P"]["End"] = True
    out, _ = run_inline(sm, {"a": [None, 1], "b": None})
    assert out == {"same": {"a": [None, 1], "b": None}, "arr": [1, 2], "nul": None}


def test_a_runaway_expression_fails_the_state_on_local_before_the_function_timeout(tmp_path):
    """End to end: the Pass state folded into W's function loops in JSONata; at the 5 s
    bound the state fails with States.QueryEvaluationError (the Catch takes it), long before
    W's 20 s timeout would kill the instance three times."""
    sm = {"QueryLanguage": "JSONata", "StartAt": "W", "States": {
        "W": {"Type": "Task", "Resource": ARN + "Add", "Arguments": {"a": 1, "b": 2}, "Next": "Loop"},
        "Loop": {"Type": "Parallel", "Branches": [{"StartAt": "P", "States": {"P": {
            "Type": "Pass", "Output": "{% ($f := function($x) { $f($x + 1) }; $f(1)) %}", "End": True}}}],
                 "Catch": [{"ErrorEquals": ["States.QueryEvaluationError"], "Next": "Caught",
                            "Output": "{% $states.errorOutput.Error %}"}], "End": True},
        "Caught": {"Type": "Pass", "End": True}}}
    root = make_app(tmp_path / "app", sm)
    manifest = yaml.safe_load((root / "unumctl.yaml").read_text())
    for spec in manifest["functions"].values():
        spec["timeout"] = 20
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    t0 = time.monotonic()
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        item = r.run({}, timeout=120)
    assert item["status"] == "SUCCEEDED" and item["v"] == "States.QueryEvaluationError", item
    assert time.monotonic() - t0 < 20


_WITHOUT_REGEX = r"""
import sys, types
class _Refuse:  # `import regex` fails as it does when `_regex` was built for another Python
    def find_spec(self, name, path=None, target=None):
        if name == "regex" or name.startswith("regex."):
            raise ImportError("cannot import name '_regex' from partially initialized module 'regex'")
sys.meta_path.insert(0, _Refuse())
from runtime.asl import jsonata
print(jsonata.regex is None, jsonata.evaluate('{% $match("ab12", /[0-9]+/).match %}', {}, None, jsonata.Where("S", "Output", 1)))
"""


def test_without_the_regex_package_regexes_still_evaluate_with_one_warning():
    """An emulated Lambda runs an archive resolved for the runtime's Python (python3.13)
    under the host's, where the compiled `regex` cannot load: JSONata regexes fall back to
    the library's `re` engine (unbounded) with one warning, instead of every function
    failing its import (fails without runtime.asl.jsonata's guarded import)."""
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _WITHOUT_REGEX], capture_output=True, text=True,
                       timeout=60, cwd=Path(__file__).resolve().parents[3])
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["True", "12"], r.stdout
    assert r.stderr.count("without their time bound") == 1, r.stderr
