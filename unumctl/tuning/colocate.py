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
  * a parallel region `[A, <branch 0 members>, <branch 1 members>, ..., J, ...]` (A's `Next`
    a static fan-out of plain Scalar edges, each branch a chain ending in the Fan-in to J
    over exactly the branch tails with [Pop]) runs its branches one after another, in
    branch order, inside the group (`branch` steps, runtime.fusion);
  * a group ending with a Fan-in link `[..., X, J]` runs J in-process in the execution of X
    that completes J's fan-in (`Fused.InProcess`; J keeps its own IR and checkpoint);
  * `batch: {T: k}` gives T's Map predecessor `BatchOut: k`, T `BatchIn` and T's join
    `FlattenIn`: one branch invocation runs k items and the join sees the same ordered list.

`choose(app, stats, ...)` returns (fuse, batch, reasons) from FunctionStats/EdgeStats
(unumctl.tuning.metrics, issue 25 contract) and the cloud's prices (unumctl/cost/prices.json).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from runtime.fusion import Fusion, Step
from runtime.ir import Edge, FunctionIR, ValueTemplate, Workflow, build_workflow
from runtime.errors import IRError

from .. import registry
from .asl_fusion import AslFusionError, fuse_group, is_compiled, with_group_timeouts

__all__ = ["FusionError", "apply", "apply_plan", "apply_workflow", "choose", "fusible_chains"]

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


def _tail(funcs: Mapping[str, FunctionIR], group: Sequence[str]) -> str | None:
    """The group's last function when it is a fan-in target run in-process (the link into it
    is the previous member's only edge, a Fan-in, not the join of a map region in the
    group), else None."""
    if len(group) < 2 or group[-2] not in funcs:
        return None
    prev = funcs[group[-2]].next
    if not (len(prev) == 1 and prev[0].type == "Fan-in" and prev[0].target == group[-1]):
        return None
    if len(group) >= 3 and group[-3] in funcs and [e.type for e in funcs[group[-3]].next] == ["Map"] \
            and funcs[group[-3]].next[0].target == group[-2]:
        return None  # a map region's join
    if any(f in funcs and funcs[f].scalar_fanout for f in group[:-2]) \
            and all(v.function in group for v in prev[0].values):
        return None  # a parallel region's join: every branch it joins is in the group
    return group[-1]


def _parallel(funcs: Mapping[str, FunctionIR], group: Sequence[str], i: int, handlers: Mapping[str, str],
              where: str) -> tuple[list[Step], int]:
    """The steps of the parallel region whose source is group[i] (a static Scalar fan-out:
    `branch` and `scalar` steps, then the `join`), and the group index of its join.
    FusionError unless the group lists, after the source, every branch in `Next` order (a
    chain of plain Scalar links ending in the Fan-in to one join J whose `Values` are exactly
    the branch tails `<tail_k>-UnumIndex-k` with `[Pop]`), then J."""
    a = group[i]
    edges = funcs[a].next
    heads = [e.target for e in edges]
    if not all(e.type == "Scalar" and _plain(e) for e in edges):
        raise FusionError(f"{where}: {a} fans out to {heads} with an edge that is not an unconditional "
                          "Scalar edge without Payload Modifiers or Delay; only a static fan-out is fused")
    fix = (f"list {a}, then each branch's members in order (branch heads: {', '.join(heads)}), then their Fan-in "
           "target: a parallel region is fused whole")
    steps: list[Step] = []
    tails: list[str] = []
    join: str | None = None
    pos = i + 1
    for k, head in enumerate(heads):
        if pos >= len(group) or group[pos] != head:
            got = group[pos] if pos < len(group) else "the group's end"
            raise FusionError(f"{where}: branch {k} of {a} starts with {head}, not {got}; {fix}")
        steps.append(Step(head, handlers[head], "branch"))
        while True:
            m = funcs[group[pos]].next
            if len(m) == 1 and m[0].type == "Scalar" and _plain(m[0]) and pos + 1 < len(group) \
                    and group[pos + 1] == m[0].target:
                pos += 1
                steps.append(Step(group[pos], handlers[group[pos]], "scalar"))
                continue
            if len(m) == 1 and m[0].type == "Fan-in":
                break
            raise FusionError(f"{where}: branch {k} of {a} must be a chain of plain Scalar links ending "
                              f"in a Fan-in, but {group[pos]}'s edges lead to {[e.target for e in m] or 'none'}; "
                              f"{fix}")
        e = m[0]
        if join is None:
            join = e.target
        if e.target != join:
            raise FusionError(f"{where}: branch {k} of {a} ends in the Fan-in to {e.target}, branch 0 in "
                              f"the one to {join}; the branches of a fused region join in one function")
        tails.append(group[pos])
        pos += 1
    assert join is not None
    want = [f"{t}-UnumIndex-{k}" for k, t in enumerate(tails)]
    for t in tails:
        e = funcs[t].next[0]
        if not ([v.source for v in e.values] == want and [mm.source for mm in e.modifiers] == ["Pop"]
                and e.conditional is None and e.quorum is None and not e.exits and e.delay is None):
            raise FusionError(f"{where}: {t}'s Fan-in to {join} must have Values {want} (the branch tails "
                              f"in branch order) and Payload Modifiers ['Pop'], nothing else, for the "
                              f"parallel region of {a}")
    if pos >= len(group) or group[pos] != join:
        raise FusionError(f"{where}: the branches of {a} join in {join}, which must follow them in the "
                          f"group; {fix}")
    steps.append(Step(join, handlers[join], "join"))
    return steps, pos


