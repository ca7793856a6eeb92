"""The invariants checked on every schedule (docs/explorer.md has the precise wording).

(a) one committed value per invocation, and every consumer saw it. A checkpoint created
    after the session's result exists (a *late* create, after the final sweep) is not a
    commit: it must reach no consumer's user code (docs/protocol.md, "Why the invariants
    hold", 1), which the input check below verifies;
(b) a readable `result` or checkpoint (including its blob) never changes;
(c) the session is FAILED only when a user failure was committed: the failing execution's
    own user code raised, and no success of that invocation had been committed before;
    a platform give-up (retries exhausted by an engine error) always violates (c);
(d) once no work remains, only `result` (and its blob) is left;
(e) every schedule ends with a result, produced by an allowed terminal and consistent
    with the committed values (workflow `check_result`);
(f) no user code runs in an execution whose delivery began after the session had its
    result (every gc mode), nor for an invocation that was already committed when the
    delivery began (under gc `eager`/`none` unless its checkpoint was collected, i.e.
    deleted or expired, before the user code ran: seed 001 §3.5 lets such a duplicate run
    again), nor for a Task attempt (`$$.State.RetryCount` passed to the function as
    `RetryCount`) whose outcome was recorded when the delivery began.
(g) timers and callbacks (virtual clock, workflows with `clock`): no user code runs in an
    execution delivered after the session's deadline (its start + `session_timeout_seconds`);
    a FAILED `Unum.SessionTimeout` is committed only by an execution whose clock was past the
    deadline when it committed; a `States.HeartbeatTimeout` outcome is recorded only when the
    recording execution's clock is past the last heartbeat (or the token's start) plus
    HeartbeatSeconds; and a SendTaskSuccess that was accepted (not refused) is the Task's
    outcome: a SUCCEEDED result of a callback workflow carries its output. A Wait never lets
    its successor run early: the user code of a function the workflow lists in `waits`
    never starts at a world time before the due time of the Wait states before it; and a
    redelivery never precedes its delay: a message whose execution failed (crash, kill,
    error) is delivered again only once the platform's delay (tools.explorer.platforms)
    has passed since that failure.

Commits are recognised by value, whatever call made them: a `put` that creates a checkpoint
(or `result`) is a commit like a create, and a `put` that replaces a committed checkpoint or
result by anything but a GC tombstone violates (b). A commit rolled back with the local
target's deferred transaction (tools.explorer.txn) is forgotten. A FAILED
`Unum.TransitionLimitExceeded` is legitimate only when the committed path is over
`max_transitions`: the failing execution's depth must be one more than the depth of the
executions that committed its parents (a duplicate that carries a longer path's count
does not count).

Under gc `eager`/`none` a duplicate delivered after its checkpoint was deleted may re-run
(seed 001 §3.5), so (a) is reduced to "the result equals a value committed for its
invocation"; (b)-(e) always apply. For functions that do not checkpoint (at-least-once),
(a) does not apply to them or to their direct consumers' inputs.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from runtime.payload import Payload, frames_name
from runtime.payload import RefList

from . import platforms
from .model import WorkflowSpec
from .scheduler import BASE_TIME
from .stepped import Journal

UNREADABLE = "<unreadable: blob missing>"
_WRITES = {"create", "set_add", "put", "delete", "sweep", "blob_put", "blob_delete", "blob_sweep"}


@dataclass
class Violation:
    """One invariant violation: `invariant` is a..e, `step` the index in the schedule."""

    invariant: str
    message: str
    step: int

    def as_dict(self) -> dict[str, Any]:
        return {"invariant": self.invariant, "message": self.message, "step": self.step}


def _j(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


def exec_instance(fn: str, payload: dict[str, Any]) -> str:
    """The invocation name an execution of `fn` with wire `payload` runs."""
    p = Payload.decode(payload, new_session=lambda: "x")
    return frames_name(fn, p.frames, p.iteration)


class View:
    """Read access to the ledger for a workflow's `check_result`."""

    def __init__(self, checker: "Checker"):
        self.c = checker

    def committed_user_output(self, lambda_fn: str) -> list[Any]:
        """User handler outputs of the executions whose checkpoint committed, for every
        invocation of a function that runs user function `lambda_fn`."""
        out = []
        for inst, commits in self.c.commits.items():
            fn = inst.split("-Unum", 1)[0]
            if self.c.spec.lambdas.get(fn, fn) != lambda_fn:
                continue
            for eid, _ in commits[:1]:
                if (eid, inst) in self.c.user_out:
                    out.append(self.c.user_out[(eid, inst)])
        return out


