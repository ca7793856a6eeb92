"""A bounded interleaving search of windows across sessions (runtime/triggers/window.py,
docs/ir.md "Windows across sessions"; issue 26 item 3).

The explorer's engine search (tools/explorer/search.py) follows one session; a window
collects objects from many sessions and fires sessions of its own. This module explores the
window protocol itself, with the real `runtime.triggers.window` code (the producer's
`add`, run by the engine's egress after the producer committed, and `resolve`, the
consumer's ingress: a timer's close and the window's read) on the explorer's
`MemDatastore`, one step per datastore call or invoke, under a deterministic scheduler:

* messages: one `add` per object (its producer's egress), and the firings and timers the
  protocol invokes (`fire`, `tick`); actions `deliver`, `dup` (a second execution of a
  message that stays pending: at-least-once delivery, so it can also arrive late, after
  the window fired), `crash` (the execution stops before its pending step and its message
  is redelivered; not on a message's 3rd attempt) and `run` (perform the pending step);
* bounds as the engine search's (CHESS-style): duplicates, crashes, preemptions (a `run`
  or `crash` of another execution while the current one can still run), and a budget of
  schedules, explored breadth-first over the choice points (stateless, with replay);
* a timer may be delivered at any point after it was armed (earlier than its T seconds: a
  stronger adversary than a real clock, harmless for exactness); the default choice
  delivers a pending firing or timer before the next object (as a platform would);
* item expiry on a virtual clock (issue 33 items 2 and 3): every execution reads the
  world's clock, producers' items expire with their sessions (`Retention.item_expiry` of
  the session's start: its first delivery), the consumer's `result` of each window
  `result_lifetime` after it commits, and a case with `quiet` seconds offers the action
  `quiet` (up to `quiets` times a schedule, when no execution is under way and no firing,
  timer or redelivery is pending: a platform delivers those within hours): the clock
  advances by `quiet` and the store's TTL removes what expired (`MemDatastore.purge_expired`).
  A producer's execution after its session's timeout does nothing (its session ended); a
  firing whose window's consumer result exists is dropped (the engine's ingress does so).

Invariants, checked at the end of every schedule (no pending message, no execution left):

* (w1) the first completed consumer ingress of a window (the consumer's checkpoint commits
  it) equals every other execution's: a window's input is deterministic;
* (w2) every object is in at most one committed window, once (no double count);
* (w3) no loss: ByTime, every object is in a committed window; ByBatchSize, every window
  holds exactly N objects and at most N-1 objects are in none (the window still filling);
  an object in no window holds a slot, or its slot expired after the window's whole
  lifetime (`Retention.window_lifetime` from the window's opening) in a window that no
  object joined past its open bound (`Retention.window_open`): the documented bound;
* (w4) nothing is in a window but objects that were added;
* (w5) no firing fails on every attempt (e.g. "slot 0 holds no object": its slots expired);
* (w6) no window id has two consumer sessions (ids never restart).

A ByBatchSize window may hold fewer than N objects only when it was closed past its open
bound (`Retention.window_open`) by a later object's marker (runtime/triggers/window.py);
its consumer sessions are counted across window-id reuses (a window whose result expired).

`get_many` is one step here (a snapshot), which the stores do not promise: the reads it
serves are of slots that never change once created, of windows already closed.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from runtime.ports import Invoker
from runtime.session import DAY, Retention
from runtime.triggers import window

from ..memstore import MemBlobStore, MemDatastore

MAX_ATTEMPTS = 3


class _Killed(BaseException):
    """Raised in an execution's thread when the scheduler crashes it."""


@dataclass
class Bounds:
    """Search bounds: `dups`, `crashes`, `preemptions` per schedule; `budget` schedules;
    `steps` per schedule (a schedule longer than that is reported as a hang)."""

    dups: int = 1
    crashes: int = 1
    preemptions: int = 1
    budget: int = 400
    steps: int = 400


@dataclass
class WindowCase:
    """A window workflow: `objects` added (one producer session each) into a window with
    `batch_size` or `seconds` (the trigger); `about` says what it shows. `retention`: the
    app's (item lifetimes); `quiet` seconds (0: none) the clock advances by in a `quiet`
    action, at most `quiets` times a schedule."""

    name: str
    objects: int
    batch_size: int | None = None
    seconds: float | None = None
    about: str = ""
    retention: Retention = field(default_factory=Retention)
    quiet: float = 0.0
    quiets: int = 0

    @property
    def spec(self) -> window.WindowSpec:
        return window.WindowSpec("w", "C", batch_size=self.batch_size, seconds=self.seconds)