def _steps(funcs: Mapping[str, FunctionIR], group: Sequence[str], handlers: Mapping[str, str],
           where: str) -> list[Step]:
    """The run steps of `group` (FusionError naming `where` when it is not fusible)."""
    steps = [Step(group[0], handlers[group[0]], "first")]
    i = 0
    while i < len(group) - 1:
        a, b = group[i], group[i + 1]
        node = funcs[a]
        if node.scalar_fanout:  # a parallel region [a, branch members..., join]
            region, i = _parallel(funcs, group, i, handlers, where)
            steps += region
            continue
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
        why = ("a fan-in target is fused only as a group's last member (it then runs in-process in "
               "the branch that completes its fan-in) or with its whole Map region [source, Map "
               "target, join]" if e.type == "Fan-in" else
               "the edge has a Conditional, Payload Modifiers, a Delay or loops")
        raise FusionError(f"{where}: {a} -> {b} ({e.type}) is not fusible: {why}")
    return steps


def _callers(steps: Sequence[Step]) -> dict[str, tuple[set[str], str | None]]:
    """Later member -> (the members whose edges may invoke it, the member whose Map's
    EmptyJoin may invoke it, or None): a scalar step its predecessor, a branch step the
    region's source, a join its Map target (and EmptyJoin from the Map's source) or its
    region's branch tails."""
    out: dict[str, tuple[set[str], str | None]] = {}
    source: str | None = None
    tails: list[str] | None = None
    for k in range(1, len(steps)):
        s, prev = steps[k], steps[k - 1].function
        if s.kind == "branch":
            if steps[k - 1].kind not in ("branch", "scalar") or source is None:
                source, tails = prev, []
            else:
                assert tails is not None
                tails.append(prev)
            out[s.function] = ({source}, None)
        elif s.kind == "join" and steps[k - 1].kind != "map":
            assert tails is not None
            out[s.function] = (set(tails) | {prev}, None)
            source = tails = None
        elif s.kind == "join":
            out[s.function] = ({prev}, steps[k - 2].function)
        else:
            out[s.function] = ({prev}, None)
    return out


