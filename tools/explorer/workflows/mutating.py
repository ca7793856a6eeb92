"""Handlers that change their input in place (issue 33: "no workflow's handler mutates its own
input"; docs/explorer.md "Workflows").

Every user function here first takes a copy of its input, then changes the input itself:
every dict in it gets a key `m_<name>` and every list gets the string `m_<name>` appended
(the two usual in-place edits, setting a key and appending to a list), and returns
`{"in": <the copy>, "by": "<name>[@index/size]:<execution token>"}`. A function that got
another call's leftovers (a fused Parallel region whose branches share one input object, a
Retry attempt given the failed attempt's input, a value the engine or a wrapper read after
the user code changed it) thus carries an `m_` mark into its output, and from there into
the session's result: `check_result` refuses any mark in the result, and checks that every
member is on the result's path, in order. The harness's own check (tools/explorer/harness.py,
invariant (a)) compares the input of every call of a function's user code with the value its
execution's engine received.

Workflows: a fused Parallel region with a fused chain in one branch (runtime/fusion.py; the
group's head has an IR Retry and fails its first call), a fused chain into a fused Map
region, a batched Map, an unfused Parallel region and Map (each branch its own invocation,
with Retry), and a compiled Step Functions machine (Task Retry, ResultPath into the state's
input, a Parallel state).
"""

from __future__ import annotations

import json
from typing import Any, Callable

from ..model import WorkflowSpec, ir_workflow
from .fused import _fused
from .ir_apps import FANIN
from .nd import calls, tok
from .sfn_apps import _task, compiled

MARK = "m_"


class Flaky(Exception):
    """The first call of a flaky member in an execution (its Retry runs it again)."""


def _mutate(value: Any, name: str) -> None:
    """Change `value` in place: every dict in it gets key m_<name>, every list m_<name>."""
    found, todo = [], [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            found.append(v)
            todo.extend(v.values())
        elif isinstance(v, list):
            found.append(v)
            todo.extend(v)
    for v in found:
        if isinstance(v, dict):
            v[MARK + name] = True
        else:
            v.append(MARK + name)


def marks(value: Any) -> list[str]:
    """The mutation marks anywhere in `value` (keys and strings starting with m_), sorted."""
    out, todo = set(), [value]
    while todo:
        v = todo.pop()
        if isinstance(v, dict):
            out.update(k for k in v if k.startswith(MARK))
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
        elif isinstance(v, str) and v.startswith(MARK):
            out.add(v)
    return sorted(out)


def mutating(name: str, flaky: bool = False) -> Callable[[Any, Any], Any]:
    """A handler that records a copy of its input, then changes the input in place (and, with
    `flaky`, raises Flaky on its first call in an execution, after the change)."""
    def handler(e: Any, c: Any) -> dict[str, Any]:
        seen = json.loads(json.dumps(e))
        _mutate(e, name)
        if flaky and calls() == 0:
            raise Flaky(f"{name}: first call in {tok()}")
        where = f"@{c.index}/{c.size}" if getattr(c, "index", None) is not None else ""
        return {"in": seen, "by": f"{name}{where}:{tok()}"}
    return handler


def shape(value: Any) -> Any:
    """The members along a value built by `mutating` handlers: {"in": x, "by": "N@i/n:tok"}
    -> ["N@i/n", shape(x)]; other dicts and lists element-wise; anything else as it is."""
    if isinstance(value, dict) and set(value) == {"in", "by"} and isinstance(value["by"], str):
        return [value["by"].rsplit(":", 1)[0], shape(value["in"])]
    if isinstance(value, list):
        return [shape(v) for v in value]
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items()}
    return value


def _check(expected: Any) -> Callable[[Any, Any], str | None]:
    def check(value: Any, view: Any) -> str | None:
        leaked = marks(value)
        if leaked:
            return (f"an in-place change of a handler's input reached the result ({', '.join(leaked)}): "
                    f"{json.dumps(value)[:160]}")
        if shape(value) != expected:
            return f"members on the result's path: {json.dumps(shape(value))[:160]}, not {json.dumps(expected)}"
        return None
    return check