def window_cases() -> dict[str, WindowCase]:
    """The window workflows, by name."""
    cases = [WindowCase("window-batch", 3, batch_size=2,
                        about="3 objects into ByBatchSize 2: one full window, one object waiting"),
             WindowCase("window-time", 3, seconds=1.0,
                        about="3 objects into ByTime: timers armed by each window's first object"),
             # issue 33 item 2: items expire after 1 day + 300 s, results after 8 days
             WindowCase("window-batch-quiet", 4, batch_size=2, retention=Retention(session_timeout=300),
                        quiet=2 * DAY, quiets=1,
                        about="4 objects into ByBatchSize 2, session timeout 300 s, a 2-day quiet period: "
                              "longer than the producers' items live, shorter than the consumer's result"),
             WindowCase("window-time-quiet", 3, seconds=1.0, retention=Retention(session_timeout=300),
                        quiet=2 * DAY, quiets=1,
                        about="3 objects into ByTime, session timeout 300 s, a 2-day quiet period"),
             # issue 33 item 3: a ByBatchSize window slower than its producers' items (8 days)
             WindowCase("window-batch-slow", 3, batch_size=3, quiet=5 * DAY, quiets=2,
                        about="3 objects into ByBatchSize 3, default retention, two 5-day quiet periods: "
                              "a window open longer than its first producer's items live"),
             # the bound: quiet periods past the open bound (8 days) and past the window's
             # item lifetime (24 days), results expired, window ids not reused
             WindowCase("window-batch-long", 3, batch_size=3, quiet=13 * DAY, quiets=2,
                        about="3 objects into ByBatchSize 3, default retention, two 13-day quiet periods: "
                              "past the open bound and, together, past the window items' lifetime")]
    return {c.name: c for c in cases}


@dataclass
class _Msg:
    id: int
    kind: str           # add | fire | tick
    body: Any           # add: object id; fire/tick: the wire payload
    attempts: int = 0
    pending: bool = True
    t0: float | None = None  # add: the producer session's start (its first delivery)


class _Exec:
    """One execution of a message in its own thread; it blocks before each port call until
    the scheduler lets it perform that call."""

    def __init__(self, world: "_World", msg: _Msg, fn: Callable[[], Any]):
        self.world, self.msg, self.fn = world, msg, fn
        self.id = f"{msg.id}.{sum(1 for e in world.execs if e.msg is msg)}"
        self.go = threading.Semaphore(0)
        self.pending: str | None = None
        self.kill = False
        self.finished = False
        self.failed = False
        self.error = ""
        self.thread = threading.Thread(target=self._body, name=f"window-exec-{self.id}", daemon=True)

    def _body(self) -> None:
        try:
            self.go.acquire()
            self.fn()
        except _Killed:
            self.failed = True
        except Exception as exc:  # noqa: BLE001  (an adapter-level error: the platform redelivers)
            self.failed = True
            self.error = f"{type(exc).__name__}: {exc}"
        else:
            self.finished = True
        finally:
            self.pending = None
            self.world.back.release()

    def gate(self, what: str) -> None:
        self.pending = what
        self.world.back.release()
        self.go.acquire()
        if self.kill:
            raise _Killed()


_current = threading.local()


class _StepDS(MemDatastore):
    """The MemDatastore whose every call is one scheduler step of the calling execution."""

    def __init__(self, world: "_World"):
        super().__init__()
        self.world = world

    def _gate(self, what: str) -> None:
        ex = getattr(_current, "ex", None)
        if ex is not None:
            ex.gate(what)

    def get_many(self, session, names):
        self._gate(f"get_many {list(names)[:2]}...")
        return super().get_many(session, names)

    def create_if_absent(self, session, name, item, expires_at):
        self._gate(f"create {name}")
        created, stored = super().create_if_absent(session, name, item, expires_at)
        if created and name.startswith("log/") and "obj" in item:  # when each window got each object
            self.world.joined.setdefault((name.split("/")[1], window.opening_time(item)), []).append(self.world.now)
        return created, stored

    def put(self, session, name, item, expires_at):
        self._gate(f"put {name}")
        return super().put(session, name, item, expires_at)