def apply_workflow(wf: Workflow, handlers: Mapping[str, str], fuse: Iterable[Sequence[str]] = (),
                   batch: Mapping[str, int] | None = None, source: str = PLAN_FILE) -> Workflow:
    """The workflow with `fuse` groups and `batch` entries applied (module docstring).

    `handlers`: function -> its "module.function" handler. Raises FusionError (one line:
    `<source>: fuse[i] [A, B]: ...` or `<source>: batch.T: ...`) for an unknown function, a
    function in two groups, a member with a `Wrapper` (compiled ASL), a `Retry` or a
    `Checkpoint` differing from the first member's, a Start function after the first, a
    member on a cycle, a link that is not an unconditional Scalar edge, a whole Map region or
    a whole parallel region (_parallel), a member invoked from outside the group, a
    branch member named by another Fan-in's `Values`, or a batch target that is not a plain
    Map target with a join over its branches. A group of functions compiled from a state
    machine is fused by unumctl.tuning.asl_fusion.fuse_group (its own rules and errors)."""
    funcs = dict(wf.functions)
    batch = dict(batch or {})
    absorbed: dict[str, str] = {}  # later member -> group head
    kinds: dict[str, str] = {}
    callers: dict[str, tuple[set[str], str | None]] = {}
    inner: set[str] = set()  # members run inside the group's fan-out (map items, branches)
    cyclic = _cyclic(funcs)
    groups = [list(g) for g in fuse]
    seen: dict[str, int] = {}
    new_nodes: dict[str, FunctionIR] = {}
    tails: dict[str, list[str]] = {}  # group head -> fan-in targets it runs in-process
    compiled_absorbed: dict[str, str] = {}  # h34: later members of fused compiled Task chains
    for gi, full in enumerate(groups):
        where = f"{source}: fuse[{gi}] {full}"
        if len(full) < 2:
            raise FusionError(f"{where}: a group has at least 2 functions")
        # --- h34 (issue 25): a group of compiled Step Functions functions (unumctl/tuning/asl_fusion.py)
        if any(f in funcs and is_compiled(funcs[f]) for f in full):
            for fn in full:
                if fn in seen:
                    raise FusionError(f"{where}: {fn} is already in fuse[{seen[fn]}]; a function is in one group")
                seen[fn] = gi
            try:
                new_nodes[full[0]] = fuse_group(funcs, full, handlers, where, cyclic)
            except AslFusionError as exc:
                raise FusionError(str(exc)) from None
            compiled_absorbed.update((fn, full[0]) for fn in full[1:])
            continue
        # --- end h34
        group, tail = list(full), _tail(funcs, full)
        if tail is not None:  # a fan-in target fused into this branch: runs in-process
            group = full[:-1]
            t = funcs[tail] if tail in funcs else None
            if t is not None and (t.wrapper is not None or tail in cyclic):
                raise FusionError(f"{where}: the fan-in target {tail} runs a Wrapper or is on a cycle; "
                                  "it cannot run in-process")
            tails.setdefault(group[0], []).append(tail)
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
        if len(group) == 1:  # only the in-process fan-in target
            continue
        for fn in group[1:]:
            node = funcs[fn]
            if node.start:
                raise FusionError(f"{where}: {fn} is the Start function; only a group's first member may be")
            if node.retry != head.retry or node.checkpoint != head.checkpoint:
                raise FusionError(f"{where}: {fn}'s Retry/Checkpoint differ from {group[0]}'s; the group "
                                  f"is one retry unit with the first member's policy: make them equal")
        steps = _steps(funcs, group, handlers, where)
        callers.update(_callers(steps))
        region = False
        for s in steps[1:]:
            absorbed[s.function] = group[0]
            kinds[s.function] = s.kind
            region = s.kind == "branch" or (region and s.kind == "scalar")
            if region or s.kind == "map":
                inner.add(s.function)
        new_nodes[group[0]] = replace(head, next=funcs[group[-1]].next,
                                      fused=Fusion(tuple(steps)).to_dict())
    # a later member is invoked only by its predecessor in the group (a join: by its Map
    # target's Fan-in, and an empty Map's EmptyJoin from the region's source, or by its
    # parallel region's branch tails; a branch's first member: by the region's source)
    for fn in absorbed:
        grp = groups[seen[fn]]
        ok, empty_ok = callers[fn]
        outside = sorted({src for src, node in funcs.items() for e in node.next
                          if (e.target == fn and src not in ok)
                          or (e.empty_join and e.empty_join[0] == fn and src != empty_ok)})
        if outside:
            raise FusionError(f"{source}: fuse[{seen[fn]}] {grp}: {fn} is also invoked by "
                              f"{', '.join(outside)}; only a function reached from its group alone can be fused")
    funcs.update(new_nodes)
    for fn, hd in compiled_absorbed.items():  # h34: renamed in Values like any later member
        absorbed[fn], kinds[fn] = hd, "scalar"
    # Values naming a later member name the group's committed invocation (the head's)
    named = _named_in_values(funcs, set(absorbed))
    for fn in absorbed:
        if kinds[fn] == "map" and named.get(fn):
            raise FusionError(f"{source}: fuse[{seen[fn]}]: {fn}'s items run inside the group, but "
                              f"{named[fn][0]}'s Fan-in names them")
        if fn in inner and named.get(fn):
            raise FusionError(f"{source}: fuse[{seen[fn]}] {groups[seen[fn]]}: {fn} runs in a branch inside the group, but "
                              f"{named[fn][0]}'s Fan-in names it; leave that region unfused")
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
    for hd, targets in tails.items():
        for tgt in targets:
            gi = next(i for i, g in enumerate(groups) if g[0] == hd and g[-1] == tgt)
            if tgt in absorbed or (funcs[tgt].fused or {}).get("InProcess"):
                raise FusionError(f"{source}: fuse[{gi}] {groups[gi]}: the fan-in target {tgt} is fused "
                                  "into another group's run or runs fan-in targets in-process itself")
        fz = (Fusion.from_dict(funcs[hd].fused) if funcs[hd].fused is not None
              else Fusion((Step(hd, handlers[hd], "first"),)))
        inproc = tuple({"Function": tgt, "Handler": handlers[tgt], "Ir": funcs[tgt].to_dict()}
                       for tgt in dict.fromkeys(targets))
        funcs[hd] = replace(funcs[hd], fused=replace(fz, in_process=inproc).to_dict())
    try:
        return build_workflow((funcs[n], wf.sources.get(n, source)) for n in wf.functions)
    except IRError as exc:  # a bug of this module, not the user's: say where it came from
        raise FusionError(f"{source}: the fused IR is not valid: {exc}") from None


