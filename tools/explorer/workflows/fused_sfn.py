"""A fused compiled Step Functions Task chain (issue 25; unumctl/tuning/asl_fusion.py, the
Wrapper's `CoLocated` in runtime/asl/wrapper.py, docs/fusion.md "Compiled Step Functions").

The state machine is compiled as the front-end compiles it, every fusible chain is fused by
the build step's own `colocate.fusible_chains` + `apply_workflow`, and the head's handler
dispatches to the members as a fused bundle's loader makes it (runtime.bundle ->
runtime.asl.wrapper.colocated_handler). Duplicates, crashes and the Task's timer reach
inside the group like anywhere else: a crash before the head's one commit re-runs every
Task of the group, a duplicate after it adopts.
"""

from __future__ import annotations

from typing import Any

from runtime.asl.wrapper import colocated_handler
from unumctl.tuning.colocate import apply_workflow, fusible_chains

from ..model import WorkflowSpec
from .nd import nd, tok
from .sfn_apps import _task, compiled


class Flaky(Exception):
    """Raised by the first attempt of Risky for x == 1 (its Retry runs a second attempt)."""


def fused_sfn_chain() -> WorkflowSpec:
    """Pick (nondeterministic x) -> Risky (Retry on Flaky, Catch of everything to Fix) -> Done,
    with the maximal plan [[Pick, Risky, Fix]]: Risky and Fix run in place in Pick's
    execution, one commit point. (No TimeoutSeconds: a co-located Task's timeout is the
    in-function timer, a thread, which the explorer's scheduler does not model.)"""
    def pick(e: Any, c: Any) -> dict:
        return {"x": nd() % 3, "t": tok(), "by": [c.function, c.instance]}

    def risky(e: Any, c: Any) -> dict:
        x = e["v"]["picked"]["x"]
        if x == 2:
            raise ValueError(f"x is 2 in {tok()}")
        if x == 1 and e["RetryCount"] == 0:
            raise Flaky(f"first attempt in {tok()}")
        return {"t": tok(), "by": [c.function, c.instance], "attempt": e["RetryCount"]}

    def fix(e: Any, c: Any) -> dict:
        return {"t": tok(), "by": [c.function, c.instance]}

    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Risky", ResultPath="$.picked"),
        "Risky": _task("Risky", "Done", ResultPath="$.risky",
                       Parameters={"RetryCount.$": "$$.State.RetryCount", "v.$": "$"},
                       Retry=[{"ErrorEquals": ["Flaky"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                       Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Fix"}]),
        "Fix": _task("Fix", ResultPath="$.fixed"),
        "Done": {"Type": "Pass", "End": True}}}
    spec = compiled("fused-sfn-chain", machine, {"Pick": pick, "Risky": risky, "Fix": fix}, {"job": 1},
                    about="Task -> Task (TimeoutSeconds, Retry, Catch to a Task), fused into one execution")
    plain = dict(spec.handlers)
    handlers = {fn: f"app.{fn}" for fn in spec.functions}
    groups = fusible_chains_of(spec, handlers)
    wf = apply_workflow(_workflow(spec), handlers, groups, {}, f"{spec.name}.plan")
    spec.functions = dict(wf.functions)
    for fn, ir in spec.functions.items():
        members = (ir.wrapper or {}).get("CoLocated") or {}
        if members:
            spec.handlers[fn] = colocated_handler(plain[fn], {m["Function"]: plain[m["Function"]]
                                                              for m in members.values()})

    def check(value: Any, view: Any) -> str | None:
        committed = view.committed_user_output("Pick")
        if not isinstance(value, dict) or [value.get("picked")] != committed[:1]:
            return f"picked {value.get('picked') if isinstance(value, dict) else value} != committed Pick {committed[:1]}"
        picked = value["picked"]
        ran = [("Pick", picked)] + [(n, value[k]) for n, k in (("Risky", "risky"), ("Fix", "fixed")) if k in value]
        for name, out in ran:
            if out.get("by") != [name, name]:
                return f"{name}'s handler ran as {out.get('by')}, not as its own function and invocation"
            if out.get("t") != picked["t"]:
                return f"{name} ran in execution {out.get('t')}, Pick in {picked['t']}: the group is one execution"
        if "fixed" in value:
            err = (value.get("error") or {}).get("Error")
            if not (err == "ValueError" and picked["x"] == 2):
                return f"Fix ran after {err} for x={picked['x']}"
        elif "risky" not in value or picked["x"] == 2 or value["risky"]["attempt"] != (1 if picked["x"] == 1 else 0):
            return f"Risky's outcome {value.get('risky')} for x={picked['x']}"
        return None
    spec.check_result = check
    return spec


def _workflow(spec: WorkflowSpec) -> Any:
    from runtime.ir import Workflow
    return Workflow(dict(spec.functions))


def fusible_chains_of(spec: WorkflowSpec, handlers: dict[str, str]) -> list[list[str]]:
    """colocate.fusible_chains of the spec's compiled workflow (asserted non-empty: the
    workflow exists to explore a fused group)."""
    groups = fusible_chains(_workflow(spec), handlers)
    assert groups, f"{spec.name}: nothing to fuse"
    return groups


def fused_sfn_workflows() -> list[WorkflowSpec]:
    return [fused_sfn_chain()]
