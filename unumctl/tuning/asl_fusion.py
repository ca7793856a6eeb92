"""Fusion of compiled Step Functions Task chains (issue 25): a plan's `fuse` group of
compiled functions `[F1, F2, ...]` runs F2's Task state in place in F1's execution.

Source: seed 004 (Serverless Dataflows) Algorithm 1 (co-locate a task with its upstream);
seed 001 §4 and docs/stepfunctions.md (the compilation rule: a function per Lambda Task, its
wrapper walks the Pass/Choice states after it and routes, `$route == '<label>'`, to the next
Task's function). Runtime side: runtime.asl.wrapper (`CoLocated`).

F1's IR after fusion: its Wrapper gains `CoLocated: {<stop key of T2>: {"Function": F2,
"Handler": F2's handler}}` (and F2's `Integrations`, `Terminal`), and its `Next` loses the
route to F2 and gains F2's edges. The compiler gives every stop key of a state machine one
label (`Labels`, shared by all its functions), so F2's edges keep their meaning in F1; an
edge both have (the route to a scope's End function, an escalation to a catching join) is
kept once. The compiler marks routes of a function with several Scalar edges with `Pop`
(the engine pushes a fan-out frame for them, runtime.plan): the merged edges are rewritten
for the merged count. One commit point for the group (F1's checkpoint): a crash re-runs the
whole group, a duplicate adopts F1's checkpoint, as for IR fusion (docs/protocol.md).

Members are added in the group's order; each later member must be routed to by the merged
head (so `[F1, F2, F3]` may be a chain or the branches of a Choice after T1) and by no
function outside the group. Refused, one line each: a member that is not a compiled Lambda
Task function (a join, a synthesized Start/End, a Wait timer, a callback or `.sync` Task, a
Task whose FunctionName is chosen at run time), in another state machine or scope, the
Start function after the first, on a loop, inside or fanning out a Distributed Map, with
a different `Retry`/`Checkpoint`, or fused/batched otherwise.
"""

from __future__ import annotations

import json
import re
from typing import Any, Mapping, Sequence

from runtime.asl import distributed
from runtime.asl.integrations import registry as integrations
from runtime.asl.machine import scope_states
from runtime.asl.wrapper import stop_key
from runtime.ir import FunctionIR, load_function

__all__ = ["AslFusionError", "fuse_group", "is_compiled", "with_group_timeouts"]

_LABEL = re.compile(r"\$route == '([^']+)'")


class AslFusionError(ValueError):
    """A group of compiled functions that cannot be fused; colocate re-raises it as its
    FusionError (one line: plan file, group, why, fix)."""


def is_compiled(node: FunctionIR) -> bool:
    """True for a function compiled from a state machine (IR `Wrapper` of Kind asl)."""
    return isinstance(node.wrapper, dict) and node.wrapper.get("Kind") == "asl"


def _label(edge: Mapping[str, Any]) -> str | None:
    m = _LABEL.search(edge.get("Conditional") or "")
    return m.group(1) if m else None


def _category(edge: Mapping[str, Any], kinds: Mapping[str, str], definition: dict[str, Any]) -> str:
    """How the compiler made `edge` (unumctl.asl.compiler Compiler.edges): "route" (a Task,
    Wait or scope-end route, or a laned Map's lane), "escalation" (to a catching join),
    "branch" (a Parallel branch), or "other" (a Map edge, a Fan-in)."""
    key = kinds.get(_label(edge) or "", "")
    if edge["Type"] == "Fan-in" or not key:
        return "other"
    kind = key[0]
    if kind == "r":  # a join re-running a fan-out: a Map edge or Parallel branches
        _, scope, state = key.split("|", 2)
        kind = "m" if scope_states(definition, scope)[state]["Type"] == "Map" else "p"
    if kind == "p":
        return "branch"
    if edge["Type"] != "Scalar":
        return "other"
    if kind in ("t", "w", "e"):
        return "route"
    if kind == "x":
        return "escalation"
    return "other"


def _unfan(edges: list[dict[str, Any]], kinds: Mapping[str, str], definition: dict[str, Any],
           where: str, drop: Any = None) -> list[tuple[str, dict[str, Any]]]:
    """(category, edge) of a function's `Next` (all but the edge `drop`) with the `Pop` its
    Scalar fan-out adds removed."""
    fan = sum(1 for e in edges if e["Type"] == "Scalar") > 1
    out = []
    for e in edges:
        if e is drop:
            continue
        cat, e = _category(e, kinds, definition), dict(e)
        mods = list(e.get("Payload Modifiers") or [])
        if fan and cat in ("route", "escalation"):
            if not mods or mods[0] != "Pop":
                raise AslFusionError(f"{where}: the edge to {e['Name']} lacks the Pop of a routed edge; "
                                     "recompile the state machine")
            mods = mods[1:]
            if mods:
                e["Payload Modifiers"] = mods
            else:
                e.pop("Payload Modifiers", None)
        out.append((cat, e))
    return out