def mutating_fused_parallel() -> WorkflowSpec:
    """S -> [A] and [B -> B2] -Fan-in-> Join -> End with fuse [[S, A, B, B2, Join]]: one
    Parallel region in S's invocation whose branches get the same value (S's output), each
    its own copy; S has an IR Retry and fails its first call after changing its input; End
    is invoked from the group's commit."""
    retry = {"Retry": {"MaxAttempts": 1, "ErrorEquals": ["Flaky"]}}  # a group's members share one
    fanin = {**retry, "Next": {"Name": "Join", "Type": FANIN, "Values": ["A-UnumIndex-0", "B2-UnumIndex-1"],
                               "Payload Modifiers": ["Pop"]}}
    spec = ir_workflow("mutating-fused-parallel", {
        "S": ({"Start": True, **retry, "Next": [{"Name": "A"}, {"Name": "B"}]}, mutating("S", flaky=True)),
        "A": (fanin, mutating("A")),
        "B": ({**retry, "Next": {"Name": "B2"}}, mutating("B")),
        "B2": (fanin, mutating("B2")),
        "Join": ({**retry, "Next": {"Name": "End"}}, mutating("J")),
        "End": ({}, mutating("E")),
    }, {"log": []}, terminals={"End"},
        about="fused Parallel region (a chain in one branch), every handler changes its input")
    s = ["S", {"log": []}]
    spec.check_result = _check(["E", ["J", [["A@0/2", s], ["B2@1/2", ["B@1/2", s]]]]])
    return _fused(spec, [["S", "A", "B", "B2", "Join"]])


def mutating_fused_map() -> WorkflowSpec:
    """Pre -> Split -Map-> Sq -Fan-in-> Sum -> End with fuse [[Pre, Split, Sq, Sum]]: a chain
    into a Map region, one invocation; each Map item and the join change their input."""
    def split(e: Any, c: Any) -> list[Any]:
        seen = json.loads(json.dumps(e))
        _mutate(e, "Split")
        return [{"i": i, "pre": seen} for i in range(2)]
    spec = ir_workflow("mutating-fused-map", {
        "Pre": ({"Start": True, "Next": {"Name": "Split"}}, mutating("P")),
        "Split": ({"Next": {"Name": "Sq", "Type": "Map"}}, split),
        "Sq": ({"Next": {"Name": "Sum", "Type": FANIN, "Values": ["Sq-UnumIndex-*"],
                         "Payload Modifiers": ["Pop"]}}, mutating("Sq")),
        "Sum": ({"Next": {"Name": "End"}}, mutating("Sum")),
        "End": ({}, mutating("E")),
    }, {"log": []}, terminals={"End"}, about="fused chain into a fused Map region, handlers change their input")
    pre = ["P", {"log": []}]
    spec.check_result = _check(["E", ["Sum", [["Sq@0/2", {"i": 0, "pre": pre}],
                                              ["Sq@1/2", {"i": 1, "pre": pre}]]]])
    return _fused(spec, [["Pre", "Split", "Sq", "Sum"]])


def mutating_batched_map(items: int = 3, k: int = 2) -> WorkflowSpec:
    """Split -Map-> Sq -Fan-in-> Sum with batch {Sq: k}: the items of one batch run in one
    invocation, each changes its input; every item keeps its index (batch offset + position)."""
    def split(e: Any, c: Any) -> list[Any]:
        return [{"i": i, "log": []} for i in range(items)]
    spec = ir_workflow("mutating-batched-map", {
        "Split": ({"Start": True, "Next": {"Name": "Sq", "Type": "Map"}}, split),
        "Sq": ({"Next": {"Name": "Sum", "Type": FANIN, "Values": ["Sq-UnumIndex-*"],
                         "Payload Modifiers": ["Pop"]}}, mutating("Sq")),
        "Sum": ({}, mutating("Sum")),
    }, None, terminals={"Sum"}, about=f"batched Map ({items} items, batch {k}), handlers change their input")
    spec.check_result = _check(["Sum", [[f"Sq@{i}/{items}", {"i": i, "log": []}] for i in range(items)]])
    return _fused(spec, [], {"Sq": k})