class _StepInvoker(Invoker):
    supports_delay = True  # the ByTime timer is a delayed invocation (local platform)

    def __init__(self, world: "_World"):
        self.world = world

    def invoke_many(self, calls, delay=0.0):
        ex = getattr(_current, "ex", None)
        if ex is not None:
            ex.gate(f"invoke {len(calls)}")
        for _fn, payload in calls:
            kind = "tick" if payload["Data"]["Source"] == window.TICK_SOURCE else "fire"
            self.world.post(kind, payload)


class _World:
    """One schedule's state: the store, the messages, the executions and what they saw."""

    def __init__(self, case: WindowCase):
        self.case = case
        self.ret = case.retention
        self.now = 1000.0  # the virtual clock (Unix seconds)
        self.ds = _StepDS(self)
        self.blobs = MemBlobStore(lambda: self.now, lambda key: self.ret.window_blob_expiry_days * DAY)
        self.results: dict[int, tuple[list[Any], float]] = {}  # window id -> live consumer result, expiry
        self.committed: list[tuple[int, list[Any], bool]] = []  # every consumer session: id, input, aged
        self.gave_up: list[str] = []
        self.expired: dict[str, tuple[str, float | None, float]] = {}  # object -> its purged slot's (j, t, expiry)
        self.joined: dict[tuple[str, float | None], list[float]] = {}  # (window, opening) -> slot creation times
        self.invoker = _StepInvoker(self)
        self.back = threading.Semaphore(0)
        self.msgs: list[_Msg] = []
        self.execs: list[_Exec] = []
        self.current: _Exec | None = None
        # (window id, its consumer session's incarnation) -> inputs read, in completion order
        self.resolved: dict[tuple[int, int], list[list[Any]]] = {}
        for i in range(case.objects):
            self.post("add", f"s{i}/P")

    def post(self, kind: str, body: Any) -> None:
        self.msgs.append(_Msg(len(self.msgs), kind, body))

    def _work(self, msg: _Msg) -> Callable[[], Any]:
        spec = self.case.spec

        def run() -> None:
            now = self.now
            if msg.kind == "add":
                if msg.t0 is None:
                    msg.t0 = now
                if now > msg.t0 + self.ret.session_timeout:
                    return  # the producer's session timed out: the engine runs no egress
                window.add(self.ds, self.blobs, self.invoker, spec, msg.body, msg.body,
                           self.ret.item_expiry(msg.t0), now=now, retention=self.ret)
                return
            _, raw = window.resolve(msg.body, self.ds, self.blobs, now, self.ret)
            if raw is None:
                return
            j, value = raw["Window"]["Id"], raw["Data"]["Value"]
            incarnation = sum(1 for c in self.committed if c[0] == j)
            live = self.results.get(j)
            if live is not None:  # the consumer's result exists: the engine's ingress drops it
                self.resolved.setdefault((j, incarnation - 1), []).append(value)
                return
            self.resolved.setdefault((j, incarnation), []).append(value)
            marker = self.ds.read_one(window.store_session("w"), window.slot_key(j, len(value)))
            self.results[j] = (value, now + self.ret.result_lifetime)
            self.committed.append((j, value, bool(marker and marker.get("by"))))
        return run

    def start(self, msg: _Msg) -> _Exec:
        fn = self._work(msg)

        def body() -> None:
            _current.ex = ex
            fn()
        ex = _Exec(self, msg, body)
        self.execs.append(ex)
        ex.thread.start()
        ex.go.release()
        self.back.acquire()  # until its first step (or its end)
        self._after(ex)
        return ex

    def run(self, ex: _Exec, crash: bool = False) -> None:
        ex.kill = crash
        ex.go.release()
        self.back.acquire()
        self._after(ex)

    def _after(self, ex: _Exec) -> None:
        if ex.failed and ex.msg.attempts < MAX_ATTEMPTS:
            ex.msg.attempts += 1
            ex.msg.pending = True  # the platform redelivers
            ex.failed = False
        elif ex.failed and ex.msg.kind != "add" and not any(e.msg is ex.msg and e.pending for e in self.execs):
            ex.failed = False
            self.gave_up.append(f"{ex.msg.kind} {ex.msg.body['Data']['Value']}: {ex.error}")

    def quiet_enabled(self) -> bool:
        """A quiet period may start: no execution under way, no firing, timer or redelivery pending."""
        return not self.live() and not any(m.pending and (m.kind != "add" or m.attempts) for m in self.msgs)

    def quiet(self) -> None:
        """Nothing arrives for `case.quiet` seconds: the clock advances and the TTL removes
        the items (and the consumer results) that expired meanwhile."""
        self.now += self.case.quiet
        for (sess, name), (it, exp) in self.ds.items.items():
            if sess == window.store_session("w") and name.startswith("log/") and "obj" in it and exp < self.now:
                self.expired[it["obj"]] = (name.split("/")[1], window.opening_time(it), exp)
        self.ds.purge_expired(self.now)
        self.blobs.purge_expired(self.now)
        self.results = {j: r for j, r in self.results.items() if r[1] >= self.now}

    def live(self) -> list[_Exec]:
        return [e for e in self.execs if e.pending is not None]

    def stop(self) -> None:
        for e in self.live():
            self.run(e, crash=True)


