"""One schedule of one workflow: the platform model and the deterministic scheduler.

A `World` holds the in-memory stores, the platform's message queue and the executions.
Every execution (one `Engine.handle(payload)` call) runs in its own thread, but only one
thread runs at a time: an execution runs until its next port call, posts that call as an
`Op` and blocks; the scheduler (the caller of `World.apply`) decides what happens next.
Ops are performed by the scheduler thread on the in-memory stores, so the outcome of a
schedule is a pure function of its list of actions (replayable).

Actions (tuples, stable across schedules because ids are derived from the path that
created them):
  ("run", exec_id, part)   perform the pending op of an execution (for a multi-item read,
                           `part` is the index of the one item read by this step)
  ("crash", exec_id)       the execution stops dead before its pending op; the platform
                           redelivers its message (never on the last delivery attempt)
  ("deliver", msg_id)      start an execution of a pending message (consumes one delivery)
  ("dup", msg_id)          start an execution of a pending message and keep it pending
                           (at-least-once: the platform delivers it again later)
  ("timeout", exec_id)     the platform's per-attempt timer fires for an execution whose Task
                           attempt is armed (TimeoutSeconds): the platform records the
                           attempt's States.Timeout outcome (create-if-absent) and kills the
                           instance, which is redelivered like after a crash (counts as one)
  ("send", kind, key)      a callback actor calls SendTask<kind> (success, failure,
                           heartbeat) for the token record `key` (asl/cb/<instance>/<n>): an
                           execution of its own whose port calls are steps; never crashed
                           or redelivered (its caller sees the API's answer)
  ("expire",)              advance the virtual clock past the intermediate retention and
                           let the TTL policy / lifecycle rule remove expired entries
  ("tick",)                (workflows with a clock, `clock_mode`) advance the virtual clock
                           while the session runs: to the time of the earliest timer (a
                           delayed message: HeartbeatSeconds, TimeoutSeconds, Wait; or a
                           redelivery), or by TICK seconds when none is pending. A delayed
                           message can be delivered only once the clock has reached its
                           time; with a clock, a failed execution's message is redelivered
                           only after the platform's delay (`redelivery`,
                           tools.explorer.platforms), while duplicates and other work go on.
Execution ids are `<msg_id>.<k>` (k-th delivery of the message); the messages an execution
invokes are `<exec_id>><n>` (n-th call it made). The root message is `r`.
"""

from __future__ import annotations

import threading
import zlib
from dataclasses import dataclass, field
from typing import Any, Callable

MAX_ATTEMPTS = 3          # delivery attempts per message (platform retries)
TICK = 7200.0             # seconds a `tick` advances the clock when no timer is pending
BASE_TIME = 1_700_000_000.0
SESSION = "xs1"

_tls = threading.local()
ACTOR = "__callback__"     # function name of the messages that run callback actors
SEND_KINDS = ("success", "failure", "heartbeat")
DS_WRITES = frozenset({"create", "set_add", "put", "delete", "sweep"})


class Crashed(BaseException):
    """Raised inside an execution's thread to stop it dead (not an Exception, so no
    `except Exception` in the engine or user code can swallow it)."""


def current_exec() -> "Exec | None":
    """The execution whose thread is calling (None outside executions)."""
    return getattr(_tls, "exec", None)


@dataclass
class Op:
    """A port call posted by an execution. `parts` is set for multi-item reads (one
    step per item); `fn` performs a single-step op and returns its result.
    `reads`/`writes` are footprints ('ds:<name>', 'blob:<key>', 'ds:*', 'blob:*')."""

    kind: str
    label: str
    reads: frozenset = frozenset()
    writes: frozenset = frozenset()
    fn: Callable[[], Any] | None = None
    parts: list[str] | None = None
    part_fn: Callable[[str], Any] | None = None
    results: list[Any] = field(default_factory=list)
    remaining: set[int] = field(default_factory=set)
    result: Any = None
    error: BaseException | None = None


@dataclass
class Message:
    """A platform message (one asynchronous invocation). `pending` deliveries remain."""

    id: str
    fn: str
    payload: dict[str, Any]
    pending: int = 1
    deliveries: int = 0
    failures: int = 0
    not_before: float = 0.0  # world epoch (s) from which it can be delivered (a delayed invoke)
    # world epochs from which each pending redelivery (after a failure, with a clock) may
    # be delivered; the other `pending - len(redeliver_at)` deliveries wait for not_before
    redeliver_at: list[float] = field(default_factory=list)

    def ready(self, epoch: float) -> bool:
        """Can a delivery of this message start at world epoch `epoch`?"""
        return (self.pending > len(self.redeliver_at) and self.not_before <= epoch) or \
            any(t <= epoch for t in self.redeliver_at)

    def timers(self, epoch: float) -> list[float]:
        """The future epochs at which a pending delivery becomes possible."""
        out = [t for t in self.redeliver_at if t > epoch]
        if self.pending > len(self.redeliver_at) and self.not_before > epoch:
            out.append(self.not_before)
        return out