def mutating_parallel() -> WorkflowSpec:
    """S -> [Up, Low] -Fan-in-> Join, unfused: each branch its own invocation of the same
    value; Up has an IR Retry and fails its first call after changing its input."""
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    spec = ir_workflow("mutating-parallel", {
        "S": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, mutating("S")),
        "Up": ({**branch, "Retry": {"MaxAttempts": 1, "ErrorEquals": ["Flaky"]}}, mutating("U", flaky=True)),
        "Low": (branch, mutating("L")),
        "Join": ({}, mutating("J")),
    }, {"log": []}, terminals={"Join"}, about="parallel fan-out, every handler changes its input, Retry on Up")
    s = ["S", {"log": []}]
    spec.check_result = _check(["J", [["U@0/2", s], ["L@1/2", s]]])
    return spec


def mutating_map() -> WorkflowSpec:
    """Split -Map-> Item -Fan-in-> Sum, unfused: the items share structure in Split's output
    (one committed value); each item changes its element in place, with a Retry."""
    def split(e: Any, c: Any) -> list[Any]:
        common = {"log": []}
        return [{"i": i, "common": common} for i in range(2)]  # one object in both items
    spec = ir_workflow("mutating-map", {
        "Split": ({"Start": True, "Next": {"Name": "Item", "Type": "Map"}}, split),
        "Item": ({"Retry": {"MaxAttempts": 1, "ErrorEquals": ["Flaky"]},
                  "Next": {"Name": "Sum", "Type": FANIN, "Values": ["Item-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, mutating("I", flaky=True)),
        "Sum": ({}, mutating("Sum")),
    }, None, terminals={"Sum"}, about="Map whose items share an object, each branch changes its input")
    spec.check_result = _check(["Sum", [[f"I@{i}/2", {"i": i, "common": {"log": []}}] for i in range(2)]])
    return spec


def mutating_sfn() -> WorkflowSpec:
    """A compiled machine: Pick (ResultPath into the state's input) -> Parallel of two Tasks
    with Retry (the first attempt fails after changing its event) -> Pass. On AWS every
    Lambda invocation decodes its own event: no change reaches the state's output."""
    def flaky(e: Any, c: Any) -> dict[str, Any]:
        seen = json.loads(json.dumps(e))
        _mutate(e, "W")
        if e.get("RetryCount") == 0:
            raise Flaky(f"first attempt in {tok()}")
        return {"saw": seen}

    def pick(e: Any, c: Any) -> dict[str, Any]:
        _mutate(e, "Pick")
        return {"t": tok()}

    work = {"StartAt": "W", "States": {"W": _task(
        "Work", ResultPath="$.r", Parameters={"RetryCount.$": "$$.State.RetryCount", "job.$": "$.job"},
        Retry=[{"ErrorEquals": ["Flaky"], "MaxAttempts": 1, "IntervalSeconds": 1}])}}
    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Par", ResultPath="$.picked"),
        "Par": {"Type": "Parallel", "Branches": [work, work], "ResultPath": "$.both", "Next": "Done"},
        "Done": {"Type": "Pass", "End": True}}}

    def check(value: Any, view: Any) -> str | None:
        leaked = marks(value)
        if leaked:
            return (f"an in-place change of a Lambda's event reached the result ({', '.join(leaked)}): "
                    f"{json.dumps(value)[:160]}")
        try:
            both = value["both"]
            ok = (value["job"] == {"log": []} and len(both) == 2
                  and all(b["r"]["saw"] == {"RetryCount": 1, "job": {"log": []}} for b in both))
        except (KeyError, TypeError):
            ok = False
        return None if ok else f"unexpected result {json.dumps(value)[:160]}"
    return compiled("mutating-sfn", machine, {"Pick": pick, "Work": flaky}, {"job": {"log": []}},
                    check_result=check,
                    about="compiled Tasks that change their event: ResultPath, Task Retry, Parallel")


def mutating_workflows() -> list[WorkflowSpec]:
    return [mutating_fused_parallel(), mutating_fused_map(), mutating_batched_map(), mutating_parallel(),
            mutating_map(), mutating_sfn()]