def _choices(w: _World, used: dict[str, int], b: Bounds) -> list[tuple[Any, ...]]:
    """The enabled actions, the default (no deviation) first."""
    live = w.live()
    cur = w.current if w.current in live else None
    out: list[tuple[Any, ...]] = []
    if cur is not None:
        out.append(("run", cur.id))
    # a firing or timer before the next object (a platform delivers it within moments)
    for m in sorted(w.msgs, key=lambda m: (m.kind == "add", m.id)):
        if m.pending:
            out.append(("deliver", m.id))
    if used["quiets"] < w.case.quiets and w.quiet_enabled() and any(m.pending for m in w.msgs):
        out.append(("quiet", used["quiets"]))
    for e in live:
        if e is not cur and (cur is None or used["preemptions"] < b.preemptions):
            out.append(("run", e.id))
    if used["crashes"] < b.crashes:
        for e in live:
            if e.msg.attempts < MAX_ATTEMPTS - 1 and (e is cur or cur is None
                                                       or used["preemptions"] < b.preemptions):
                out.append(("crash", e.id))
    if used["dups"] < b.dups:
        for m in w.msgs:
            out.append(("dup", m.id))
    return out


def _apply(w: _World, act: tuple[Any, ...], used: dict[str, int]) -> None:
    kind, ref = act
    if kind == "quiet":
        used["quiets"] += 1
        w.quiet()
        return
    by_id = {e.id: e for e in w.execs}
    if kind in ("run", "crash"):
        ex = by_id[ref]
        if w.current is not None and ex is not w.current and w.current in w.live():
            used["preemptions"] += 1
        if kind == "crash":
            used["crashes"] += 1
        w.current = ex
        w.run(ex, crash=kind == "crash")
    else:
        m = w.msgs[ref]
        if kind == "dup":
            used["dups"] += 1
        else:
            m.pending = False
        w.current = w.start(m)


def run_schedule(case: WindowCase, prefix: list[tuple[Any, ...]], b: Bounds,
                 ) -> tuple[list[tuple[Any, ...]], list[list[tuple[Any, ...]]], list[str]]:
    """Run `prefix`, then the default choices to the end; returns (schedule, the enabled
    choices at each step, violations)."""
    w = _World(case)
    used = {"dups": 0, "crashes": 0, "preemptions": 0, "quiets": 0}
    schedule: list[tuple[Any, ...]] = []
    enabled: list[list[tuple[Any, ...]]] = []
    try:
        while len(schedule) < b.steps:
            ch = _choices(w, used, b)
            if not [c for c in ch if c[0] in ("run", "deliver")]:
                return schedule, enabled, check(case, w)
            act = prefix[len(schedule)] if len(schedule) < len(prefix) else ch[0]
            if act not in ch:
                return schedule, enabled, []  # a prefix no longer enabled: skipped
            enabled.append(ch)
            schedule.append(act)
            _apply(w, act, used)
        return schedule, enabled, [f"(hang) no end after {b.steps} steps"]
    finally:
        w.stop()


