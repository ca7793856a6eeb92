"""Step Functions state machines compiled to IR by unumctl.asl (docs/stepfunctions.md).

A nondeterministic Task runs before each Map/Parallel, and the machines read `$$`
(`$$.Execution.StartTime`, `$$.Map.Item.Index`/`Value`), so state kept by the compiled
wrapper outside the checkpoint shows up as a result inconsistent with committed values."""

from __future__ import annotations

from typing import Any

from unumctl.asl import compile_definition, resolver
from unumctl.asl.compiler import to_workflow

from ..model import WorkflowSpec
from .nd import nd, tok

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


def _task(fn: str, nxt: str | None = None, **kw) -> dict:
    st = {"Type": "Task", "Resource": ARN + fn, **kw}
    st.update({"Next": nxt} if nxt else {"End": True})
    return st


def _synth(e, c):
    raise RuntimeError("synthesized ASL function: no user code")


def compiled(name: str, machine: dict, handlers: dict, value: Any, **kw) -> WorkflowSpec:
    """Compile `machine` and bind every compiled function to its user handler."""
    comp = compile_definition(machine, resolver({k: {} for k in handlers}), sorted(handlers),
                              source=name, machine=name)
    wf = to_workflow(comp, name)
    hs = {fn: (handlers[lam] if lam is not None else _synth) for fn, lam in comp.code.items()}
    lambdas = {fn: lam for fn, lam in comp.code.items() if lam is not None}
    return WorkflowSpec(name, dict(wf.functions), hs, value, lambdas=lambdas, **kw)


def _work(e, c):
    return {"in": e, "w": tok()}


def sfn_map() -> WorkflowSpec:
    def pick(e, c):
        return {"items": [f"i{nd()}", "k"], "tag": tok()}

    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Fan", ResultPath="$.picked"),
        "Fan": {"Type": "Map", "ItemsPath": "$.picked.items",
                "ItemSelector": {"v.$": "$$.Map.Item.Value", "i.$": "$$.Map.Item.Index",
                                 "t.$": "$$.Execution.StartTime"},
                "ItemProcessor": {"StartAt": "Work", "States": {"Work": _task("Work")}},
                "ResultPath": "$.results", "Next": "Stamp"},
        "Stamp": {"Type": "Pass", "Parameters": {"picked.$": "$.picked", "results.$": "$.results",
                                                 "t.$": "$$.Execution.StartTime"}, "End": True}}}

    def check(value, view) -> str | None:
        committed = view.committed_user_output("Pick")
        if not isinstance(value, dict) or [value.get("picked")] != committed[:1]:
            return f"picked {value.get('picked') if isinstance(value, dict) else value} != committed Pick {committed[:1]}"
        items = value["picked"]["items"]
        res = value.get("results") or []
        if [r["in"]["v"] for r in res] != items or [r["in"]["i"] for r in res] != list(range(len(items))):
            return f"Map results {res} do not match committed items {items}"
        times = {r["in"]["t"] for r in res} | {value.get("t")}
        if len(times) != 1:
            return f"$$.Execution.StartTime differs within one execution: {sorted(times)}"
        return None
    return compiled("sfn-map", machine, {"Pick": pick, "Work": _work}, {"job": 1}, check_result=check,
                    about="Task (nondeterministic) -> Map with ItemSelector on $$ -> Pass reading $$")


def sfn_parallel_choice() -> WorkflowSpec:
    def pick(e, c):
        return {"x": 70 if nd() % 2 == 0 else 10, "tag": tok()}

    branch = {"StartAt": "W", "States": {"W": _task("Work", Parameters={
        "x.$": "$.picked.x", "t.$": "$$.Execution.StartTime"})}}
    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Par", ResultPath="$.picked"),
        "Par": {"Type": "Parallel", "Branches": [branch, branch], "ResultPath": "$.branches", "Next": "Route"},
        "Route": {"Type": "Choice", "Choices": [{"Variable": "$.picked.x", "NumericGreaterThan": 50,
                                                 "Next": "Hot"}], "Default": "Cold"},
        "Hot": {"Type": "Pass", "Result": "hot", "ResultPath": "$.route", "Next": "Final"},
        "Cold": {"Type": "Pass", "Result": "cold", "ResultPath": "$.route", "Next": "Final"},
        "Final": {"Type": "Pass", "Parameters": {"picked.$": "$.picked", "branches.$": "$.branches",
                                                 "route.$": "$.route", "t.$": "$$.Execution.StartTime"},
                  "End": True}}}

    def check(value, view) -> str | None:
        committed = view.committed_user_output("Pick")
        if not isinstance(value, dict) or [value.get("picked")] != committed[:1]:
            return f"picked {value.get('picked') if isinstance(value, dict) else value} != committed Pick {committed[:1]}"
        x = value["picked"]["x"]
        if value.get("route") != ("hot" if x > 50 else "cold"):
            return f"route {value.get('route')} for x={x}"
        if any(b["in"]["x"] != x for b in value.get("branches", [])):
            return f"branches saw x {[b['in']['x'] for b in value['branches']]}, committed {x}"
        times = {b["in"]["t"] for b in value.get("branches", [])} | {value.get("t")}
        if len(times) != 1:
            return f"$$.Execution.StartTime differs within one execution: {sorted(times)}"
        return None
    return compiled("sfn-parallel", machine, {"Pick": pick, "Work": _work}, {"job": 2}, check_result=check,
                    about="Task (nondeterministic) -> Parallel reading $$ -> Choice -> Pass reading $$")


def sfn_catch() -> WorkflowSpec:
    def risky(e, c):
        if nd() % 2 == 1:
            raise ValueError(f"risky failed in {tok()}")
        return {"ok": tok()}

    machine = {"StartAt": "Risky", "States": {
        "Risky": _task("Risky", "Done", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Fix",
                                                "ResultPath": "$.error"}]),
        "Fix": _task("Fix", "Done"),
        "Done": {"Type": "Pass", "End": True}}}
    return compiled("sfn-catch", machine, {"Risky": risky, "Fix": lambda e, c: {"fixed": tok(), "from": e}},
                    {"job": 3}, about="a Task that fails in some executions, with Catch to a fallback Task")


def sfn_workflows() -> list[WorkflowSpec]:
    return [sfn_map(), sfn_parallel_choice(), sfn_catch()]
