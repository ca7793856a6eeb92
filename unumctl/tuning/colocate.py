"""Co-location (fusion) and batching: the plan file's `fuse` and `batch` applied to an app's
IR at build time, and chosen from measured statistics.

Source: seed 004 (Serverless Dataflows) Algorithm 1 — cluster short tasks with large
outputs onto the upstream worker so that intermediate data never goes to external storage —
and AWS Step Functions' ItemBatcher (several Map items per child execution). The runtime
side is runtime/fusion.py; what is fusible, and why a fused group is still exactly-once, is
in docs/fusion.md and docs/protocol.md ("Fused groups").

`apply(app, fuse, batch)` returns the App whose IR the bundles get:
  * a group `[A, B, ...]` becomes A's IR with the LAST member's `Next` and a `Fused` field
    listing the members' handlers (runtime.fusion.Fusion); `unumctl.build` puts each later
    member's code in A's archive under `unum_fused/<Member>/`. The group's output is
    committed once, under A's invocation name, so every `Values` entry naming a later member
    is renamed to A. Later members stay deployed, unused;
  * `batch: {T: k}` gives T's Map predecessor `BatchOut: k`, T `BatchIn` and T's join
    `FlattenIn`: one branch invocation runs k items and the join sees the same ordered list.

`choose(app, stats, ...)` returns (fuse, batch, reasons) from FunctionStats/EdgeStats
(unumctl.tuning.metrics, issue 25 contract) and the cloud's prices (unumctl/cost/prices.json).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from runtime.fusion import Fusion, Step
from runtime.ir import Edge, FunctionIR, ValueTemplate, Workflow, build_workflow
from runtime.errors import IRError

PLAN_FILE = "unumctl.plan.yaml"


class FusionError(ValueError):
    """A `fuse` group or `batch` entry the runtime cannot run as asked; the message is one
    line naming the plan file, the group or function, why, and the fix."""


# ---------------------------------------------------------------------------- apply

def _preds(funcs: Mapping[str, FunctionIR], skip: set[str]) -> dict[str, list[tuple[str, Edge]]]:
    """target -> [(source, edge)] over the nodes not in `skip` (Fan-in `Values` not counted)."""
    out: dict[str, list[tuple[str, Edge]]] = {}
    for name, node in funcs.items():
        if name in skip:
            continue
        for e in node.next:
            out.setdefault(e.target, []).append((name, e))
    return out


def _named_in_values(funcs: Mapping[str, FunctionIR], skip: set[str]) -> dict[str, list[str]]:
    """function -> the functions whose Fan-in `Values` name it (nodes in `skip` left out)."""
    out: dict[str, list[str]] = {}
    for name, node in funcs.items():
        if name in skip:
            continue
        for e in node.next:
            for v in e.values:
                out.setdefault(v.function, []).append(name)
    return out


def _plain(e: Edge) -> bool:
    return e.conditional is None and not e.modifiers and e.delay is None and not e.iterate and not e.exits


def _steps(funcs: Mapping[str, FunctionIR], group: Sequence[str], handlers: Mapping[str, str],
           where: str) -> list[Step]:
    """The run steps of `group` (FusionError naming `where` when it is not fusible)."""
    steps = [Step(group[0], handlers[group[0]], "first")]
    i = 0
    while i < len(group) - 1:
        a, b = group[i], group[i + 1]
        node = funcs[a]
        if len(node.next) != 1 or node.next[0].target != b:
            raise FusionError(f"{where}: {a}'s only edge must lead to {b} (it has "
                              f"{[e.target for e in node.next] or 'none'}); a group follows one path")
        e = node.next[0]
        if e.type == "Scalar" and _plain(e):
            steps.append(Step(b, handlers[b], "scalar"))
            i += 1
            continue
        if e.type == "Map" and e.conditional is None and not e.modifiers:
            if i + 2 >= len(group):
                raise FusionError(f"{where}: the Map over {b} must be followed in the group by its join "
                                  f"(the Fan-in target of {b}): a map region is fused whole")
            j = group[i + 2]
            f = funcs[b].next
            if not (len(f) == 1 and f[0].type == "Fan-in" and f[0].target == j
                    and [v.source for v in f[0].values] == [f"{b}-UnumIndex-*"]
                    and [m.source for m in f[0].modifiers] == ["Pop"] and f[0].conditional is None):
                raise FusionError(f"{where}: {b}'s only edge must be the Fan-in to {j} over "
                                  f"['{b}-UnumIndex-*'] with [Pop] for the map region {a}, {b}, {j}")
            steps += [Step(b, handlers[b], "map"), Step(j, handlers[j], "join")]
            i += 2
            continue
        why = ("a Fan-in target runs in its own invocation unless the whole Map region "
               "[source, Map target, join] is fused" if e.type == "Fan-in" else
               "the edge has a Conditional, Payload Modifiers, a Delay or loops")
        raise FusionError(f"{where}: {a} -> {b} ({e.type}) is not fusible: {why}")
    return steps


def apply_workflow(wf: Workflow, handlers: Mapping[str, str], fuse: Iterable[Sequence[str]] = (),
                   batch: Mapping[str, int] | None = None, source: str = PLAN_FILE) -> Workflow:
    """The workflow with `fuse` groups and `batch` entries applied (module docstring).

    `handlers`: function -> its "module.function" handler. Raises FusionError (one line:
    `<source>: fuse[i] [A, B]: ...` or `<source>: batch.T: ...`) for an unknown function, a
    function in two groups, a member with a `Wrapper` (compiled ASL), a `Retry` or a
    `Checkpoint` differing from the first member's, a Start function after the first, a
    member on a cycle, a link that is not an unconditional Scalar edge or a whole Map
    region, a member invoked from outside the group, or a batch target that is not a plain
    Map target with a join over its branches."""
    funcs = dict(wf.functions)
    batch = dict(batch or {})
    absorbed: dict[str, str] = {}  # later member -> group head
    kinds: dict[str, str] = {}
    cyclic = {n for n, f in funcs.items() for e in f.next if e.iterate or e.exits} | \
             {e.target for f in funcs.values() for e in f.next if e.iterate} | \
             {x for f in funcs.values() for e in f.next for x in e.exits}
    groups = [list(g) for g in fuse]
    seen: dict[str, int] = {}
    new_nodes: dict[str, FunctionIR] = {}
    for gi, group in enumerate(groups):
        where = f"{source}: fuse[{gi}] {group}"
        if len(group) < 2:
            raise FusionError(f"{where}: a group has at least 2 functions")
        for fn in group:
            if fn not in funcs:
                raise FusionError(f"{where}: {fn!r} is not a function of the app "
                                  f"(functions: {', '.join(sorted(funcs))})")
            if fn in seen:
                raise FusionError(f"{where}: {fn} is already in fuse[{seen[fn]}]; a function is in one group")
            seen[fn] = gi
            node = funcs[fn]
            if node.wrapper is not None or node.fused is not None:
                raise FusionError(f"{where}: {fn} runs a Wrapper (compiled Step Functions) and cannot be fused")
            if fn in cyclic:
                raise FusionError(f"{where}: {fn} is on a cycle (Iterate edge); loops are not fused")
        head = funcs[group[0]]
        for fn in group[1:]:
            node = funcs[fn]
            if node.start:
                raise FusionError(f"{where}: {fn} is the Start function; only a group's first member may be")
            if node.retry != head.retry or node.checkpoint != head.checkpoint:
                raise FusionError(f"{where}: {fn}'s Retry/Checkpoint differ from {group[0]}'s; the group "
                                  f"is one retry unit with the first member's policy: make them equal")
        steps = _steps(funcs, group, handlers, where)
        for s in steps[1:]:
            absorbed[s.function] = group[0]
            kinds[s.function] = s.kind
        new_nodes[group[0]] = replace(head, next=funcs[group[-1]].next,
                                      fused=Fusion(tuple(steps)).to_dict())
    # a later member is invoked only by its predecessor in the group (a join: by its Map
    # target's Fan-in, and an empty Map's EmptyJoin from the region's source)
    for fn, head in absorbed.items():
        grp = groups[seen[fn]]
        p = grp.index(fn)
        outside = sorted({src for src, node in funcs.items() for e in node.next
                          if (e.target == fn and src != grp[p - 1])
                          or (e.empty_join and e.empty_join[0] == fn
                              and not (kinds[fn] == "join" and src == grp[p - 2]))})
        if outside:
            raise FusionError(f"{source}: fuse[{seen[fn]}] {grp}: {fn} is also invoked by "
                              f"{', '.join(outside)}; only a function reached from its group alone can be fused")
    funcs.update(new_nodes)
    # Values naming a later member name the group's committed invocation (the head's)
    named = _named_in_values(funcs, set(absorbed))
    for fn, head in absorbed.items():
        if kinds[fn] == "map" and named.get(fn):
            raise FusionError(f"{source}: fuse[{seen[fn]}]: {fn}'s items run inside the group, but "
                              f"{named[fn][0]}'s Fan-in names them")
    renamed: dict[str, FunctionIR] = {}
    for name, node in funcs.items():
        if name in absorbed or not any(v.function in absorbed for e in node.next for v in e.values):
            continue
        edges = []
        for e in node.next:
            vals = tuple(ValueTemplate.parse(absorbed[v.function] + v.source[len(v.function):])
                         if v.function in absorbed else v for v in e.values)
            edges.append(replace(e, values=vals))
        renamed[name] = replace(node, next=tuple(edges))
    funcs.update(renamed)
    funcs = _apply_batch(funcs, batch, absorbed, source, handlers)
    try:
        return build_workflow((funcs[n], wf.sources.get(n, source)) for n in wf.functions)
    except IRError as exc:  # a bug of this module, not the user's: say where it came from
        raise FusionError(f"{source}: the fused IR is not valid: {exc}") from None


def _apply_batch(funcs: dict[str, FunctionIR], batch: Mapping[str, int], absorbed: Mapping[str, str],
                 source: str, handlers: Mapping[str, str]) -> dict[str, FunctionIR]:
    """`batch` applied to `funcs` (after fusion; `absorbed`: later members of groups)."""
    def fusion_of(node: FunctionIR, handler: str) -> Fusion:
        if node.fused is not None:
            return Fusion.from_dict(node.fused)
        return Fusion((Step(node.name, handler, "first"),))

    preds = _preds(funcs, set(absorbed))
    for t, k in sorted(batch.items()):
        where = f"{source}: batch.{t}"
        if t not in funcs:
            raise FusionError(f"{where}: not a function of the app (functions: {', '.join(sorted(funcs))})")
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise FusionError(f"{where}: {k!r} must be an integer >= 1 (items per branch invocation)")
        if t in absorbed:
            raise FusionError(f"{where}: {t} runs inside fuse group of {absorbed[t]}; batch the group's head")
        into = preds.get(t, [])
        if len(into) != 1 or into[0][1].type != "Map" or into[0][1].conditional or into[0][1].modifiers \
                or len(funcs[into[0][0]].next) != 1:
            raise FusionError(f"{where}: {t} must be the target of exactly one plain Map edge (no "
                              f"Conditional or Payload Modifiers), its source's only edge")
        src = into[0][0]
        out = funcs[t].next
        if not (len(out) == 1 and out[0].type == "Fan-in"
                and [v.source for v in out[0].values] == [f"{t}-UnumIndex-*"]
                and [m.source for m in out[0].modifiers] == ["Pop"] and out[0].conditional is None):
            raise FusionError(f"{where}: {t}'s only edge must be a Fan-in over ['{t}-UnumIndex-*'] with "
                              "[Pop] (its join sees the items' outputs in order)")
        join = out[0].target
        if join in batch or src in batch or join in absorbed:
            raise FusionError(f"{where}: its source {src} or join {join} is batched or fused away too; "
                              "batch one level of a nested Map")
        sf, tf, jf = (fusion_of(funcs[n], handlers[n]) for n in (src, t, join))
        funcs[src] = replace(funcs[src], fused=replace(sf, batch_out=k).to_dict())
        funcs[t] = replace(funcs[t], fused=replace(tf, batch_in=True).to_dict())
        funcs[join] = replace(funcs[join], fused=replace(jf, flatten_in=True).to_dict())
    return funcs


def apply(app: Any, fuse: Iterable[Sequence[str]] = (), batch: Mapping[str, int] | None = None,
          source: str | None = None) -> Any:
    """The App (unumctl.manifest.App) whose workflow has `fuse` and `batch` applied (the plan
    file's fields, issue 25 contract); `app` itself is unchanged. `source` names the plan
    file in errors (default `<app>/unumctl.plan.yaml`). Raises FusionError (module
    docstring of apply_workflow)."""
    fuse = [list(g) for g in fuse or ()]
    if not fuse and not batch:
        return app
    handlers = {n: s.handler for n, s in app.manifest.functions.items()}
    src = source or str(Path(app.root) / PLAN_FILE)
    return replace(app, workflow=apply_workflow(app.workflow, handlers, fuse, batch, src))


def apply_plan(app: Any, plan: Any, source: str | None = None) -> Any:
    """`apply(app, plan.fuse, plan.batch)` for a planfile.TunePlan (or None: `app`)."""
    if plan is None:
        return app
    return apply(app, getattr(plan, "fuse", None) or (), getattr(plan, "batch", None) or {}, source)