def _cyclic(funcs: Mapping[str, FunctionIR]) -> set[str]:
    """The functions on a loop: sources and targets of Iterate edges and loop exits."""
    return {n for n, f in funcs.items() for e in f.next if e.iterate or e.exits} | \
        {e.target for f in funcs.values() for e in f.next if e.iterate} | \
        {x for f in funcs.values() for e in f.next for x in e.exits}


# --- h34 (issue 25): fused compiled Step Functions Task chains
def _candidate_links(wf: Workflow) -> list[tuple[str, Edge]]:
    """The links choose() prices, (source, edge): a plain function's only edge, and every
    Scalar route of a compiled Step Functions function to another compiled function (a
    chain link of unumctl.tuning.asl_fusion; apply_workflow decides which are fusible)."""
    out = []
    for a, node in wf.functions.items():
        if is_compiled(node):
            out += [(a, e) for e in node.next if e.type == "Scalar" and is_compiled(wf.functions[e.target])]
        elif len(node.next) == 1 and node.wrapper is None:
            out.append((a, node.next[0]))
    return out


def fusible_chains(wf: Workflow, handlers: Mapping[str, str]) -> list[list[str]]:
    """The maximal `fuse` groups of compiled Step Functions functions in `wf`: every Task
    function that unumctl.tuning.asl_fusion can run in place in the function routing to it
    is fused into it, transitively (a chain T1 -> T2 -> T3, or the Tasks after a Choice),
    each group in run order. `handlers`: function -> "module.function". Deterministic
    (functions in the workflow's order). The result passes apply_workflow (the conformance
    corpora run with it: tools/asl_conformance.py --fuse)."""
    funcs = wf.functions
    cyclic = _cyclic(funcs)
    parent: dict[str, str] = {}
    children: dict[str, list[str]] = {}
    for a, node in funcs.items():
        if not is_compiled(node):
            continue
        for e in node.next:
            b = e.target
            if b in parent or b == a or e.type != "Scalar" or not is_compiled(funcs[b]):
                continue
            try:
                fuse_group(funcs, [a, b], handlers, "fusible_chains", cyclic)
            except AslFusionError:
                continue
            parent[b] = a
            children.setdefault(a, []).append(b)
    groups: list[list[str]] = []
    roots = [f for f in funcs if f in children and f not in parent]
    while roots:
        root = roots.pop(0)
        group, todo = [root], list(children.get(root, []))
        while todo:
            d = todo.pop(0)
            try:
                fuse_group(funcs, group + [d], handlers, "fusible_chains", cyclic)
            except AslFusionError:
                if d in children:
                    roots.append(d)  # it heads a group of its own
                continue
            group.append(d)
            todo += children.get(d, [])
        if len(group) > 1:
            groups.append(group)
    return groups
# --- end h34


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
    out = replace(app, workflow=apply_workflow(app.workflow, handlers, fuse, batch, src))
    # h34: a compiled group runs in its head's invocation: its timeout covers the members'
    compiled = [g for g in fuse if is_compiled(app.workflow.functions[g[0]])]
    return with_group_timeouts(out, compiled, app.workflow) if compiled else out


def apply_plan(app: Any, plan: Any, source: str | None = None) -> Any:
    """`apply(app, plan.fuse, plan.batch)` for a planfile.TunePlan (or None: `app`)."""
    if plan is None:
        return app
    return apply(app, getattr(plan, "fuse", None) or (), getattr(plan, "batch", None) or {}, source)


# ---------------------------------------------------------------------------- choose

OVERHEAD_MS = 40.0        # runtime ingress + commit + invoke of one execution (ms), saved per invocation
COLD_START_MS = 250.0     # a cold start (ms), saved with the invocation at the rate `cold_start_rate`
TIMEOUT_SHARE = 0.5       # a group's predicted duration stays under this share of its head's timeout
BATCH_ITEM_MS = 50.0      # a Map item is "tiny" below this mean duration (ms)
BATCH_TARGET_MS = 500.0   # a batch runs about this long (ms): k = BATCH_TARGET_MS / item duration
# why a fusion or batch that runs branches one after another is left out (choose)
SERIALISING = "it serialises the branches; --allow-serialising accepts it"