def _refan(edges: list[tuple[str, dict[str, Any]]], where: str) -> list[dict[str, Any]]:
    """The merged `Next`: `Pop` put back on routes and escalations when several Scalar edges
    remain (Compiler.edges). A Parallel branch edge is typed Map when it is the only Scalar
    edge and Scalar with `$0=k` otherwise: a merge that changes which is refused."""
    n = sum(1 for cat, _ in edges if cat in ("route", "escalation", "branch"))
    out = []
    for cat, e in edges:
        if cat == "branch" and (e["Type"] == "Scalar") != (n >= 2):
            raise AslFusionError(f"{where}: fusing changes how the one-branch Parallel to {e['Name']} "
                                 "is routed; leave this Task out of the group")
        if n >= 2 and cat in ("route", "escalation"):
            e = dict(e, **{"Payload Modifiers": ["Pop"] + list(e.get("Payload Modifiers") or [])})
        out.append(e)
    return out


def _suspends(resource: str) -> bool:
    """True for a Task that waits outside its function (runtime.asl.machine run_task's
    `callback`): a `.waitForTaskToken` Task, the Lambda one included, or a `.sync` one."""
    return (resource.endswith(integrations.CALLBACK_SUFFIX) or integrations.inline(resource)
            or integrations.suspends(integrations.find(resource)))


def _in_distributed(definition: dict[str, Any], scope: str) -> bool:
    """True when `scope` lies in the item processor of a Distributed Map."""
    while scope:
        parent, _, last = scope.rpartition("/")
        state = last.partition("#")[0]
        if "#" not in last and distributed.is_distributed(scope_states(definition, parent)[state]):
            return True
        scope = parent
    return False


def _starts_distributed(node: FunctionIR, kinds: Mapping[str, str], definition: dict[str, Any]) -> bool:
    """True when one of `node`'s edges fans out a Distributed Map (a Map or retry route)."""
    for e in node.next:
        key = kinds.get(_label({"Conditional": e.conditional.source if e.conditional else ""}) or "", "")
        if key[:1] in ("m", "r"):
            _, scope, state = key.split("|", 2)
            if distributed.is_distributed(scope_states(definition, scope)[state]):
                return True
    return False