def check(case: WindowCase, w: _World) -> list[str]:
    """The invariants (w1)-(w6) of the module docstring on a finished schedule."""
    v: list[str] = []
    added = {f"s{i}/P" for i in range(case.objects)}
    for (j, _), inputs in sorted(w.resolved.items()):
        if any(x != inputs[0] for x in inputs[1:]):
            v.append(f"(w1) window {j} read differently by two executions: {inputs}")
    seen: dict[Any, int] = {}
    for j, objs, aged in w.committed:
        for o in objs:
            if o not in added:
                v.append(f"(w4) window {j} holds {o!r}, which was never added")
            if o in seen:
                v.append(f"(w2) object {o} counted twice: windows {seen[o]} and {j}")
            seen.setdefault(o, j)
        if case.batch_size is not None and len(objs) != case.batch_size and not (aged and objs):
            v.append(f"(w3) ByBatchSize window {j} holds {len(objs)} objects, not {case.batch_size}")
    for g in w.gave_up:
        v.append(f"(w5) a firing failed on every attempt: {g}")
    ids = [j for j, _, _ in w.committed]
    for j in sorted({j for j in ids if ids.count(j) > 1}):
        v.append(f"(w6) window id {j} has two consumer sessions: the id was reused")
    # an object in no window is waiting in a slot, or its slot expired after waiting the
    # window's whole lifetime (the documented bound); anything else is lost
    waiting = {it.get("obj") for (sess, name), (it, _) in w.ds.items.items()
               if sess == window.store_session("w") and name.startswith("log/")}
    bound = [o for o, (j, t, exp) in w.expired.items()
             if t is not None and exp >= t + w.ret.window_lifetime
             and max(w.joined.get((j, t), [t])) < t + w.ret.window_open]  # nothing joined it past its bound
    for o in sorted(added - set(seen) - waiting - set(bound)):
        how = "its slot expired before its window's lifetime" if o in w.expired else "it holds no slot"
        v.append(f"(w3) object {o} lost: in no window and {how}")
    missing = sorted(added - set(seen) - set(bound))
    if case.batch_size is None and missing:
        v.append(f"(w3) objects in no window: {missing}")
    if case.batch_size is not None and len(missing) >= case.batch_size:
        v.append(f"(w3) {len(missing)} objects in no window, a full window's worth: {missing}")
    return v


@dataclass
class Report:
    """What a search found: schedules run, distinct violations (message -> a schedule)."""

    schedules: int = 0
    violations: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    exhausted: bool = False


def explore(case: WindowCase, b: Bounds | None = None) -> Report:
    """Breadth-first over choice points (every deviation at depth d before those at d+1),
    within the bounds; stops at the budget."""
    b = b or Bounds()
    rep = Report()
    queue: list[list[tuple[Any, ...]]] = [[]]
    while queue and rep.schedules < b.budget:
        prefix = queue.pop(0)
        schedule, enabled, violations = run_schedule(case, prefix, b)
        rep.schedules += 1
        for msg in violations:
            key = msg.split(":")[0]
            rep.violations.setdefault(key, schedule)
        for d in range(len(prefix), len(enabled)):
            for alt in enabled[d][1:]:
                if alt != schedule[d]:
                    queue.append(schedule[:d] + [alt])
    rep.exhausted = not queue
    return rep


def main(argv: list[str] | None = None) -> int:
    """`python -m tools.explorer.workflows.window [--budget N] [--dups D] [--crashes C]
    [--preemptions P] [--mutant NAME]`: search every window workflow; exit 1 on a violation."""
    import argparse
    import importlib

    from ..mutants import Patcher
    ap = argparse.ArgumentParser(prog="python -m tools.explorer.workflows.window")
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--dups", type=int, default=1)
    ap.add_argument("--crashes", type=int, default=1)
    ap.add_argument("--preemptions", type=int, default=1)
    ap.add_argument("--mutant", choices=["window_close_without_marker", "window_add_not_idempotent",
                                         "window_items_expire", "window_no_open_bound"])
    a = ap.parse_args(argv)
    found = False
    with Patcher() as p:
        if a.mutant:
            importlib.import_module(f"tools.explorer.mutants.{a.mutant}").apply(p)
        for name, case in window_cases().items():
            rep = explore(case, Bounds(a.dups, a.crashes, a.preemptions, a.budget))
            print(f"{name}: {rep.schedules} schedules{' (exhausted)' if rep.exhausted else ''}, "
                  f"{len(rep.violations)} violation kinds")
            for msg, schedule in rep.violations.items():
                found = True
                print(f"  {msg}\n    schedule: {schedule}")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