@dataclass
class _Measured:
    """What choose() uses of one function's FunctionStats (means; 0 when unmeasured)."""

    duration_ms: float = 0.0
    output_bytes: float = 0.0
    per_session: float = 1.0   # executions per session (a Map target's items)
    width: float = 0.0         # mean fan-out width of its Map edge (items per session)
    peak_mb: float = 0.0


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs) if xs else 0.0


def _split_stats(stats: Any) -> tuple[dict[str, Any], list[Any]]:
    """(function -> FunctionStats, [EdgeStats]) from a mapping {"functions": ..., "edges": ...},
    a mapping name -> FunctionStats, an iterable of FunctionStats and EdgeStats, or
    unumctl.tuning.metrics.Metrics (what `unumctl tune` passes)."""
    if hasattr(stats, "functions") and hasattr(stats, "edges"):  # metrics.Metrics
        return dict(stats.functions), list(stats.edges.values())
    if isinstance(stats, Mapping) and ("functions" in stats or "edges" in stats):
        fns, edges = stats.get("functions") or {}, list(stats.get("edges") or [])
        if not isinstance(fns, Mapping):
            fns = {f.name: f for f in fns}
        return dict(fns), edges
    if isinstance(stats, Mapping):
        return dict(stats), []
    fns, edges = {}, []
    for s in stats:
        if hasattr(s, "source") and hasattr(s, "target"):
            edges.append(s)
        else:
            fns[s.name] = s
    return fns, edges


def _pricing(cloud: str) -> Any:
    """What prices fusion's savings on `cloud` (storage_usd, invocation_usd): its TargetSpec
    `tuning` (unumctl.tuning.sizing.FusionPrices), or None for a target without one."""
    return registry.part(cloud, "tuning")


def storage_cost(nbytes: float, cloud: str, prices: Mapping[str, Any], reads: int = 1) -> float:
    """USD to commit a value of `nbytes` once and read it `reads` times on `cloud`
    (`unumctl/<cloud>/tuning.py` storage_usd; 0 on a target without one)."""
    mod = _pricing(cloud)
    return mod.storage_usd(nbytes, prices, reads) if mod else 0.0


def invocation_cost(ms: float, memory_mb: float, cloud: str, prices: Mapping[str, Any]) -> float:
    """USD of one invocation plus `ms` of compute at `memory_mb` on `cloud`
    (`unumctl/<cloud>/tuning.py` invocation_usd; 0 on a target without one)."""
    mod = _pricing(cloud)
    return mod.invocation_usd(ms, memory_mb, prices) if mod else 0.0