class Exec:
    """One execution (thread) of a message."""

    def __init__(self, world: "World", eid: str, msg: Message):
        self.world = world
        self.id = eid
        self.msg = msg
        self.fn = msg.fn
        self.instance: str | None = None
        self.pending: Op | None = None
        self.done = False
        self.status = "running"      # ran/adopted/dropped/failed (Outcome), crashed, error
        self.error: BaseException | None = None
        self.crash_flag = False
        self.armed: tuple | None = None  # (session, key, outcome, expires_at) of an armed timer
        self.redelivery: float | None = None  # the epoch its redelivery was due (None: not one)
        self.resume = threading.Semaphore(0)
        self.calls = 0               # invocations made so far (names child messages)
        self.thread = threading.Thread(target=self._body, daemon=True, name=f"exec-{eid}")

    @property
    def nd(self) -> int:
        """A per-execution number for nondeterministic user code: the sum of the delivery
        ordinals along the execution's path (two executions of one invocation differ)."""
        return sum(int(part.split(".")[1]) for part in self.id.split(">") if "." in part)

    def token(self) -> str:
        """A per-execution string (the execution id)."""
        return self.id

    def clock(self) -> float:
        """Virtual Unix time seen by this execution: the world's epoch plus a per-execution
        offset (so `$$.Execution.StartTime` differs between executions)."""
        return BASE_TIME + self.world.epoch + (zlib.crc32(self.id.encode()) % 997)

    def _body(self) -> None:
        _tls.exec = self
        try:
            try:
                out = self.world.run_engine(self)
            except Crashed:
                raise
            except BaseException as exc:  # infrastructure error: the platform retries
                self.world.end_txn(self)  # (local) what it wrote before the error commits
                self.status = "error"
                self.error = exc
            else:
                self.world.end_txn(self)  # the instance commits when the execution ends
                self.status = getattr(out, "status", "ran")
        except Crashed:
            self.status = "crashed"
        finally:
            self.done = True
            self.pending = None
            self.world.back.release()

    def call(self, op: Op) -> Any:
        """Post `op` and block until the scheduler has performed it (or crashes us)."""
        self.pending = op
        self.world.back.release()
        self.resume.acquire()
        if self.crash_flag:
            raise Crashed()
        if op.error is not None:
            raise op.error
        return op.result


