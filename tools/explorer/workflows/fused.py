"""Fused (co-located) and batched workflows (issue 25; runtime/fusion.py, docs/fusion.md).

Each is an IR app with nondeterministic members, transformed by the build step's own
`unumctl.tuning.colocate.apply_workflow` (the plan file's `fuse` / `batch`), and run with
handlers composed by `runtime.fusion.compose` as a fused bundle's loader composes them.
Duplicates and crashes reach inside a group like anywhere else: a crash before the group's
one commit re-runs every member, a duplicate after it adopts and re-plans the last member's
edges. `check_result` checks that the plan changed nothing the workflow computes: every
member's tag is on the result's path, in order, and the members of one group ran in one
execution (same token).
"""

from __future__ import annotations

from typing import Any, Callable

from runtime import fusion
from runtime.ir import Workflow
from unumctl.tuning.colocate import apply_workflow

from ..model import WorkflowSpec, ir_workflow
from .ir_apps import FANIN, tagged
from .nd import tok


def _fused(spec: WorkflowSpec, fuse: list[list[str]], batch: dict[str, int] | None = None) -> WorkflowSpec:
    """`spec` with the plan applied: fused IR, and each fused function's handler composed
    at call time (through `runtime.fusion.compose`, so a mutant of it applies)."""
    plain = dict(spec.handlers)
    wf = apply_workflow(Workflow(dict(spec.functions)), {fn: f"app.{fn}" for fn in spec.functions}, fuse,
                        batch, f"{spec.name}.plan")
    spec.functions = dict(wf.functions)
    for fn, ir in spec.functions.items():
        if ir.fused is not None:
            spec.handlers[fn] = _lazy(fusion.Fusion.from_dict(ir.fused), plain)
    return spec


def _lazy(fz: fusion.Fusion, handlers: dict[str, Callable]) -> Callable[[Any, Any], Any]:
    def handler(event: Any, ctx: Any) -> Any:
        return fusion.compose(fz, handlers)(event, ctx)
    return handler


def _tags(value: Any) -> list[str]:
    """The tags along a value built by `tagged` handlers, innermost first."""
    out: list[str] = []
    while isinstance(value, list) and len(value) == 2 and isinstance(value[1], str):
        out.insert(0, value[1])
        value = value[0]
    return out


def fused_chain() -> WorkflowSpec:
    """A -> B -> C -> D with fuse [[A, B], [C, D]]: two groups, the second ends the session
    (its commit point is the create of `result`)."""
    spec = ir_workflow("fused-chain", {
        "A": ({"Start": True, "Next": {"Name": "B"}}, tagged("A")),
        "B": ({"Next": {"Name": "C"}}, tagged("B")),
        "C": ({"Next": {"Name": "D"}}, tagged("C")),
        "D": ({}, tagged("D")),
    }, 1, terminals={"C"}, about="A -> B -> C -> D, fuse [[A, B], [C, D]]: two commit points")

    def check(value: Any, view: Any) -> str | None:
        tags = _tags(value)
        names = [t.split(":")[0] for t in tags]
        if names != ["A", "B", "C", "D"]:
            return f"members on the result's path: {names}, not A, B, C, D"
        if tags[0].split(":")[1] != tags[1].split(":")[1] or tags[2].split(":")[1] != tags[3].split(":")[1]:
            return f"the members of one group ran in different executions: {tags}"
        return None
    spec.check_result = check
    return _fused(spec, [["A", "B"], ["C", "D"]])


def fused_fanin_branch() -> WorkflowSpec:
    """A parallel fan-out whose second branch is a fused chain Low -> Low2: the static
    fan-in's `Values` name Low2, renamed to the group's committed invocation (Low)."""
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low2-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    spec = ir_workflow("fused-fanin-branch", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": (branch, tagged("U")),
        "Low": ({"Next": {"Name": "Low2"}}, tagged("L")),
        "Low2": (branch, tagged("L2")),
        "Join": ({}, tagged("J")),
    }, "x", terminals={"Join"}, about="fan-out, branch Low -> Low2 fused, static fan-in renamed")

    def check(value: Any, view: Any) -> str | None:
        if not (isinstance(value, list) and len(value) == 2 and isinstance(value[0], list)
                and len(value[0]) == 2):
            return f"Join's input is not the two branches' outputs: {value!r}"[:200]
        low = [t.split(":")[0] for t in _tags(value[0][1])]
        if low != ["S", "L", "L2"]:
            return f"the Low branch's path is {low}, not S, L, L2"
        return None
    spec.check_result = check
    return _fused(spec, [["Low", "Low2"]])


def fused_fanin_target() -> WorkflowSpec:
    """A fan-out whose static fan-in target Join runs in-process in the branch that completes
    its set (fuse [[Up, Join], [Low, Join]]), and is itself the head of [Join, End]: Join's
    own checkpoint (here: `result`) stays its commit point."""
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    spec = ir_workflow("fused-fanin-target", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": (branch, tagged("U")),
        "Low": (branch, tagged("L")),
        "Join": ({"Next": {"Name": "End"}}, tagged("J")),
        "End": ({}, tagged("E")),
    }, "x", terminals={"Join"}, about="fan-out, the fan-in target Join (fused with End) runs in-process")

    def check(value: Any, view: Any) -> str | None:
        names = [t.split(":")[0] for t in _tags(value)]
        if names[-2:] != ["J", "E"] or not isinstance(value[0][0], list) or len(value[0][0]) != 2:
            return f"not End(Join([Up, Low])): {value!r}"[:200]
        return None
    spec.check_result = check
    return _fused(spec, [["Up", "Join"], ["Low", "Join"], ["Join", "End"]])