def choose(app: Any, stats: Any, cloud: str, prices: Mapping[str, Any] | None = None,
           latency_bound: float = 1.10, overhead_ms: float = OVERHEAD_MS,
           cold_start_ms: float = COLD_START_MS, cold_start_rate: float = 1.0,
           memory: Mapping[str, int] | None = None,
           allow_serialising: bool = False) -> tuple[list[list[str]], dict[str, int], dict[str, str]]:
    """The plan file's `fuse` and `batch` for `app` from measured statistics, with a reason
    per group or batched function (seed 004 Algorithm 1: cluster short tasks with large
    outputs onto the upstream worker).

    `stats`: FunctionStats/EdgeStats of unumctl.tuning.metrics (an iterable of both, a
    mapping name -> FunctionStats, or {"functions": ..., "edges": ...}); durations in ms,
    sizes in bytes. `cloud`: aws | gcp | local; `prices`: the price table (default
    unumctl.cost.prices.load_prices()); `latency_bound`: the session's critical path may
    grow to at most this factor of the measured one; `memory`: MB per function (default the
    manifest's, e.g. the plan's `memory`). A link (an unconditional Scalar edge, a whole
    Map region source -> items -> join, or a whole parallel region source -> branches ->
    join) is fused when, per session,
      saving = the intermediate value's storage (one write, one read: storage_cost; a
               parallel region: also each branch's fan-in set add, one small write)
             + each removed invocation (request price, `overhead_ms` of compute, and
               `cold_start_ms` x `cold_start_rate`)
      loss   = compute at the group's memory (the members' max) above each member's own
    is positive, the group's summed duration stays under TIMEOUT_SHARE of its first
    member's `timeout`, and the critical path (a Map region's items run one after another)
    stays within `latency_bound` (fused, a parallel region's branches run one after another:
    the region takes the SUM of the branch durations instead of the longest branch and its
    hops). A Map target whose mean item duration is under
    BATCH_ITEM_MS is batched with k = BATCH_TARGET_MS / duration items (at most the fan-out
    width), when the longer branch keeps the critical path within the bound.
    Groups of adjacent fused links are merged; each is checked by apply_workflow's rules.
    A compiled Step Functions function's routes to other compiled functions are chain links
    too (unumctl.tuning.asl_fusion; only one route of a Choice per group).

    A Map region or a parallel region fused, or a batch, runs branches one after another: it
    changes the workflow's shape, so it is chosen only with `allow_serialising` (`unumctl tune
    --allow-serialising`). Either way its reason (the source function's, or the group's)
    gives the critical path with it at the measured input and, for a Map region, at the
    declared scale (the Map source's `functions.F.expected_width` in unumctl.yaml, when set:
    the items run one after another grow with the width, the parallel ones do not)."""
    if prices is None:
        from ..cost.prices import load_prices
        prices = load_prices()
    fns, _edges = _split_stats(stats)
    wf = app.workflow
    mf = app.manifest.functions
    handlers = {n: s.handler for n, s in mf.items()}
    mem = {n: float((memory or {}).get(n) or mf[n].memory or 128) for n in wf.functions}
    timeout = {n: float(mf[n].timeout or 60) for n in wf.functions}
    m: dict[str, _Measured] = {}
    starts = 0
    entry = wf.entry.name
    if entry in fns:
        starts = max(1, int(fns[entry].executions))
    for n in wf.functions:
        s = fns.get(n)
        if s is None:
            m[n] = _Measured()
            continue
        m[n] = _Measured(_mean(s.duration_ms), _mean(s.output_bytes),
                         (s.executions / starts) if starts else 1.0, _mean(s.fanout_width),
                         max(s.peak_memory_mb) if s.peak_memory_mb else 0.0)
    cp = _critical_path(wf, m, overhead_ms)
    rejected: dict[str, str] = {}

    def serialised(a: str, target: str, n: float, grow: float) -> str:
        """What fusing the region of `a` does to the critical path: `n` branches (of `target`,
        a Map region's items) one after another, `grow` ms at the measured input."""
        text = (f"its {n:.0f} branches run one after another: the critical path changes by {grow:+.1f} ms "
                f"at the measured input ({n:.0f} branches; {overhead_ms:g} ms per invocation removed)")
        if wf.functions[a].scalar_fanout:
            return text + " (a static fan-out: the same at any scale)"
        width = mf[a].expected_width
        if width is None:
            return text + f"; no declared scale (set functions.{a}.expected_width in unumctl.yaml)"
        at_scale = grow + m[target].duration_ms * (width - max(n, 1.0))
        return text + (f", by {at_scale:+.1f} ms at the declared scale ({width} branches, "
                       f"functions.{a}.expected_width)")

    def held(group: list[str], shape: str, net: float) -> str:
        """The reason of a fusion left out because it serialises branches (`shape`: serialised)."""
        return (f"not fused {group} ({SERIALISING}): {shape}; saving estimated ${net * 1e6:.2f} per million "
                "sessions (unumctl cost --plan measures it)")

    candidates: list[tuple[float, list[str], str, float]] = []

    def group_ms(group: list[str]) -> float:
        """Predicted duration of a group's one invocation: a Map target's items in a row."""
        return sum(m[f].duration_ms * (max(m[group[i - 1]].width, m[f].per_session)
                                       if i and wf.functions[group[i - 1]].next[0].type == "Map"
                                       and not is_compiled(wf.functions[f]) else 1)
                   for i, f in enumerate(group))

    for a, node in wf.functions.items():
        branches = _region_branches(wf.functions, a) if node.wrapper is None else None
        if branches is not None:  # a parallel region: its branches run one after another
            region = [a] + [f for b in branches for f in b] + [wf.functions[branches[0][-1]].next[0].target]
            try:
                apply_workflow(wf, handlers, [region], {}, "choose")
            except FusionError:
                continue
            saving, loss, why = _fusion_economics(region, "Parallel", m, mem, cloud, prices, overhead_ms,
                                                  cold_start_ms * cold_start_rate, len(branches))
            dur = group_ms(region)
            lanes = [sum(m[f].duration_ms + overhead_ms for f in b) for b in branches]
            grow = sum(m[f].duration_ms for b in branches for f in b) - max(lanes) - overhead_ms
            if dur > TIMEOUT_SHARE * timeout[a] * 1000:
                rejected[a] = f"not fused {region}: {dur:.0f} ms > {TIMEOUT_SHARE:g} x {a}'s timeout"
            elif cp and grow > (latency_bound - 1) * cp:
                rejected[a] = (f"not fused {region}: its {len(branches)} branches one after another add "
                               f"{grow:.0f} ms to a {cp:.0f} ms critical path (bound {latency_bound:g}x)")
            elif saving - loss <= 0:
                rejected[a] = (f"not fused {region}: saving ${saving * 1e6:.2f} <= loss ${loss * 1e6:.2f} "
                               "per million sessions")
            elif not allow_serialising:
                rejected[a] = held(region, serialised(a, branches[0][0], len(branches), grow), saving - loss)
            else:
                candidates.append((saving - loss, region,
                                   f"{why}; {serialised(a, branches[0][0], len(branches), grow)}", grow))

    for a, e in _candidate_links(wf):
        b = e.target
        group = [a, b]
        if e.type == "Fan-in":  # an in-process fan-in target saves no storage: not chosen (yet)
            continue
        if e.type == "Map":
            nb = wf.functions[b].next
            if len(nb) != 1 or nb[0].type != "Fan-in":
                continue
            group = [a, b, nb[0].target]
        try:
            apply_workflow(wf, handlers, [group], {}, "choose")
        except FusionError:
            continue
        saving, loss, why = _fusion_economics(group, e.type, m, mem, cloud, prices, overhead_ms,
                                              cold_start_ms * cold_start_rate)
        dur = group_ms(group)
        if dur > TIMEOUT_SHARE * timeout[a] * 1000:
            rejected[a] = f"not fused {group}: {dur:.0f} ms > {TIMEOUT_SHARE:g} x {a}'s timeout"
            continue
        # a chain link removes one hop; a Map region runs its items one after another and
        # removes two hops (to the items, to the join)
        grow = (m[b].duration_ms * (max(m[a].width, m[b].per_session) - 1) - 2 * overhead_ms
                if e.type == "Map" else -overhead_ms)
        if cp and grow > (latency_bound - 1) * cp:
            rejected[a] = (f"not fused {group}: its {m[b].per_session:.0f} items in one invocation add "
                           f"{grow:.0f} ms to a {cp:.0f} ms critical path (bound {latency_bound:g}x)")
            continue
        if saving - loss <= 0:
            rejected[a] = f"not fused {group}: saving ${saving * 1e6:.2f} <= loss ${loss * 1e6:.2f} per million sessions"
            continue
        if e.type == "Map":
            shape = serialised(a, b, max(m[a].width, m[b].per_session), grow)
            if not allow_serialising:
                rejected[a] = held(group, shape, saving - loss)
                continue
            why += f"; {shape}"
        candidates.append((saving - loss, group, why, grow))
    fuse: list[list[str]] = []
    notes: dict[tuple[str, ...], str] = {}
    growth: dict[tuple[str, ...], float] = {}
    for net, group, why, grow in sorted(candidates, key=lambda c: -c[0]):
        left = next((g for g in fuse if g[-1] == group[0]), None)
        right = next((g for g in fuse if g[0] == group[-1]), None)
        taken = {f for g in fuse for f in g}
        if (set(group[1:-1]) & taken or (group[0] in taken and left is None)
                or (group[-1] in taken and right is None)):
            continue
        merged = (left or [group[0]]) + group[1:] + (right[1:] if right else [])
        try:
            apply_workflow(wf, handlers, [merged], {}, "choose")
        except FusionError:
            continue
        grown = grow + sum(g for link, g in growth.items() if set(link) <= set(merged))
        if group_ms(merged) > TIMEOUT_SHARE * timeout[merged[0]] * 1000 or (cp and grown > (latency_bound - 1) * cp):
            continue
        growth[tuple(group)] = grow
        fuse = [g for g in fuse if g is not left and g is not right] + [merged]
        notes[tuple(group)] = f"{'+'.join(group)} saves ${net * 1e6:.2f} per million sessions ({why})"
    reasons = {k: v for k, v in rejected.items() if not any(k in g for g in fuse)}
    for g in fuse:
        reasons["+".join(g)] = "fused: " + "; ".join(n for link, n in notes.items() if set(link) <= set(g))
    batch: dict[str, int] = {}
    inner = {f for g in fuse for f in g[1:]}
    for t in wf.functions:
        if t in inner:
            continue
        preds = [(s, e) for s, n in wf.functions.items() for e in n.next if e.target == t]
        if len(preds) != 1 or preds[0][1].type != "Map":
            continue
        item = m[t].duration_ms
        n_items = max(m[preds[0][0]].width, m[t].per_session)
        if not (0 < item < BATCH_ITEM_MS) or n_items < 2:
            continue
        k = int(min(n_items, max(1, BATCH_TARGET_MS // item)))
        if cp:
            k = int(min(k, max(1, ((latency_bound - 1) * cp) // item + 1)))
        if k < 2:
            continue
        try:
            apply_workflow(wf, handlers, fuse, {**batch, t: k}, "choose")
        except FusionError:
            continue
        saved = n_items - math.ceil(n_items / k)
        per = invocation_cost(overhead_ms + cold_start_ms * cold_start_rate, mem[t], cloud, prices)
        what = (f"{k} items per branch: {item:.1f} ms per item, {saved:.0f} fewer invocations per session "
                f"(${saved * per * 1e6:.2f} per million sessions); {k} items in a row add "
                f"{item * (k - 1):.1f} ms to the critical path")
        width = mf[preds[0][0]].expected_width
        if width is not None:
            what += f" at any width (the declared {width} run in {math.ceil(width / k)} branches)"
        if not allow_serialising:
            reasons.setdefault(t, f"not batched ({SERIALISING}): {what}")
            continue
        batch[t] = k
        reasons[t] = f"batched {what}"
    return fuse, batch, reasons


def _fusion_economics(group: list[str], kind: str, m: Mapping[str, _Measured], mem: Mapping[str, float],
                      cloud: str, prices: Mapping[str, Any], overhead_ms: float,
                      cold_ms: float, fanins: int = 0) -> tuple[float, float, str]:
    """(saving, loss, explanation) in USD per session of fusing `group` (see choose); `kind`:
    the link's edge type (Scalar, Map, or Parallel for a parallel region of `fanins` branches)."""
    top = max(mem[f] for f in group)
    if kind == "Parallel":  # [source, branch members..., join]: every branch member's value,
        # its invocation and (a tail) its fan-in set add, and the join's invocation
        a, j = group[0], group[-1]
        members = group[1:-1]
        stored = sum(storage_cost(m[f].output_bytes, cloud, prices) for f in [a] + members)
        # a fan-in set add per branch: one small write (the member's name), read with the set
        stored += fanins * storage_cost(len(j) + 16, cloud, prices, reads=0)
        removed = float(len(members) + 1)
        runs = {f: 1.0 for f in group}
    elif kind == "Map":
        a, t, j = group
        n = max(m[a].width, m[t].per_session, 1.0)
        values = [m[a].output_bytes] + [m[t].output_bytes] * int(round(n))
        stored = sum(storage_cost(v, cloud, prices) for v in values)
        removed = n + 1  # the items' invocations and the join's
        runs = {a: 1.0, t: n, j: 1.0}
    else:
        a, b = group
        stored = storage_cost(m[a].output_bytes, cloud, prices)
        removed, runs = 1.0, {a: 1.0, b: 1.0}
    inv = removed * invocation_cost(overhead_ms + cold_ms, mem[group[-1]], cloud, prices)
    loss = sum(runs[f] * (invocation_cost(m[f].duration_ms, top, cloud, prices)
                          - invocation_cost(m[f].duration_ms, mem[f], cloud, prices)) for f in group)
    why = (f"{sum(m[f].output_bytes * (runs[f] if f != group[-1] else 0) for f in group):.0f} B "
           f"never stored, {removed:.0f} invocation(s) fewer"
           f"{f', {fanins} fan-in set adds fewer' if fanins else ''}; memory {top:.0f} MB")
    return stored + inv, loss, why


def _region_branches(funcs: Mapping[str, FunctionIR], a: str) -> list[list[str]] | None:
    """The branches (each its functions in order) of the parallel region whose source is `a`
    (a static fan-out of plain Scalar edges, each branch a chain of plain Scalar links ending
    in a Fan-in to one join), or None; apply_workflow checks the rest (Values, modifiers)."""
    edges = funcs[a].next
    if not funcs[a].scalar_fanout or not all(e.type == "Scalar" and _plain(e) for e in edges):
        return None
    branches, joins = [], set()
    for e in edges:
        chain, f = [e.target], e.target
        while len(funcs[f].next) == 1 and funcs[f].next[0].type == "Scalar" and _plain(funcs[f].next[0]) \
                and funcs[f].next[0].target not in chain and len(chain) <= len(funcs):
            f = funcs[f].next[0].target
            chain.append(f)
        out = funcs[f].next
        if not (len(out) == 1 and out[0].type == "Fan-in"):
            return None
        joins.add(out[0].target)
        branches.append(chain)
    return branches if len(joins) == 1 else None


def _critical_path(wf: Workflow, m: Mapping[str, _Measured], hop_ms: float) -> float:
    """Longest path (ms) from the entry through mean durations plus `hop_ms` per invocation
    (a Map's items in parallel; cycles cut at the first revisit)."""
    memo: dict[str, float] = {}

    def longest(fn: str, seen: frozenset[str]) -> float:
        if fn in memo:
            return memo[fn]
        nxt = [longest(e.target, seen | {fn}) for e in wf.functions[fn].next if e.target not in seen | {fn}]
        memo[fn] = m[fn].duration_ms + hop_ms + (max(nxt) if nxt else 0.0)
        return memo[fn]
    return longest(wf.entry.name, frozenset())