class World:
    """The state of one schedule. `engine_for(exec, fn_name)` returns the Engine that runs
    an execution (built by tools.explorer.adapters.make_engine); `observer` is notified
    of every performed op (the invariant checker)."""

    def __init__(self, session: str = SESSION):
        self.session = session
        self.epoch = 0.0
        self.msgs: dict[str, Message] = {}
        self.msg_order: list[str] = []
        self.execs: dict[str, Exec] = {}
        self.exec_order: list[str] = []
        self.back = threading.Semaphore(0)
        self.current: str | None = None
        self.counts = {"dup": 0, "crash": 0, "preempt": 0, "expire": 0, "steps": 0, "send": 0, "tick": 0,
                       "idle_tick": 0}
        self.clock_mode = False  # delayed messages wait for the clock; `tick` advances it
        self.redelivery: tuple[float, ...] = ()  # with clock_mode: the platform's retry delays
        self.log: list[tuple[tuple, str]] = []
        self.run_engine: Callable[[Exec], Any] = lambda ex: None
        self.on_exec_end: Callable[[Exec, bool], None] = lambda ex, gave_up: None
        self.on_step: Callable[[tuple, Op | None], None] = lambda a, op: None
        self.on_expire: Callable[[float], None] = lambda now: None
        self.on_deliver: Callable[[Exec], None] = lambda ex: None
        self.on_timeout: Callable[[Exec], None] = lambda ex: None  # the platform records it
        self.tokens: Callable[[], list[str]] = lambda: []  # token records callback actors may use
        self.on_rollback: Callable[[Exec, list[str]], None] = lambda ex, names: None
        # the local target's deferred transaction (tools.explorer.txn): on when `txn_mode`
        self.txn_mode = False
        self.txn: Any = None
        self.mem: Any = None            # the MemDatastore (for rollbacks)
        self.apply_blob_deletes: Callable[[list], None] = lambda deletes: None

    # ------------------------------------------------------------------ queue
    def post(self, fn: str, payload: dict[str, Any], creator: Exec | None, delay: float = 0.0) -> Message:
        """Queue a message (with `clock_mode`, deliverable `delay` seconds from now); inside
        `creator`'s deferred transaction its queue row joins the transaction (posted at the
        commit, lost with it)."""
        if creator is None:
            mid = "r"
        else:
            mid = f"{creator.id}>{creator.calls}"
            creator.calls += 1
        m = Message(mid, fn, payload)
        if self.clock_mode and delay > 0:
            m.not_before = self.epoch + delay
        if creator is not None and self.txn is not None and self.txn.holder == creator.id:
            self.txn.msgs.append(m)
            return m
        self.msgs[mid] = m
        self.msg_order.append(mid)
        return m

    def now(self) -> float:
        ex = current_exec()
        return ex.clock() if ex is not None else BASE_TIME + self.epoch

    # ------------------------------------------------------------------ actions
    def end_txn(self, ex: Exec) -> None:
        """Called in `ex`'s thread when its engine call returned or raised: if it holds the
        deferred transaction, commit it as one more step (a crash before it loses it all)."""
        txn = self.txn
        if txn is None or txn.holder != ex.id:
            return

        def commit():
            self.txn = None
            self.apply_blob_deletes(txn.blob_deletes)
            for m in txn.msgs:
                self.msgs[m.id] = m
                self.msg_order.append(m.id)
        ex.call(Op("txn_commit", "commit the deferred transaction", writes=frozenset({"ds:*"}), fn=commit))

    def blocked(self, ex: Exec) -> bool:
        """A datastore write waits for the lock while another execution holds the deferred
        transaction."""
        op = ex.pending
        return (self.txn is not None and self.txn.holder != ex.id and op is not None
                and op.kind in DS_WRITES)

    def alive(self) -> list[Exec]:
        return [self.execs[e] for e in self.exec_order if not self.execs[e].done]

    def enabled(self) -> list[tuple]:
        """Every action possible now (before bounds), in a fixed preference order: the
        current execution first, then other executions, deliveries (FIFO), crashes,
        duplicate deliveries, expiry."""
        runs, crashes = [], []
        alive = self.alive()
        alive.sort(key=lambda e: e.id != self.current)
        for ex in alive:
            op = ex.pending
            if op is None:
                continue
            if ex.fn != ACTOR:
                crashes.append(("crash", ex.id))
            if ex.armed is not None:
                crashes.append(("timeout", ex.id))
            if self.blocked(ex):
                continue
            if op.parts is not None:
                runs += [("run", ex.id, i) for i in sorted(op.remaining)]
            else:
                runs.append(("run", ex.id, 0))
        pend = [m for m in (self.msgs[i] for i in self.msg_order) if m.pending > 0 and m.ready(self.epoch)]
        out = runs + [("deliver", m.id) for m in pend] + crashes + [("dup", m.id) for m in pend]
        out += [("send", kind, key) for key in self.tokens() for kind in SEND_KINDS]
        if self.txn is None:
            out.append(("expire",))
            if self.clock_mode:
                out.append(("tick",))
        return out

    def idle(self) -> bool:
        """Nothing can happen but time passing: no execution runs, and every pending message
        is a timer whose time has not come (so a `tick` is always possible then)."""
        pend = [m for m in self.msgs.values() if m.pending > 0]
        return not self.alive() and bool(pend) and not any(m.ready(self.epoch) for m in pend)

    def redelivery_delay(self, failures: int) -> float:
        """Seconds before the redelivery that follows a message's `failures`-th failure
        (the platform's promise, tools.explorer.platforms; 0 without a clock)."""
        if not self.clock_mode or not self.redelivery:
            return 0.0
        return self.redelivery[min(failures, len(self.redelivery)) - 1]

    def footprint(self, action: tuple) -> tuple[frozenset, frozenset, str | None]:
        """(reads, writes, exec) of an enabled action, for the independence relation."""
        kind = action[0]
        if kind == "run":
            op = self.execs[action[1]].pending
            assert op is not None
            if op.parts is not None:
                return frozenset({"ds:" + op.parts[action[2]]}), frozenset(), action[1]
            return op.reads, op.writes, action[1]
        if kind == "crash":
            return frozenset(), frozenset({"msg:" + self.execs[action[1]].msg.id}), action[1]
        if kind == "timeout":
            ex = self.execs[action[1]]
            return frozenset(), frozenset({"msg:" + ex.msg.id, "ds:" + ex.armed[1]}), action[1]
        if kind in ("deliver", "dup"):
            return frozenset(), frozenset({"msg:" + action[1]}), None
        if kind == "send":
            return frozenset({"ds:" + action[2]}), frozenset({"msg:cb"}), None
        return frozenset(), frozenset({"*"}), None

    def is_preemption(self, action: tuple) -> bool:
        """A run/crash of an execution other than the current one (the last that ran an
        op) while the current one can still run. Deliveries and expiry are platform
        events and never preempt: a new execution only becomes current when it runs."""
        if action[0] not in ("run", "crash", "timeout"):
            return False
        cur = self.execs.get(self.current) if self.current else None
        if cur is None or cur.done:
            return False
        return action[1] != cur.id

    def apply(self, action: tuple) -> Op | None:
        """Perform one action; returns the op performed (None for others)."""
        if self.is_preemption(action):
            self.counts["preempt"] += 1
        self.counts["steps"] += 1
        kind = action[0]
        op = None
        if kind == "run":
            ex = self.execs[action[1]]
            op = ex.pending
            assert op is not None, action
            self.current = ex.id
            if op.parts is not None:
                i = action[2]
                op.remaining.discard(i)
                op.results[i] = self._perform(op, lambda: op.part_fn(op.parts[i]))
                if not op.remaining:
                    op.result = list(op.results)
                    self._resume(ex)
            else:
                op.result = self._perform(op, op.fn)
                self._resume(ex)
        elif kind in ("crash", "timeout"):
            ex = self.execs[action[1]]
            if kind == "timeout":
                self.on_timeout(ex)
            self.current = ex.id
            self.counts["crash"] += 1
            ex.crash_flag = True
            self._resume(ex)
        elif kind in ("deliver", "dup", "send"):
            if kind == "send":
                self.counts["send"] += 1
                m = Message(f"cb{self.counts['send']}", ACTOR, {"kind": action[1], "key": action[2]}, pending=0)
                self.msgs[m.id] = m
            else:
                m = self.msgs[action[1]]
            redelivery = None
            if kind == "deliver":
                due = sorted(t for t in m.redeliver_at if t <= self.epoch)
                if due:  # a redelivery whose delay has passed (copies are alike: take it first)
                    redelivery = due[0]
                    m.redeliver_at.remove(redelivery)
                m.pending -= 1
            elif kind == "dup":
                self.counts["dup"] += 1
            eid = f"{m.id}.{m.deliveries}"
            m.deliveries += 1
            ex = Exec(self, eid, m)
            ex.redelivery = redelivery
            self.execs[eid] = ex
            self.exec_order.append(eid)
            self.on_deliver(ex)
            ex.thread.start()
            self.back.acquire()
            if ex.done:
                self._ended(ex)
        elif kind == "tick":
            # time passing when nothing else can happen is free (idle_tick); a tick that races
            # with work counts against the `ticks` bound
            self.counts["idle_tick" if self.idle() else "tick"] += 1
            due = [t for m in self.msgs.values() if m.pending > 0 for t in m.timers(self.epoch)]
            self.epoch = min(due) if due else self.epoch + TICK
        else:
            self.counts["expire"] += 1
            self.epoch += 86400 + 3600
            self.on_expire(BASE_TIME + self.epoch)
        label = op.label if op is not None else ""
        if op is not None and op.parts is not None:
            label = f"read {op.parts[action[2]]} (item {action[2] + 1}/{len(op.parts)} of a get_many)"
        self.log.append((action, label))
        self.on_step(action, op)
        return op

    def _perform(self, op: Op, fn) -> Any:
        try:
            return fn()
        except Exception as exc:  # e.g. KeyError from a blob read: the execution sees it
            op.error = exc
            return None

    def _resume(self, ex: Exec) -> None:
        ex.resume.release()
        self.back.acquire()
        if ex.done:
            self._ended(ex)

    def _ended(self, ex: Exec) -> None:
        if self.txn is not None and self.txn.holder == ex.id:  # killed before its commit
            names = self.txn.rollback(self.mem)
            self.txn = None
            self.on_rollback(ex, names)
        gave_up = False
        if ex.status in ("crashed", "error") and ex.fn != ACTOR:
            ex.msg.failures += 1
            if ex.msg.failures < MAX_ATTEMPTS:
                ex.msg.pending += 1
                if self.clock_mode and self.redelivery:  # a timer, even if a bug makes it 0 s
                    ex.msg.redeliver_at.append(self.epoch + self.redelivery_delay(ex.msg.failures))
            else:
                gave_up = True  # the harness records the platform's on-failure result
        self.on_exec_end(ex, gave_up)

    def close(self) -> None:
        """Stop every execution still blocked (end of a truncated schedule)."""
        for ex in self.alive():
            ex.crash_flag = True
            ex.resume.release()
            self.back.acquire()
