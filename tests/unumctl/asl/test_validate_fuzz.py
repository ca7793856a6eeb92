"""Property-based fuzzing (hypothesis) of the Step Functions front-end's input handling:

* the validator, on mutants of valid state machines (examples/*-sfn and a few definitions of
  the shared ASL conformance corpus, with fields replaced, deleted, inserted or renamed to
  random JSON values), either accepts or raises a one-line AslValidationError, never
  another exception;
* what the validator accepts compiles (or fails with AslValidationError) and runs in the
  interpreter (runtime.asl.machine.Machine.run_inline, Tasks answered by an echo function,
  virtual clock, at most 300 state transitions) without any exception but AslError;
* the path parser/evaluator and the intrinsic-function parser/evaluator, on random strings
  and on deep nestings, raise only AslError (never RecursionError, KeyError, TypeError,
  IndexError...).

Deterministic (derandomized, no example database) and bounded by max_examples, so a run
takes seconds (issue 9 item 8).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime.asl import intrinsics, paths
from runtime.asl.errors import AslError
from runtime.asl.machine import Machine
from unumctl.asl import compile_definition
from unumctl.asl.fields import RULE_FIELDS, STATE_FIELDS
from unumctl.asl.validate import AslValidationError, validate

ROOT = Path(__file__).resolve().parents[3]
CORPUS = next((p for p in (ROOT.parent / "shared" / "asl-conformance", Path("/work/shared/asl-conformance"))
               if (p / "index.json").exists()), None)
# corpus cases covering Map (both forms), Parallel, Retry/Catch, Wait, Fail paths, intrinsics
CORPUS_CASES = ["map/*", "parallel/*", "catch/*", "retry/*", "scenario/*wait*", "error_handling/*",
                "intrinsic_functions/*format*"]

# a longer, random campaign: UNUM_FUZZ_SCALE=20 UNUM_FUZZ_RANDOM=1 pytest tests/unumctl/asl/test_validate_fuzz.py
_SCALE = int(os.environ.get("UNUM_FUZZ_SCALE", "1"))
_DERANDOMIZE = not os.environ.get("UNUM_FUZZ_RANDOM")
FUZZ = settings(max_examples=400 * _SCALE, deadline=None, derandomize=_DERANDOMIZE, database=None,
                suppress_health_check=list(HealthCheck))
PARSER_FUZZ = settings(max_examples=600 * _SCALE, deadline=None, derandomize=_DERANDOMIZE, database=None,
                       suppress_health_check=list(HealthCheck))


def _seeds() -> list[tuple[str, Any, Any]]:
    out = []
    for d in sorted(ROOT.glob("examples/*-sfn")):
        out.append((d.name, json.loads((d / "statemachine.json").read_text()),
                    json.loads((d / "input.json").read_text())))
    if CORPUS is not None:
        for pattern in CORPUS_CASES:
            for d in sorted(CORPUS.glob(pattern))[:2]:
                if (d / "definition.json").exists():
                    inp = json.loads((d / "input.json").read_text()) if (d / "input.json").exists() else {}
                    out.append((d.name, json.loads((d / "definition.json").read_text()), inp))
    return out


SEEDS = _seeds()

ASL_STRINGS = [
    "$", "$.a", "$.a.b[0]", "$$.Execution.Input", "$$.Map.Item.Value", "$.a&b", "$.a|b", "$..x",
    "$['a\\'b']", "$[?(@.a > 1)]", "$.a[*]", "$.", "$[", "States.Array(1, $.a)",
    "States.Format('{} {}', $.a)", "States.ArrayRange(1, 5, 0)", "States.MathAdd($.a, 1)",
    "States.Nope()", "States.Array(", "States.ALL", "States.TaskFailed", "States.Runtime",
    "Task", "Pass", "Choice", "Wait", "Succeed", "Fail", "Parallel", "Map", "INLINE", "DISTRIBUTED",
    "FULL", "NONE", "Tail", "JSONata", "JSONPath", "{% 1 %}", "2026-01-01T00:00:00Z", "ten", "",
    "arn:aws:lambda:us-east-1:000000000000:function:Validate", "arn:aws:states:::lambda:invoke",
    "arn:aws:states:::sqs:sendMessage", "Next", "End", "Default",
]
FIELD_NAMES = sorted(set().union(*STATE_FIELDS.values(), RULE_FIELDS, {
    "StartAt", "States", "ErrorEquals", "MaxAttempts", "IntervalSeconds", "BackoffRate",
    "ProcessorConfig", "Mode", "FunctionName", "Payload", "LogType", "x.$", "a.$"}))

scalars = (st.none() | st.booleans() | st.integers(min_value=-3, max_value=10 ** 6)
           | st.floats(allow_nan=False, allow_infinity=False, width=32)
           | st.text(max_size=6) | st.sampled_from(ASL_STRINGS))
keys = st.sampled_from(FIELD_NAMES) | st.text(max_size=5)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(keys, inner, max_size=3), max_leaves=8)


def _locations(doc: Any) -> list[tuple]:
    """Paths (tuples of keys/indexes) of every value in `doc`, root first (iterative)."""
    out, todo = [], [()]
    while todo:
        loc = todo.pop()
        out.append(loc)
        node = _get(doc, loc)
        if isinstance(node, dict):
            todo.extend(loc + (k,) for k in node)
        elif isinstance(node, list):
            todo.extend(loc + (i,) for i in range(len(node)))
    return sorted(out, key=lambda loc: [str(x) for x in loc])


def _get(doc: Any, loc: tuple) -> Any:
    for k in loc:
        doc = doc[k]
    return doc


@st.composite
def mutants(draw):
    """(name, mutated definition, input, mutation log)."""
    name, seed, inp = draw(st.sampled_from(SEEDS))
    doc = copy.deepcopy(seed)
    state_names = [n for n in _names(seed)] or ["X"]
    value_st = json_values | st.sampled_from(state_names)
    log = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        locs = _locations(doc)
        loc = draw(st.sampled_from(locs[1:] or locs))  # the root itself: rarely useful
        op = draw(st.sampled_from(["replace", "replace-similar", "delete", "insert", "rename"]))
        node = _get(doc, loc)
        if op.startswith("replace") or (op in ("delete", "rename") and not loc):
            # a value of the same kind keeps more mutants valid, so that they reach the interpreter
            value = draw(_similar(node, state_names) if op == "replace-similar" else value_st)
            if loc:
                _get(doc, loc[:-1])[loc[-1]] = value
            else:
                doc = value
        elif op == "delete":
            parent = _get(doc, loc[:-1])
            del parent[loc[-1]]
        elif op == "rename":
            parent = _get(doc, loc[:-1])
            if isinstance(parent, dict):
                parent[draw(keys | st.sampled_from(state_names))] = parent.pop(loc[-1])
        elif isinstance(node, dict):
            node[draw(keys | st.sampled_from(state_names))] = draw(value_st)
        elif isinstance(node, list):
            node.insert(draw(st.integers(min_value=0, max_value=len(node))), draw(value_st))
        log.append((op, loc))
    return name, doc, inp, log


def _similar(node: Any, state_names: list[str]):
    if isinstance(node, bool):
        return st.booleans()
    if isinstance(node, int):
        return st.integers(min_value=-2, max_value=100)
    if isinstance(node, float):
        return st.floats(min_value=-2, max_value=100)
    if isinstance(node, str):
        return st.sampled_from(ASL_STRINGS + state_names)
    if isinstance(node, list):
        return st.lists(scalars | st.sampled_from(state_names), max_size=3)
    return json_values


def _names(doc: Any) -> list[str]:
    out = []
    todo = [doc]
    while todo:
        d = todo.pop()
        if isinstance(d, dict):
            if isinstance(d.get("States"), dict):
                out.extend(k for k in d["States"] if isinstance(k, str))
            todo.extend(d.values())
        elif isinstance(d, list):
            todo.extend(d)
    return sorted(set(out))


class _Budget(Exception):
    """The interpreter ran more than the transition budget (a mutant may loop forever)."""


class BoundedMachine(Machine):
    """The interpreter with a transition budget (everything else is the real Machine)."""

    LIMIT = 300

    def _enter(self) -> None:
        super()._enter()
        if self.transitions > self.LIMIT:
            raise _Budget()


def _echo(resource: str, event: Any) -> Any:
    return event


def _run(definition: dict, inp: Any) -> None:
    clock = [1_700_000_000.0]

    def sleep(s: float) -> None:
        clock[0] += s

    info = {"Id": "exec", "Name": "exec", "StartTime": "2026-01-01T00:00:00.000Z", "Input": inp,
            "StateMachine": {"Id": "sm", "Name": "sm"}}
    m = BoundedMachine(definition, info, lambda: clock[0], sleep)
    try:
        m.run_inline("", definition["StartAt"], inp, _echo)
    except (AslError, _Budget):
        pass


def _one_line(exc: Exception) -> None:
    text = str(exc)
    assert "\n" not in text and "\r" not in text, text
    assert text.startswith("sm.json: "), text


@FUZZ
@given(mutants())
def test_validator_accepts_or_raises_one_line_error_and_accepted_mutants_run(case):
    name, doc, inp, log = case
    try:
        validate(doc, "sm.json")
    except AslValidationError as exc:
        _one_line(exc)
        return
    try:
        compile_definition(doc, lambda n: "f", ["f"], source="sm.json")
    except AslValidationError as exc:  # a shape the compiler does not support
        _one_line(exc)
    _run(doc, inp)


# ---------------------------------------------------------------------------- the named shapes
def _wrap(v: Any, n: int) -> Any:
    v = [v]
    for _ in range(n):
        v = [v]
    return v


def _nested_k(n: int) -> Any:
    v: Any = 1
    for _ in range(n):
        v = {"k": v}
    return v


def _machine(**state) -> dict:
    return {"StartAt": "A", "States": {"A": state, "B": {"Type": "Succeed"}}}


MALFORMED = [
    ({"StartAt": "A", "States": {"A": {"Type": "Fail", "Default": ""}}}, "States.A.Default"),
    (_machine(Type="Pass", Next=[]), "States.A.Next"),
    (_machine(Type="Pass", Next={}), "States.A.Next"),
    (_machine(Type="Choice", Choices=[{"Variable": "$.a", "IsPresent": True, "Next": "B"}], Default={}),
     "States.A.Default"),
    (_machine(Type="Task", Resource="f", End=True, Catch=[{"ErrorEquals": ["States.ALL"], "Next": ["B"]}]),
     "States.A.Catch[0].Next"),
    (_machine(Type="Choice", Choices=[{"Variable": "$.a", "IsPresent": True, "Next": ["B"]}]),
     "States.A.Choices[0].Next"),
    ({"StartAt": "A", "States": {"A": {"Type": "Fail", "Choices": True}}}, "States.A.Choices"),
    (_machine(Type="Pass", InputPath="$.a&b", Next="B"), "States.A.InputPath"),
    (_machine(Type="Wait", Seconds="ten", Next="B"), "States.A.Seconds"),
    (_machine(Type="Pass", Parameters={"x.$": "States.Array(" * 2000 + ")" * 2000}, Next="B"),
     "States.A.Parameters.x.$"),
    (_machine(Type="Pass", OutputPath="$" + ".a" * 1000, Next="B"), "States.A.OutputPath"),
    ({"StartAt": "A", "States": {"A": [1]}}, "States.A"),
    ({"StartAt": "A", "States": {1: {"Type": "Succeed"}, "A": {"Type": "Succeed"}}}, "States"),
    (_machine(Type="Task", Resource="f", Next="B", Retry=[{"ErrorEquals": ["X"], "MaxAttempts": "3"}]),
     "States.A.Retry[0].MaxAttempts"),
    (_machine(Type="Pass", Next="B", Parameters={"d": _nested_k(200)}), "States.A.Parameters"),
    (_machine(Type="Map", Next="B", ItemProcessor=True), "States.A.ItemProcessor"),
    (_machine(Type="Parallel", Next="B", Branches=[1]), "States.A.Branches[0]"),
    ({"StartAt": ["A"], "States": {"A": {"Type": "Succeed"}}}, "StartAt"),
    (_machine(Type="Task", Resource="f", Next="B", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "B"},
                                                          {"ErrorEquals": ["X"], "Next": "B"}]),
     "States.A.Catch[0].ErrorEquals"),
    (_machine(Type="Task", Resource="f", Next="B", Retry=[{"ErrorEquals": ["States.ALL", "X"]}]),
     "States.A.Retry[0].ErrorEquals"),
    ([], "(top)"),
]


@pytest.mark.parametrize("doc,where", MALFORMED, ids=[w for _, w in MALFORMED])
def test_each_malformed_shape_of_the_issue_is_a_one_line_error_naming_state_and_field(doc, where):
    with pytest.raises(AslValidationError) as info:
        validate(doc, "sm.json")
    _one_line(info.value)
    assert str(info.value).startswith(f"sm.json: {where}"), str(info.value)


# ---------------------------------------------------------------------------- parsers
PATH_ALPHABET = "$.[]'\"()*?@,:-0123ab\\ &|=<>!`"
path_like = st.text(alphabet=PATH_ALPHABET, max_size=40).map(lambda s: "$" + s)
DATA = {"a": {"b": [1, {"c": "x"}], "a'b": 2}, "l": [{"x": 1}, {"x": "s"}, None], "n": 3}


def _deep_path(n: int) -> str:
    return "$" + ".a" * n


@PARSER_FUZZ
@given(st.one_of(path_like, st.text(max_size=30), st.integers(0, 3000).map(_deep_path),
                 st.integers(0, 3000).map(lambda n: "$" + "[0]" * n)))
def test_path_parser_raises_only_asl_errors(text):
    try:
        paths.validate_path(text)
    except AslError:
        return
    for call in (lambda: paths.read(text, DATA, {"Execution": {"Input": DATA}}),
                 lambda: paths.exists(text, DATA, {}),
                 lambda: paths.write(text, DATA, 1)):
        try:
            call()
        except AslError as exc:
            assert "\n" not in str(exc)


INTRINSIC_ALPHABET = "States.ArayFomtMhAdLgUIJSON(),'{}$.[]0123 \\-"
intrinsic_like = st.text(alphabet=INTRINSIC_ALPHABET, max_size=50)


@st.composite
def nested_calls(draw):
    n = draw(st.integers(min_value=1, max_value=3000))
    fn = draw(st.sampled_from(["States.Array", "States.JsonToString", "States.Format", "States.ArrayLength"]))
    inner = draw(st.sampled_from(["1", "$.n", "'x'", "", "$.a.b"]))
    return f"{fn}(" * n + inner + ")" * n


@PARSER_FUZZ
@given(st.one_of(intrinsic_like, st.text(max_size=30).map(lambda s: "States." + s), nested_calls(),
                 st.builds(lambda f, a: f"{f}({a})", st.sampled_from(sorted(intrinsics._FUNCS) + ["States.Format"]),
                           st.text(alphabet="$.ab'{}0123,() \\", max_size=25))))
def test_intrinsic_parser_raises_only_asl_errors(text):
    try:
        intrinsics.check(text)
    except AslError as exc:
        assert "\n" not in str(exc)
    try:
        intrinsics.evaluate(text, DATA, {"Execution": {}})
    except AslError as exc:
        assert "\n" not in str(exc)


def test_deep_nestings_are_bounded_with_a_clear_error():
    with pytest.raises(AslError, match="nest more than 32 deep"):
        intrinsics.parse("States.Array(" * 2000 + ")" * 2000)
    with pytest.raises(AslError, match="more than 100 steps"):
        paths.read(_deep_path(1000), DATA)
    # the bounds leave ordinary depths alone
    assert intrinsics.evaluate("States.Array(" * 32 + "1" + ")" * 32, DATA, {}) == _wrap(1, 31)
    assert paths.read("$" + ".k" * 99, _nested_k(99)) == 1


def test_cli_reports_a_malformed_machine_in_one_line_with_exit_2(tmp_path):
    import subprocess
    import sys

    import yaml
    (tmp_path / "sm.json").write_text(json.dumps({"StartAt": "A", "States": {
        "A": {"Type": "Wait", "Seconds": "ten", "Next": "B"}, "B": {"Type": "Fail", "Default": ""}}}))
    (tmp_path / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "fuzz-cli", "workflow": {"stepfunctions": "sm.json"}, "functions": {}}))
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "validate", str(tmp_path)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert lines[0].endswith("sm.json: States.A.Seconds: must be an integer >= 0, got \"ten\""), lines