def fused_map_region(items: int = 2) -> WorkflowSpec:
    """Split -Map-> Sq -Fan-in-> Sum -> End with fuse [[Split, Sq, Sum]]: the Map's items
    and their join run inside one invocation; only Sum's output is committed."""
    def split(e: Any, c: Any) -> list[str]:
        return [f"{i}:{tok()}" for i in range(items)]
    spec = ir_workflow("fused-map-region", {
        "Split": ({"Start": True, "Next": {"Name": "Sq", "Type": "Map"}}, split),
        "Sq": ({"Next": {"Name": "Sum", "Type": FANIN, "Values": ["Sq-UnumIndex-*"],
                         "Payload Modifiers": ["Pop"]}}, tagged("Sq")),
        "Sum": ({"Next": {"Name": "End"}}, tagged("Sum")),
        "End": ({}, tagged("End")),
    }, None, terminals={"End"}, about=f"Map region over {items} items fused into one invocation")

    def check(value: Any, view: Any) -> str | None:
        try:
            (sq_list, sum_tag), _end_tag = value
        except (TypeError, ValueError):
            return f"not End(Sum([Sq(item)...])): {value!r}"[:200]
        if len(sq_list) != items:
            return f"Sum got {len(sq_list)} item outputs, not {items}"
        toks = {sum_tag.split(":")[1]} | {s[1].split(":")[1] for s in sq_list} | \
               {s[0].split(":", 1)[1] for s in sq_list}
        if len(toks) != 1 or [int(s[0].split(":")[0]) for s in sq_list] != list(range(items)):
            return f"the region did not run in one execution, in item order: {sq_list}"[:200]
        return None
    spec.check_result = check
    return _fused(spec, [["Split", "Sq", "Sum"]])


def _indexed(name: str) -> Callable[[Any, Any], Any]:
    """Like `tagged`, with the member's fan-out index and size in its tag: [input,
    '<name>@<index>/<size>:<execution token>']."""
    def handler(e: Any, c: Any) -> list[Any]:
        return [e, f"{name}@{c.index}/{c.size}:{tok()}"]
    return handler


def fused_parallel_region() -> WorkflowSpec:
    """S -> [Up] and [Low -> Low2] -Fan-in-> Join -> End with fuse [[S, Up, Low, Low2, Join]]:
    a whole Parallel region in one invocation of S (its branches one after another, in
    branch order, each member with its branch's index); End is invoked from the group's
    one commit (Join's edge)."""
    fanin = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low2-UnumIndex-1"],
                      "Payload Modifiers": ["Pop"]}}
    spec = ir_workflow("fused-parallel-region", {
        "S": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": (fanin, _indexed("U")),
        "Low": ({"Next": {"Name": "Low2"}}, _indexed("L")),
        "Low2": (fanin, _indexed("L2")),
        "Join": ({"Next": {"Name": "End"}}, tagged("J")),
        "End": ({}, tagged("E")),
    }, "x", terminals={"End"}, about="fan-out S -> [Up], [Low -> Low2] -> Join fused whole, then End")
    paths = [["S", "U@0/2"], ["S", "L@1/2", "L2@1/2"]]

    def check(value: Any, view: Any) -> str | None:
        try:
            (tails, j_tag), _e_tag = value[0], value[1]
            assert isinstance(tails, list) and len(tails) == 2 and isinstance(j_tag, str)
        except (TypeError, ValueError, IndexError, AssertionError):
            return f"not End(Join([branch 0, branch 1])): {value!r}"[:200]
        tags = [_tags(t) for t in tails]
        got = [[t.split(":")[0] for t in ts] for ts in tags]
        if got != paths:
            return f"the branches' members on the result's path: {got}, not {paths} (branch order, indexes)"
        toks = {t.split(":")[1] for ts in tags for t in ts} | {j_tag.split(":")[1]}
        if len(toks) != 1:
            return f"the region did not run in one execution: {tags}, {j_tag}"[:200]
        return None
    spec.check_result = check
    return _fused(spec, [["S", "Up", "Low", "Low2", "Join"]])


def batched_map(items: int = 3, k: int = 2) -> WorkflowSpec:
    """Split -Map-> Sq -Fan-in-> Sum with batch {Sq: k}: ceil(items/k) branch invocations,
    and Sum sees the same ordered list of item outputs as without batching."""
    def split(e: Any, c: Any) -> list[str]:
        return [f"{i}:{tok()}" for i in range(items)]

    def sq(e: Any, c: Any) -> list[Any]:
        return [e, f"Sq{c.index}/{c.size}:{tok()}"]
    spec = ir_workflow("batched-map", {
        "Split": ({"Start": True, "Next": {"Name": "Sq", "Type": "Map"}}, split),
        "Sq": ({"Next": {"Name": "Sum", "Type": FANIN, "Values": ["Sq-UnumIndex-*"],
                         "Payload Modifiers": ["Pop"]}}, sq),
        "Sum": ({}, tagged("Sum")),
    }, None, terminals={"Sum"}, about=f"Map over {items} items, batch {{Sq: {k}}}")

    def check(value: Any, view: Any) -> str | None:
        outs = value[0] if isinstance(value, list) and value else None
        if not isinstance(outs, list) or len(outs) != items:
            return f"Sum got {outs!r} instead of {items} item outputs"[:200]
        for i, o in enumerate(outs):
            if not (isinstance(o, list) and int(str(o[0]).split(":")[0]) == i
                    and str(o[1]).startswith(f"Sq{i}/{items}:")):
                return f"item output {i} is {o!r}: not item {i} of {items}, in order"
        return None
    spec.check_result = check
    return _fused(spec, [], {"Sq": k})


def fused_workflows() -> list[WorkflowSpec]:
    return [fused_chain(), fused_fanin_branch(), fused_fanin_target(), fused_map_region(), batched_map(),
            fused_parallel_region()]