class Checker(Journal):
    """Records what every execution saw and computed, and checks the invariants."""

    def __init__(self, spec: WorkflowSpec, world, mem, blobs):
        self.spec = spec
        self.world = world
        self.mem = mem
        self.blobs = blobs
        self.session = world.session
        self.violations: list[Violation] = []
        self.inputs: dict[str, list[tuple[str, Any, dict]]] = defaultdict(list)
        self.computed: dict[tuple[str, str], Any] = {}
        self.user_out: dict[tuple[str, str], Any] = {}
        self.user_raised: dict[str, str] = {}
        self.commits: dict[str, list[tuple[str, Any]]] = defaultdict(list)
        self.gens: dict[str, int] = defaultdict(int)
        self.readable: dict[tuple[str, int], str] = {}
        self.errors: list[str] = []
        self.safe = spec.gc == "safe"
        self.recreated: set[str] = set()   # checkpoints created again after removal
        self.late: dict[str, list[tuple[str, Any]]] = defaultdict(list)  # creates after the result
        self.failed_commits: dict[str, str] = {}  # invocation -> execution that committed a failure
        self.payloads: dict[str, dict] = {}  # execution -> its wire payload
        self.after_result: set[str] = set()  # executions delivered once the session had its result
        self.commit_clock: dict[tuple[str, str], float] = {}  # (execution, invocation) -> its clock
        self.delivered_at: dict[str, float] = {}  # execution -> its clock when its delivery began
        self.world_at: dict[str, float] = {}  # execution -> the world's clock (epoch) then
        self.user_ran: set[str] = set()  # executions whose user code started
        # (g) redeliveries: the platform's promised delays, and per message its failures not
        # yet redelivered, as (world epoch of the failure, failure number)
        self.promised = platforms.redelivery_delays(spec.platform) if spec.clock else ()
        self.failures: dict[str, list[tuple[float, int]]] = defaultdict(list)

    # ---------------------------------------------------------------- deliveries (f)
    def delivered(self, ex) -> None:
        """A delivery begins: remember what was committed and whether the session had its
        result (the state the execution's ingress should act on)."""
        res = self._committed_read("result")
        ex.result_at_start = res is not None
        if res is not None:
            self.after_result.add(ex.id)
        txn = getattr(self.world, "txn", None)
        pending = {e for e in ([txn.holder] if txn is not None else [])}  # not yet visible
        ex.committed_at_start = {i for i, cs in self.commits.items() if any(e not in pending for e, _ in cs)} \
            | {i for i, e in self.failed_commits.items() if e not in pending}
        # which creation of each committed checkpoint was readable (gc eager/none, see `ran`)
        ex.ckpt_gens_at_start = {i: self.gens[f"ckpt/{i}"] for i in ex.committed_at_start}
        self.payloads[ex.id] = ex.msg.payload
        self.delivered_at[ex.id] = ex.clock()
        self.world_at[ex.id] = self.world.epoch
        if getattr(ex, "redelivery", None) is not None:
            self._check_redelivery(ex)
        deadline = self._deadline(ex.id)
        ex.after_deadline = deadline is not None and ex.clock() > deadline
        ex.tries_at_start = {n for (s_, n) in self.mem.items if s_ == self.session and n.startswith("asl/try/")}

    def failed(self, ex) -> None:
        """An execution failed (crashed, killed, timed out, raised) and the platform will
        redeliver its message: remember when (the world's clock) and which failure it was."""
        if self.promised:
            self.failures[ex.msg.id].append((self.world.epoch, ex.msg.failures))

    def _check_redelivery(self, ex) -> None:
        """(g) a redelivery starts no earlier than the platform's delay after the failure it
        follows (the earliest failure of the message not yet redelivered)."""
        queue = self.failures.get(ex.msg.id)
        if not queue:
            self._v("g", f"{ex.id}: a redelivery of {ex.msg.id} without a failure before it")
            return
        at, n = queue.pop(0)
        delay = self.promised[min(n, len(self.promised)) - 1]
        if self.world.epoch < at + delay:
            self._v("g", f"{ex.id}: {ex.msg.id} was redelivered {self.world.epoch - at:.0f} s after its "
                         f"failure {n}, before the platform's delay of {delay:.0f} s")

    def user_starts(self, ex, inst: str, event: Any) -> None:
        """User code of `inst` starts in `ex` with input `event`: (g) not before the due time
        of the Wait states before it (workflow `waits`)."""
        self.user_ran.add(ex.id)
        rule = self.spec.waits.get(self.spec.lambdas.get(ex.fn, ex.fn))
        if rule is None:
            return
        entered = self._wait_entered_by(ex)
        if entered is None:
            return
        start = self.delivered_at[entered]
        skew = start - (BASE_TIME + self.world_at[entered])  # that instance's clock is ahead by this
        due = rule(event, start) - skew
        now = BASE_TIME + self.world.epoch
        if now < due:
            self._v("g", f"user code of {inst} ran in execution {ex.id} {due - now:.0f} s before the due "
                         f"time of the Wait states before it (entered by {entered})")

    def _wait_entered_by(self, ex) -> str | None:
        """The execution that entered the first Wait before `ex`'s user code: up the chain of
        executions that invoked one another (message `<exec>><n>`), the first one that ran
        user code; the execution that committed its invocation, when known (a duplicate that
        adopted the commit re-sends what the committer computed)."""
        eid = ex.id
        while True:
            mid = eid.rsplit(".", 1)[0]
            if ">" not in mid:
                return None
            eid = mid.rsplit(">", 1)[0]
            if eid in self.user_ran:
                break
        anc = self.world.execs.get(eid)
        commits = self.commits.get(anc.instance) if anc is not None and anc.instance else None
        return commits[0][0] if commits else eid

    def user_input(self, ex, inst: str, event: Any) -> None:
        """(a) a call of `inst`'s user code (a function without a wrapper) in `ex` gets the
        value its execution's engine received (`ran`), at every call: an IR Retry attempt
        too, whatever an earlier call did to its own input in place."""
        got = [v for eid, v, _ in self.inputs.get(inst, []) if eid == ex.id]
        if got and _j(got[-1]) != _j(event):
            self._v("a", f"user code of {inst} in execution {ex.id} got {_j(event)[:60]}, not its "
                         f"execution's input {_j(got[-1])[:60]}: an earlier call changed it in place")

    def attempt_ran(self, ex, inst: str, n: int) -> None:
        """User code of Task attempt `n` (`$$.State.RetryCount`) of `inst` runs in `ex`: not
        when the attempt's outcome was recorded before the delivery began (f)."""
        if f"asl/try/{inst}/{n}" in getattr(ex, "tries_at_start", ()):
            self._v("f", f"user code of attempt {n} of {inst} ran in execution {ex.id}, whose delivery "
                         "began after that attempt's outcome was recorded")

    def _committed_read(self, name: str):
        txn = getattr(self.world, "txn", None)
        if txn is not None:
            return txn.committed_item(self.mem, (self.session, name))
        return self.mem.read_one(self.session, name)

    def rolled_back(self, ex, names: list[str]) -> None:
        """The deferred transaction of `ex` was lost (killed before its commit): forget the
        commits it made."""
        insts = {n[5:] for n in names if n.startswith("ckpt/")}
        if "result" in names:
            insts |= set(self.commits) | set(self.failed_commits)
        for inst in insts:
            if inst in self.commits:
                self.commits[inst] = [(e, v) for e, v in self.commits[inst] if e != ex.id]
                if not self.commits[inst]:
                    del self.commits[inst]
            if self.failed_commits.get(inst) == ex.id:
                del self.failed_commits[inst]

    def _v(self, inv: str, msg: str) -> None:
        if not any(v.invariant == inv and v.message == msg for v in self.violations):
            self.violations.append(Violation(inv, msg, len(self.world.log)))

    def checkpoints(self, fn: str) -> bool:
        ir = self.spec.functions[fn]
        return (self.spec.checkpoint and ir.checkpoint) or ir.has_fanin

    def commits_result(self, fn: str) -> bool:
        """A checkpointing function with no edge commits by creating `result` (the engine's
        `result_commit`, docs/protocol.md "One execution", 3)."""
        return fn in self.spec.functions and self.checkpoints(fn) and not self.spec.functions[fn].next

    # ---------------------------------------------------------------- recording
    def _deadline(self, eid: str) -> float | None:
        """The session's deadline (unix s) as execution `eid` knows it: the session start its
        payload inherits (`UnumSession.Start`; for the entry invocation, which starts the
        session, its own clock when its delivery began, as the engine takes it) plus the
        workflow's `session_timeout_seconds`; None without that option."""
        timeout = self.spec.options.get("session_timeout_seconds")
        payload = self.payloads.get(eid)
        if timeout is None or not isinstance(payload, dict):
            return None
        start = (payload.get("UnumSession") or {}).get("Start")
        if not isinstance(start, (int, float)):
            start = self.delivered_at.get(eid)
        return None if start is None else float(start) + float(timeout)

    def ran(self, ex, inst: str, value: Any) -> None:
        self.inputs[inst].append((ex.id, value, ex.msg.payload))
        if getattr(ex, "after_deadline", False):
            self._v("g", f"user code of {inst} ran in execution {ex.id}, delivered after the session's "
                         f"deadline (start + session_timeout_seconds)")
        if getattr(ex, "result_at_start", False):
            self._v("f", f"user code of {inst} ran in execution {ex.id}, whose delivery began after "
                         "the session had its result")
        elif inst in getattr(ex, "committed_at_start", ()) and \
                inst.split("-Unum", 1)[0] in self.spec.functions and \
                self.checkpoints(inst.split("-Unum", 1)[0]):
            if self.safe:
                self._v("f", f"user code of {inst} ran in execution {ex.id}, whose delivery began after "
                             f"{inst} was committed")
            elif not self._collected_since(ex, inst):
                self._v("f", f"user code of {inst} ran in execution {ex.id}, whose delivery began after "
                             f"{inst} was committed, and its checkpoint was never collected (gc {self.spec.gc})")

    def _collected_since(self, ex, inst: str) -> bool:
        """gc eager/none: whether the checkpoint of `inst` that was committed when `ex`'s
        delivery began has been removed (deleted by GC, expired, swept) since. If it has not,
        it was readable at every point of the execution's ingress, which must then have
        adopted it: user code that runs anyway is not the re-run seed 001 §3.5 allows."""
        name = f"ckpt/{inst}"
        item = self._committed_read(name)
        return item is None or bool(item.get("gc")) or \
            self.gens[name] != getattr(ex, "ckpt_gens_at_start", {}).get(inst)

    def computed_value(self, ex, inst: str, value: Any) -> None:
        try:
            self.computed[(ex.id, inst)] = json.loads(json.dumps(value))
        except (TypeError, ValueError):
            pass

    def user_output(self, ex, inst: str, value: Any) -> None:
        self.user_out[(ex.id, inst)] = value

    def user_error(self, ex, etype: str) -> None:
        self.user_raised[ex.id] = etype

    def created(self, name, item, ex) -> None:
        self.gens[name] += 1
        if ex is not None and (name == "result" or name.startswith("ckpt/")):
            inst = item.get("instance", "?") if name == "result" else name[5:]
            self.commit_clock.setdefault((ex.id, inst), ex.clock())
        if name.startswith("asl/try/") and item.get("Error") == "States.HeartbeatTimeout" and ex is not None:
            self._check_heartbeat_timeout(name, ex)
        if name.startswith("ckpt/") and "error" in item:
            inst = name[5:]
            if self.mem.read_one(self.session, "result") is None:
                self.failed_commits.setdefault(inst, ex.id)
        elif name.startswith("ckpt/") and not item.get("gc"):
            inst = name[5:]
            if self.gens[name] > 1 or self.commits.get(inst):
                self.recreated.add(inst)
            value = self.computed.get((ex.id, inst), self._load(item))
            if self.mem.read_one(self.session, "result") is not None:
                self.late[inst].append((ex.id, value))  # the session had ended: not a commit
            else:
                self.commits[inst].append((ex.id, value))
        if name == "result" and self.commits_result(item.get("instance", "?").split("-Unum", 1)[0]):
            inst = item.get("instance", "?")  # the commit point of a function with no edge
            if item.get("status") == "FAILED":
                self.failed_commits.setdefault(inst, ex.id)
            else:
                self.commits[inst].append((ex.id, self.computed.get((ex.id, inst), self._load(item))))
        if name == "result" and item.get("status") == "FAILED":
            self._check_failure(item, ex)

    def wrote(self, name, item, ex, prev=None) -> None:
        """A put: commits are recognised by value (a put that creates a checkpoint or the
        result commits; one that replaces a committed one by anything but a tombstone
        violates (b))."""
        committed_name = name == "result" or name.startswith("ckpt/")
        if not committed_name:
            self.gens[name] += 1
            return
        if prev is None:
            if not item.get("gc"):
                self.created(name, item, ex)  # a commit made by a plain put
            else:
                self.gens[name] += 1
            return
        tombstone = name.startswith("ckpt/") and item.get("gc")
        if _j(prev) != _j(item) and not tombstone:
            what = "tombstone" if prev.get("gc") else "committed item"
            self._v("b", f"{name}: a put by {ex.id if ex else '?'} replaced the {what} "
                         f"{_j(prev)[:60]} by {_j(item)[:60]}")

    def gave_up(self, ex) -> None:
        self.errors.append(f"{ex.id} ({ex.fn}): {type(ex.error).__name__}: {ex.error}")
        self._v("c", f"platform gave up on {ex.fn} after {ex.msg.failures} attempts "
                     f"(engine error {type(ex.error).__name__}: {str(ex.error)[:120]}): "
                     "a live session was failed")

    def _check_failure(self, item, ex) -> None:
        inst = item.get("instance", "?")
        fn = inst.split("-Unum", 1)[0]
        why = None
        if item.get("error") == "Unum.TransitionLimitExceeded":
            why = self._limit_why(inst, self.failed_commits.get(inst) or ex.id)
        elif item.get("error") == "Unum.SessionTimeout":  # the engine's, not user code's: (g)
            late = self._timeout_why(inst, self.failed_commits.get(inst) or ex.id)
            if late:
                self._v("g", late)
        elif fn in self.spec.functions and self.checkpoints(fn):
            first = self.failed_commits.get(inst)
            if self.commits.get(inst):
                why = (f"{inst} execution {ex.id} recorded {item.get('error')} although a success of "
                       f"{inst} was committed by {self.commits[inst][0][0]}: the failure was not committed")
            elif first is None:
                why = f"{inst} failed with {item.get('error')} but no failure of it was committed"
            elif first not in self.user_raised:
                why = (f"{inst}: the failure committed by {first} was not raised by its user code "
                       f"({item.get('error')}: {str(item.get('cause'))[:120]})")
        elif ex.id not in self.user_raised:
            why = f"{inst} failed with {item.get('error')}: {str(item.get('cause'))[:120]} " \
                  "although its user code did not raise in that execution"
        if why:
            self._v("c", why)

    def _timeout_why(self, inst: str, eid: str) -> str | None:
        """Why a SessionTimeout committed by execution `eid` is not legitimate (g), or None."""
        deadline = self._deadline(eid)
        at = self.commit_clock.get((eid, inst))
        if deadline is None or at is None:
            return f"{inst} failed with Unum.SessionTimeout in execution {eid}, which cannot be past a deadline"
        if at <= deadline:
            return (f"{inst} failed with Unum.SessionTimeout in execution {eid} at {at - deadline:+.0f} s "
                    "from the session's deadline (not past it)")
        return None

    def _check_heartbeat_timeout(self, name: str, ex) -> None:
        """(g) a States.HeartbeatTimeout outcome only past the last heartbeat + HeartbeatSeconds."""
        rest = name[len("asl/try/"):]
        rec = self.mem.read_one(self.session, "asl/cb/" + rest)
        beat = self.mem.read_one(self.session, "asl/hb/" + rest) or {}
        if rec is None or rec.get("hb") is None:
            self._v("g", f"{name}: States.HeartbeatTimeout recorded by {ex.id} for an attempt without "
                         "a token record with HeartbeatSeconds")
            return
        due = max(float(rec["t0"]), float(beat.get("at", rec["t0"]))) + float(rec["hb"])
        if ex.clock() < due:
            self._v("g", f"{name}: States.HeartbeatTimeout recorded by {ex.id} {due - ex.clock():.0f} s "
                         "before the heartbeat deadline")

    def _check_sends(self, res: dict[str, Any]) -> None:
        """(g) an accepted SendTaskSuccess is the Task's outcome (callback workflows, whose
        Task output is the session's result on success)."""
        from .scheduler import ACTOR
        for ex in self.world.execs.values():
            if ex.fn == ACTOR and ex.status == "sent" and ex.msg.payload.get("kind") == "success" \
                    and res.get("status") == "SUCCEEDED" and self._load(res) != {"ok": ex.id}:
                self._v("g", f"SendTaskSuccess by {ex.id} was accepted, but the result is "
                             f"{_j(self._load(res))[:80]}")

    def _limit_why(self, inst: str, eid: str) -> str | None:
        """Why a TransitionLimitExceeded committed by execution `eid` is not legitimate (None
        when the committed path to `inst` is over runtime.max_transitions)."""
        limit = int(self.spec.options.get("max_transitions", 25_000))
        depth = self._path_depth(self.payloads.get(eid, {}))
        if depth is None:
            return None  # a parent without a recorded commit: cannot tell
        if depth > limit:
            return None
        return (f"{inst} failed with Unum.TransitionLimitExceeded (execution {eid}, count "
                f"{self.payloads.get(eid, {}).get('Depth', 0)}) although the committed path to it has "
                f"{depth} transitions, within max_transitions = {limit}: the count came from a duplicate")

    def _path_depth(self, payload: dict[str, Any]) -> int | None:
        """Transitions on the committed path to an execution with wire `payload`: one more
        than the deepest committed parent's, counted as the executions that committed them
        were delivered (0 for the entry)."""
        data = payload.get("Data", {})
        if data.get("Source") == "refs":
            parents = RefList.from_wire(data.get("Value")).names()
        elif data.get("Source") == "checkpoint":
            parents = list(data.get("Value") or [])
        else:
            parents = [p["Name"] for p in payload.get("Parents") or []]
        if not parents:
            return int(payload.get("Depth", 0))
        depths = []
        for parent in parents:
            commits = self.commits.get(parent)
            if not commits:
                return None
            depths.append(int(self.payloads.get(commits[0][0], {}).get("Depth", 0)))
        return max(depths) + 1

    # ---------------------------------------------------------------- per step (b)
    def _load(self, item: dict[str, Any]) -> Any:
        if "blob" in item:
            try:
                return json.loads(self.blobs.get(self.session, item["blob"]))
            except KeyError:
                return UNREADABLE
        return item.get("v")

    def after_step(self, action, op) -> None:
        if action[0] == "expire" or (op is not None and op.kind in _WRITES):
            self.check_readable()

    def check_readable(self) -> None:
        """(b): a readable result/checkpoint keeps the value it first had (per creation)."""
        for (s, name), (item, _) in list(self.mem.items.items()):
            if s != self.session or item.get("gc"):
                continue
            if name != "result" and not name.startswith("ckpt/"):
                continue
            if name == "result" and item.get("status") != "SUCCEEDED":
                continue
            key = (name, self.gens[name])
            val = _j(self._load(item))
            first = self.readable.setdefault(key, val)
            if first != val:
                self._v("b", f"readable {name} changed from {first[:80]} to {val[:80]}")

    # ---------------------------------------------------------------- at the end
    def finish(self, terminal: bool) -> None:
        """End-of-schedule checks; (d),(e) only when the schedule ran to completion."""
        self.check_readable()
        self._check_a()
        if not terminal:
            return
        res = self.mem.read_one(self.session, "result")
        if res is None:
            self._v("e", "no work remains but the session has no result (hang)")
        else:
            self._check_result(res)
            if self.spec.clock:
                self._check_sends(res)
        left = [n for n in self.mem.names(self.session) if n != "result"]
        if self.spec.gc == "none":  # nothing is collected: what is left must expire (TTL)
            horizon = self.world.now() + 9 * 86400  # the session's item lifetime (8 days) and more
            def lives_past(n: str) -> bool:
                got = self.mem.items.get((self.session, n)) or self.mem.sets.get((self.session, n))
                return got is None or got[1] > horizon
            left = [n for n in left if lives_past(n)]
        keep = {res["blob"]} if res is not None and "blob" in res else set()
        left_blobs = [k for k in self.blobs.keys(self.session) if k not in keep]
        if self.spec.gc == "none":
            left_blobs = [k for k in left_blobs if self.blobs.blobs[(self.session, k)][1] > horizon]
        if left or left_blobs:
            self._v("d", f"left after the end: items {left[:6]} blobs {left_blobs[:6]}")

    def _check_result(self, res: dict[str, Any]) -> None:
        if res.get("status") != "SUCCEEDED":
            if not self.spec.failures_possible and not any(v.invariant == "c" for v in self.violations):
                self._v("c", f"session FAILED: {res.get('error')}: {str(res.get('cause'))[:120]}")
            return
        inst = res.get("instance", "")
        fn = inst.split("-Unum", 1)[0]
        if self.spec.terminals is not None and fn not in self.spec.terminals:
            self._v("e", f"the result was produced by {inst}, not by a terminal "
                         f"{sorted(self.spec.terminals)} (value {_j(self._load(res))[:80]})")
        value = self._load(res)
        if fn in self.spec.functions and self.checkpoints(fn) and self.commits.get(inst):
            values = {_j(v) for _, v in self.commits[inst]}
            if _j(value) not in values:
                self._v("a", f"result {_j(value)[:80]} is not the value committed for {inst}")
        if self.spec.check_result is not None:
            msg = self.spec.check_result(value, View(self))
            if msg:
                self._v("e" if not self.safe else "a", f"result inconsistent with committed values: {msg}")

    def _check_a(self) -> None:
        if not self.safe:
            return
        for inst, commits in self.commits.items():
            values = {_j(v) for _, v in commits}
            if len(values) > 1:
                self._v("a", f"{inst} committed {len(values)} different values "
                             f"(by {', '.join(e for e, _ in commits)})")
        exempt = {e.target for fn, ir in self.spec.functions.items() if not self.checkpoints(fn)
                  for e in ir.next}
        for inst, seen in self.inputs.items():
            fn = inst.split("-Unum", 1)[0]
            if fn in exempt:
                continue
            if len({_j(v) for _, v, _ in seen}) > 1:
                self._v("a", f"executions of {inst} received different inputs "
                             f"({', '.join(e for e, _, _ in seen)})")
            for eid, value, payload in seen:
                exp = self._expected_input(fn, payload)
                if exp is not None and _j(exp) != _j(value):
                    self._v("a", f"{inst} execution {eid} received {_j(value)[:60]}, not the "
                                 f"committed value {_j(exp)[:60]}")

    def _expected_input(self, fn: str, payload: dict[str, Any]) -> Any:
        data = payload.get("Data", {})
        if data.get("Source") in ("checkpoint", "refs"):
            if data.get("Source") == "refs":
                rl = RefList.from_wire(data.get("Value"))
                if rl.exits:
                    return None  # inputs handed over through exit/ items, named by frame base
                refs = rl.names()
            else:
                refs = data.get("Value") or []
            if all(self.commits.get(r) for r in refs):
                return [self.commits[r][0][1] for r in refs]
            return None
        parents = payload.get("Parents") or []
        if len(parents) != 1:
            return None
        parent = parents[0]["Name"]
        pfn = parent.split("-Unum", 1)[0]
        if not self.commits.get(parent) or pfn not in self.spec.functions:
            return None
        edges = [e for e in self.spec.functions[pfn].next if e.target == fn]
        if len(edges) != 1 or any(m.assign is not None and m.assign.target == "out"
                                  for m in edges[0].modifiers):
            return None
        committed = self.commits[parent][0][1]
        if edges[0].type == "Scalar":
            return committed
        p = Payload.decode(payload, new_session=lambda: "x")
        if edges[0].type == "Map" and isinstance(committed, list) and p.frames:
            i = p.frames[-1].index
            return committed[i] if i < len(committed) else None
        return None