def fuse_group(funcs: Mapping[str, FunctionIR], group: Sequence[str], handlers: Mapping[str, str],
               where: str, cyclic: set[str]) -> FunctionIR:
    """F1's IR (group[0]) running the Tasks of `group[1:]` in place (module docstring).

    `funcs`: the workflow's functions (name -> FunctionIR); `handlers`: function ->
    "module.function"; `cyclic`: functions on a loop; `where`: "<plan file>: fuse[i] [...]"
    for errors. Raises AslFusionError (one line naming the member, why and the fix)."""
    for fn in group:
        if fn not in funcs:
            raise AslFusionError(f"{where}: {fn!r} is not a function of the app (functions: "
                                 f"{', '.join(sorted(funcs))})")
        if not is_compiled(funcs[fn]):
            raise AslFusionError(f"{where}: {fn} is not compiled from the state machine; a group of "
                                 "compiled functions holds compiled functions only")
        if funcs[fn].fused is not None:
            raise AslFusionError(f"{where}: {fn} is fused or batched otherwise; list it in one group")
        if fn in cyclic:
            raise AslFusionError(f"{where}: {fn} is on a loop (Iterate edge); loops are not fused")
    head = funcs[group[0]]
    doc = head.to_dict()
    w1: dict[str, Any] = json.loads(json.dumps(head.wrapper))
    kinds = {label: key for key, label in w1.get("Labels", {}).items()}
    definition = w1["Definition"]
    colocated: dict[str, dict[str, str]] = dict(w1.get("CoLocated") or {})
    integrations_ = [list(x) for x in w1.get("Integrations") or []]
    terminal = bool(w1.get("Terminal"))
    edges = [dict(e) for e in doc.get("Next", [])]
    members = set(group)
    for fn in group[1:]:
        node = funcs[fn]
        w2 = node.wrapper
        assert isinstance(w2, dict)
        if w2.get("Machine") != w1.get("Machine") or w2.get("Definition") != definition:
            raise AslFusionError(f"{where}: {fn} runs another state machine than {group[0]}; fuse the "
                                 "Tasks of one state machine")
        task = w2.get("Task")
        why = ("is the Start function" if node.start else "is a Map/Parallel join" if w2.get("Join")
               else "resumes after a Wait timer" if w2.get("Wait") else "is a synthesized function"
               if task is None or w2.get("End") else None)
        if why is None and _suspends(scope_states(definition, w2["Scope"])[str(task)].get("Resource") or ""):
            why = "hosts a callback (.waitForTaskToken) or .sync Task"
        if why is None and _in_distributed(definition, w2["Scope"]):
            why = "runs in a Distributed Map's item processor"
        if why is None and _starts_distributed(node, kinds, definition):
            why = "starts a Distributed Map"
        if why is not None:
            raise AslFusionError(f"{where}: {fn} {why}; only a Lambda Task's function is fused after the "
                                 "first member: leave it out of the group")
        if w2.get("Scope") != w1.get("Scope"):
            raise AslFusionError(f"{where}: {fn}'s Task is in scope {w2.get('Scope')!r}, {group[0]}'s in "
                                 f"{w1.get('Scope')!r}; fuse Tasks of one Map iterator or Parallel branch")
        if node.retry != head.retry or node.checkpoint != head.checkpoint:
            raise AslFusionError(f"{where}: {fn}'s Retry/Checkpoint differ from {group[0]}'s; the group is "
                                 "one retry unit with the first member's policy: make them equal")
        # the route to fn: the label of its Task's stop key (with the function's name for a
        # FunctionName chosen at run time: one variant per candidate function)
        into = [e for e in edges if e["Name"] == fn]
        key = kinds.get(_label(into[0]) or "", "") if len(into) == 1 else ""
        base = stop_key("t", w2["Scope"], task)
        if not (key == base or key.startswith(base + "|")) or into[0]["Type"] != "Scalar" \
                or into[0].get("Delay") or into[0].get("Iterate") \
                or list(into[0].get("Payload Modifiers") or []) not in ([], ["Pop"]):
            raise AslFusionError(f"{where}: {fn}'s Task {task!r} is not reached from "
                                 f"{' / '.join(group[:group.index(fn)])} by a route; list the functions "
                                 "in run order, each reached from the earlier ones")
        outside = sorted(src for src, n in funcs.items() if src not in members
                         for e in n.next if e.target == fn)
        if outside:
            raise AslFusionError(f"{where}: {fn} is also invoked by {', '.join(outside)}; only a function "
                                 "reached from its group alone can be fused")
        mine = _unfan(edges, kinds, definition, where, drop=into[0])
        theirs = _unfan([dict(e) for e in node.to_dict().get("Next", [])], kinds, definition, where)
        seen = {json.dumps(e, sort_keys=True) for _, e in mine}
        merged = mine + [(c, e) for c, e in theirs if json.dumps(e, sort_keys=True) not in seen]
        edges = _refan(merged, where)
        colocated[key] = {"Function": fn, "Handler": handlers[fn]}
        for x in w2.get("Integrations") or []:
            if list(x) not in integrations_:
                integrations_.append(list(x))
        terminal = terminal or bool(w2.get("Terminal"))
    w1["CoLocated"] = colocated
    w1["Terminal"] = terminal
    if integrations_:
        w1["Integrations"] = integrations_
    doc["Wrapper"] = w1
    if edges:
        doc["Next"] = edges
    else:
        doc.pop("Next", None)
    try:
        return load_function(doc, where)
    except ValueError as exc:  # a bug of this module, not the user's: say where it came from
        raise AslFusionError(f"{where}: the fused IR is not valid: {exc}") from None


def group_timeout(funcs: Mapping[str, FunctionIR], group: Sequence[str], timeouts: Mapping[str, int],
                  cap: int) -> int:
    """The function timeout (s) the head of a fused compiled group needs: the longest chain of
    members' `timeouts` (s) along the group's routes from the head (a Choice's routes are
    alternatives, a chain's add up), at most `cap` (the manifest's maximum)."""
    inside = set(group)
    memo: dict[str, int] = {}

    def longest(fn: str) -> int:
        if fn not in memo:
            nxt = [longest(e.target) for e in funcs[fn].next if e.target in inside and e.target != fn]
            memo[fn] = int(timeouts[fn]) + max(nxt, default=0)
        return memo[fn]
    return min(cap, longest(group[0]))


def with_group_timeouts(app: Any, groups: Sequence[Sequence[str]], before: Any) -> Any:
    """`app` (unumctl.manifest.App) with each compiled group's head given the timeout of
    group_timeout (never lowered) along the routes of `before` (the workflow before fusion);
    a copy, `app` is unchanged."""
    from dataclasses import replace

    from ..asl import MAX_FUNCTION_TIMEOUT
    manifest = app.manifest.model_copy(deep=True)
    fns = manifest.functions
    timeouts = {n: s.timeout for n, s in app.manifest.functions.items()}
    for g in groups:
        need = group_timeout(before.functions, g, timeouts, MAX_FUNCTION_TIMEOUT)
        fns[g[0]].timeout = max(fns[g[0]].timeout, need)
    return replace(app, manifest=manifest)
