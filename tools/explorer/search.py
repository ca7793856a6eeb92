"""Systematic (not random) enumeration of schedules: stateless depth-first search with
replay, bounded as in CHESS (duplicates, crashes, preemptions, expiries, steps) and pruned
by sleep sets (a partial-order reduction: two actions are independent when they belong to
different executions and touch different keys, or only read).

Each schedule is re-executed from the initial state following the chosen prefix (threads
cannot be snapshotted); the engine is deterministic given the schedule, so replay is exact.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable

from .harness import Harness, summary_json
from .scheduler import MAX_ATTEMPTS
from .stepped import SteppedDatastore


@dataclass
class Bounds:
    """Search bounds. `budget`: schedules per workflow; `seconds`: wall-time cap."""

    dups: int = 1
    crashes: int = 1
    preemptions: int = 1
    expiries: int = 1
    sends: int = 0  # callback actor calls (SendTask*), for workflows with task tokens
    ticks: int = 0  # clock advances while the session runs, for workflows with a clock
    max_steps: int = 300
    budget: int = 500
    seconds: float = 1e9
    por: bool = True  # sleep sets on (off only to test the reduction itself)

    def merged(self, over: dict[str, int]) -> "Bounds":
        return Bounds(**{**self.__dict__, **over})


def _conflict(w: frozenset, other: frozenset) -> bool:
    if not w or not other:
        return False
    if "*" in w or "*" in other:
        return True
    if w & other:
        return True
    for space in ("ds:", "blob:"):
        if (space + "*" in w and any(k.startswith(space) for k in other)) or \
           (space + "*" in other and any(k.startswith(space) for k in w)):
            return True
    return False


def independent(fa, fb) -> bool:
    """Do two actions commute, in the state extended with the scheduler's current
    execution (which the preemption bound depends on)? Footprints are (reads, writes,
    exec); exec is None for platform events (deliveries, expiry), which never change the
    current execution.

    - two item reads of one multi-item read commute (same execution, no writes);
    - runs/crashes of two different executions do NOT commute: each makes its execution
      current, so their order changes which later switches are preemptions (sleep sets
      are otherwise unsound under a preemption bound, Musuvathi & Qadeer, PLDI 2007);
    - otherwise they commute when no write of one touches what the other reads or writes
      (keys 'ds:<name>', 'blob:<key>', wildcards 'ds:*', 'blob:*', '*', 'msg:<id>')."""
    ra, wa, ea = fa
    rb, wb, eb = fb
    if ea is not None and eb is not None:
        if ea != eb or wa or wb:
            return False
    return not (_conflict(wa, rb | wb) or _conflict(wb, ra))


def has_work(h: Harness) -> bool:
    """Executions or messages remain, or a Task waits for a callback (its sender will call)."""
    w = h.world
    return bool(w.alive()) or any(m.pending > 0 for m in w.msgs.values()) or bool(h.waiting())


def allowed(h: Harness, action: tuple, b: Bounds) -> bool:
    """Is `action` within the bounds in the current state?"""
    w = h.world
    c = w.counts
    kind = action[0]
    if kind == "dup" and c["dup"] >= b.dups:
        return False
    if kind in ("crash", "timeout") and (c["crash"] >= b.crashes
                            or w.execs[action[1]].msg.failures + 1 >= MAX_ATTEMPTS):
        return False
    if kind == "expire" and (c["expire"] >= b.expiries or h.result() is None):
        return False
    if kind == "send" and c["send"] >= b.sends:
        return False
    if kind == "tick" and (c["tick"] >= b.ticks or h.result() is not None) and not w.idle():
        return False  # (when nothing else can happen, time passes: timers fire eventually)
    if w.is_preemption(action) and c["preempt"] >= b.preemptions:
        return False
    return True


@dataclass
class Node:
    opts: list[tuple]
    fps: dict[tuple, Any]
    sleep: dict[tuple, Any]
    done: list[tuple]
    chosen: tuple


@dataclass
class Found:
    """First schedule found for one (invariant, class), and how many schedules hit it."""

    invariant: str
    cls: str
    message: str
    schedule: list[tuple]
    trace: list[str]
    count: int = 1


@dataclass
class Report:
    """Outcome of exploring one workflow."""

    workflow: str
    schedules: int = 0
    redundant: int = 0
    truncated: int = 0
    exhausted: bool = False
    seconds: float = 0.0
    found: dict[tuple[str, str], Found] = field(default_factory=dict)
    bounds: dict[str, Any] = field(default_factory=dict)
    phases: list[dict[str, Any]] = field(default_factory=list)
    finals: set[str] = field(default_factory=set)  # distinct end states (result, leftovers)

    @property
    def violations(self) -> int:
        return sum(f.count for f in self.found.values())

    def as_dict(self) -> dict[str, Any]:
        return {"workflow": self.workflow, "schedules": self.schedules, "pruned_by_sleep_sets": self.redundant,
                "truncated": self.truncated, "exhausted": self.exhausted, "seconds": round(self.seconds, 2),
                "bounds": self.bounds, "phases": self.phases, "violating_schedules": self.violations,
                "violations": [{"invariant": f.invariant, "class": f.cls, "schedules": f.count,
                                "message": f.message, "trace_steps": len(f.schedule)}
                               for f in self.found.values()]}


def run_schedule(spec, schedule: list[tuple], datastore_cls=SteppedDatastore,
                 complete: bool = True, bounds: Bounds | None = None) -> Harness:
    """Replay `schedule` exactly; with `complete`, continue with the default choice (the
    first allowed action) until no work remains. Returns the finished harness (its
    checker holds the violations). Raises ValueError when an action is not enabled."""
    b = bounds or Bounds(dups=0, crashes=0, preemptions=0, expiries=0, sends=1,
                         ticks=spec.bounds.get("ticks", 0))
    h = Harness(spec, datastore_cls)
    try:
        for a in schedule:
            if a not in h.world.enabled():
                raise ValueError(f"schedule action {a} is not enabled at step {h.world.counts['steps']}")
            h.world.apply(a)
        stuck = False
        while complete and has_work(h) and h.world.counts["steps"] < b.max_steps:
            opts = [a for a in h.world.enabled() if allowed(h, a, b)]
            if not opts:  # a Task waits for a callback and the actors' bound is used up
                stuck = True
                break
            h.world.apply(opts[0])
        _finish(h, not has_work(h) and not stuck)
    finally:
        h.world.close()
    return h


def _finish(h: Harness, terminal: bool) -> None:
    if terminal and h.spec.gc == "none":  # nothing is collected before expiry: expire first
        h.world.epoch += 2 * 86400  # past the intermediate retention, within the result's
        h._expire(h.world.now())
    h.checker.finish(terminal)


def phases(b: Bounds) -> list[Bounds]:
    """Iterative bounding (as CHESS's iterative context bounding): small bounds first, so
    that a budget-limited run covers the few-fault schedules of every kind before the
    combinations. Each phase is a DFS of its own; the last one is `b` itself."""
    out = []
    for d, c, p in ((1, 0, 0), (0, 1, 0), (1, 0, 1), (0, 1, 1)):
        if (d, c, p) <= (b.dups, b.crashes, b.preemptions) and d <= b.dups and c <= b.crashes \
                and p <= b.preemptions and (d, c, p) != (b.dups, b.crashes, b.preemptions):
            out.append(b.merged({"dups": d, "crashes": c, "preemptions": p, "expiries": min(d, b.expiries)}))
    return out + [b]


def explore(spec, bounds: Bounds, datastore_cls=SteppedDatastore,
            classify: Callable[[Any, Any, Harness], str] | None = None) -> Report:
    """Enumerate the bounded schedules of `spec` phase by phase (`phases`), sharing the
    budget (a phase that exhausts early leaves its share to the next); `exhausted` is
    true when the last (full-bound) phase was exhausted."""
    rep = Report(spec.name, bounds=dict(bounds.__dict__))
    t0 = time.monotonic()
    ps = phases(bounds)
    for i, ph in enumerate(ps):
        share = (bounds.budget - rep.schedules) // (len(ps) - i)
        left = bounds.seconds - (time.monotonic() - t0)
        done = _dfs(spec, ph.merged({"budget": rep.schedules + max(share, 1), "seconds": left / (len(ps) - i)}),
                    datastore_cls, classify, rep)
        rep.phases.append({"dups": ph.dups, "crashes": ph.crashes, "preemptions": ph.preemptions,
                           "exhausted": done})
        rep.exhausted = done
    rep.seconds = time.monotonic() - t0
    return rep


def _child_sleep(node: Node, k: int) -> dict[tuple, Any]:
    """Sleep set after taking alternative k at `node`: the node's sleep set plus the
    alternatives ordered before k (explored in their own branches), kept when independent
    of the action taken."""
    a = node.opts[k]
    fa = node.fps[a]
    earlier = list(node.sleep.items()) + [(b, node.fps[b]) for b in node.opts[:k] if b not in node.sleep]
    return {b: fb for b, fb in earlier if independent(fb, fa)}


def _no_sleep(node: Node, k: int) -> dict[tuple, Any]:
    return {}


def _dfs(spec, bounds: Bounds, datastore_cls, classify, rep: Report, order: str = "bfs") -> bool:
    """One search under `bounds`; adds to `rep`; True when the bounded space is exhausted.

    Every node's alternatives are queued as branches (the prefix that reaches the node,
    the alternative, the sleep set). `order` "bfs" takes branches first-in first-out, so a
    budget-limited run covers deviations at every depth before combinations of them;
    "dfs" is classic last-in first-out. Both enumerate the same set when exhausted."""
    queue: deque = deque([(None, 0, None, 0)])  # (run actions, depth, node, alternative)
    child_sleep = _child_sleep if bounds.por else _no_sleep
    t0 = time.monotonic()
    while queue:
        if rep.schedules >= bounds.budget or time.monotonic() - t0 > bounds.seconds:
            return False
        run, depth, node, k = queue.popleft() if order == "bfs" else queue.pop()
        h = Harness(spec, datastore_cls)
        actions: list[tuple] = []
        outcome = "end"
        try:
            if run is not None:
                for a in run[:depth]:
                    h.world.apply(a)
                    actions.append(a)
                a = node.opts[k]
                sleep = child_sleep(node, k)
                h.world.apply(a)
                actions.append(a)
            else:
                sleep = {}
            while True:
                if h.world.counts["steps"] >= bounds.max_steps:
                    outcome = "truncated"
                    break
                if not has_work(h):
                    break
                opts = [a for a in h.world.enabled() if allowed(h, a, bounds)]
                if not opts:  # waiting for a callback beyond the actors' bound
                    outcome = "truncated"
                    break
                fps = {a: h.world.footprint(a) for a in opts}
                n = Node(opts, fps, sleep, [], None)
                idx = [i for i, a in enumerate(opts) if a not in sleep]
                if not idx:
                    outcome = "redundant"
                    break
                for i in idx[1:]:
                    queue.append((actions, len(actions), n, i))
                sleep = child_sleep(n, idx[0])
                h.world.apply(opts[idx[0]])
                actions.append(opts[idx[0]])
            if outcome == "redundant":
                rep.redundant += 1
            else:
                rep.schedules += 1
                rep.truncated += outcome == "truncated"
                _finish(h, outcome == "end")
                rep.finals.add(summary_json(h, values=True))
                _record(rep, h, spec, classify)
        finally:
            h.world.close()
    return True


def _record(rep: Report, h: Harness, spec, classify) -> None:
    for v in h.checker.violations:
        cls = classify(spec, v, h) if classify else "?"
        key = (v.invariant, cls)
        if key in rep.found:
            rep.found[key].count += 1
            continue
        schedule = [a for a, _ in h.world.log]
        trace = [f"{i:3} {h.describe(a)}  {label}" for i, (a, label) in enumerate(h.world.log)]
        rep.found[key] = Found(v.invariant, cls, v.message, schedule, trace)
