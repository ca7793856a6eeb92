"""The ingress/egress engine that runs in-situ with every user function.

Source: seed 001 §3.3 (checkpoints, Figure 3), §3.4 (fan-in sets), §3.5 (garbage
collection), §3.6 (naming); docs/architecture.md §3 (the commit-point rule); docs/protocol.md
(the argument for each invariant). One `Engine.handle(payload)` call is one execution of
one invocation; its state lives in an `Execution`:

Ingress
  1. Decode the payload; derive this invocation's name from function, frames and iteration.
  2. Read [own checkpoint, fan-in input checkpoints...], then the session result (items may
     be read independently, in any order: nothing below assumes a snapshot; the checkpoint
     is read before `result` so that a committed invocation's duplicate never runs).
     Result present -> drop (the session ended; sweep again for late writes).
     Own checkpoint a tombstone -> drop. Own checkpoint present -> adopt it.
     An input (fan-in checkpoint or payload blob) already collected -> drop: inputs are
     collected only after an execution of this invocation committed and continued.
Commit
  3. Run the user code (IR `Retry`), plan the continuations on the value, and create the
     checkpoint if absent: the one commit point. A failure after retries is committed the
     same way. On conflict adopt the stored item. Everything written before the commit is
     private (content-addressed blobs) and a loser removes what the winner does not name.
Egress (from the committed item only)
  4. Publish the wrapper's items named in the checkpoint; invoke every continuation with the
     context committed in the checkpoint; fan-in edges add this invocation to the target's
     set and the one that completes it invokes the target. No continuation -> the value is
     the session result (first outcome wins), and the session ends.
  5. GC (runtime.gc): parents, fan-in set, input blob. Then, if the session has ended
     meanwhile, delete whatever this execution created (it would outlive the final sweep).
     The same check ends an execution that is dropped or suspended after it wrote (a
     wrapper's items, e.g. Step Functions attempt records, count as its writes).
History (runtime.ports.Events, docs/observability.md)
  With an `events` adapter, each execution is recorded after it ends (kind, times, time in
  user code / datastore / invoke, sizes), and the session's start and end; never inside the
  commit protocol, and a failed write never fails the execution.
"""

from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from dataclasses import dataclass, field, fields
from typing import Any, Callable

from .errors import (IRError, StaleExecution, Suspended, UnumError, UserFunctionError, user_error_text,
                     user_traceback)
from .faults import Faults  # noqa: F401  (re-exported: the engine's fault hook)
from . import redrive
from .gc import GC_MODES, Collector
from .ir import FunctionIR
from .metadata import Fanout, edge_kind, peak_memory_mb
from .payload import (INPUT_OF, RESULT_KEY, Parent, Payload, RefList, checkpoint_key, done_key, fanin_key,
                      frames_name, instance_name)
from .plan import Call, Plan, Planner  # noqa: F401  (re-exported for callers)
from .ports import BlobStore, Datastore, Events, Invoker, emit_safely
from .triggers.shuffle import SHUFFLE_SOURCE, consumer_input, consumer_values
from .session import (BLOBS_MARKER, RECORD_FIELD, SESSION_CONTEXT, SESSION_TIMEOUT_ERROR, Retention, create_result,
                      end, failed_where, failure_item, session_status, success_item, undo_late_writes)
from .storage import ValueStore, blob_key, canonical_json, encode, item_blobs, json_copy
from .triggers import window
from .triggers.registry import trigger_for

__all__ = ["Engine", "Options", "Faults", "UserContext", "Outcome", "Execution", "GC_MODES",
           "Call", "Plan", "RefList"]


def cause_line(cause: Any) -> str:
    """The first line of an error's cause for the engine's log: for a Step Functions Task,
    the `errorMessage` of Lambda's JSON cause (runtime.asl.machine.lambda_cause) and
    `(at FILE:LINE)` of its innermost stack frame, instead of the whole JSON with its stack
    trace (a local platform maps the bundle path to the user's file)."""
    text = str(cause or "")
    at = ""
    if text.lstrip().startswith("{") and "errorMessage" in text:
        try:
            doc = json.loads(text)
            frames = [str(f).splitlines()[0] for f in doc.get("stackTrace") or [] if str(f).startswith("  File")]
            if frames and '", line ' in frames[-1]:
                where, _, rest = frames[-1].strip().removeprefix('File "').partition('", line ')
                at = f" (at {where}:{rest.split(',')[0]})"
            text = str(doc.get("errorMessage", text))
        except (ValueError, AttributeError):
            pass
    return (text.splitlines()[0] if text else "") + at


@dataclass(frozen=True)
class Options:
    """Runtime options from the app manifest (`runtime:` section). Seconds for durations.

    `max_transitions`: longest chain of invocations one session may take on any path (a
    cycle with no exit ends as FAILED, like Step Functions' 25,000-event history limit)."""

    checkpoint: bool = True
    gc: str = "safe"
    result_retention_seconds: int = 8 * 86400
    intermediate_retention_seconds: int = 86400
    session_timeout_seconds: int = 7 * 86400
    max_transitions: int = 25_000
    history: str = "full"  # runtime.history: full | session-only | off (runtime.ports.Events)
    redrive: bool = False  # runtime.redrive: a failure keeps the session's state (runtime/redrive.py)

    @classmethod
    def from_mapping(cls, opts: dict[str, Any]) -> "Options":
        """Options from a manifest's `runtime:` mapping (unknown keys are the platform's)."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in opts.items() if k in known})

    @property
    def retention(self) -> Retention:
        margin = float(self.intermediate_retention_seconds)
        return Retention(session_timeout=self.session_timeout_seconds,
                         result=self.result_retention_seconds,
                         margin=redrive.window_margin(margin) if self.redrive else margin)


@dataclass
class UserContext:
    """The `context` argument of a user handler (see docs/ir.md).

    `extra` is the inherited context (payload fields beyond the protocol's); what a wrapper
    adds to it is committed with the checkpoint and inherited by the continuations.
    `publish(key, value)` asks for an item that is created, from the committed checkpoint,
    before any continuation is invoked (e.g. the input of a Step Functions Map's join).
    `wire_of()` gives this invocation's wire payload without delivery fields: a wrapper that
    suspends (runtime.errors.Suspended) stores it so that whatever resumes it re-invokes the
    same invocation (docs/stepfunctions.md, callbacks). `created`: names of datastore items
    a wrapper created for this execution (runtime/asl/attempts.py appends the Task attempt
    records it creates); they are the execution's own writes for the late-write rule: if the
    session turns out to have ended, they are deleted again (runtime.session.undo_late_writes)."""

    session: str
    instance: str
    function: str
    indexes: list[int]
    sizes: list[int]
    iteration: int
    extra: dict[str, Any] = field(default_factory=dict)
    published: dict[str, Any] = field(default_factory=dict)
    bases: list[int] = field(default_factory=list)  # iteration each frame was entered at
    wire_of: Callable[[], dict[str, Any]] | None = None  # this invocation's payload, see above
    created: list[str] = field(default_factory=list, repr=False)  # a wrapper's items, see above
    key: str | None = None  # a shuffle consumer's key (runtime/triggers/shuffle.py), else None

    @property
    def index(self) -> int | None:
        return self.indexes[-1] if self.indexes else None

    @property
    def size(self) -> int | None:
        return self.sizes[-1] if self.sizes else None

    def publish(self, key: str, value: Any) -> None:
        """Create item `key` holding `value` once this invocation has committed."""
        self.published[key] = value


@dataclass
class Outcome:
    """What one execution did: status is 'ran', 'adopted', 'dropped', 'failed' or
    'suspended' (waiting for a callback: nothing committed, nothing invoked)."""

    status: str
    session: str
    instance: str
    detail: str = ""
    invoked: int = 0


@dataclass
class Execution:
    """The state of one execution of one invocation (one `Engine.handle` call).

    `created`: items this execution may have created (the list is its UserContext's
    `created`, so a wrapper's items are included); `values.written`: blobs it wrote.
    Both are deleted again if the session turns out to have ended (late writes)."""

    payload: Payload
    instance: str
    ctx: UserContext
    values: ValueStore
    start: float
    created: list[str] = field(default_factory=list)
    refs: list[str] | None = None  # fan-in input invocation names
    ref_keys: list[str] = field(default_factory=list)  # the items they are read from
    marked: bool = False  # this execution created the session's BLOBS_MARKER
    # quorum stragglers (runtime/triggers/quorum.py) and branches whose target already
    # consumed its inputs (gc eager, Engine._consumed): (target invocation, this checkpoint
    # as its parent) collected in the GC step as if the target had consumed it
    declined: list[tuple[str, Parent]] = field(default_factory=list)

    @property
    def session(self) -> str:
        return self.payload.session


class _Drop(Exception):
    """Internal: end this execution as a dropped duplicate (the reason is the message)."""


class Engine:
    """Runs one function's invocations.

    `handler(event, context)` is the user function; `datastore`, `blobs`, `invoker` are the
    target's adapters; `faults` the fault-injection hook; `clock` returns Unix seconds.
    `wrapper`, when given, replaces the plain user call: `wrapper(call_user, value, ctx)`
    returns (value, route) and may raise UserFunctionError (used by compiled ASL), or
    runtime.errors.Suspended (the execution ends with nothing committed, docs/protocol.md).
    `watchdog` (set by a target that has one, else None): the platform's per-attempt timer,
    `arm(seconds, session, key, outcome, expires_at)` / `disarm()` (runtime/local/entry.py).
    Raises IRError for an unknown GC mode.
    """

    def __init__(self, ir: FunctionIR, handler: Callable[[Any, Any], Any], datastore: Datastore,
                 invoker: Invoker, blobs: BlobStore, options: Options | None = None,
                 faults: Faults | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep,
                 log: Callable[[str], None] | None = None, wrapper=None,
                 events: Events | None = None):
        if options is not None and options.gc not in GC_MODES:
            raise IRError(f"runtime.gc: {options.gc!r} must be one of {', '.join(GC_MODES)}")
        self.ir = ir
        self.handler = handler
        self.options = options or Options()
        # history (runtime.ports.Events): observations written outside the commit protocol
        self.events = events if events is not None and self.options.history != "off" else None
        if self.events is not None:
            self.events.level = self.options.history
        self._obs = threading.local()  # the record of the execution this thread runs
        self.last_record: dict[str, Any] | None = None
        self.on_session_end: Callable[[], None] | None = None  # e.g. flush captured output
        if self.events is not None and self.options.history == "full":
            datastore = _Timed(datastore, self._obs, "datastore_ms")  # type: ignore[assignment]
            blobs = _Timed(blobs, self._obs, "datastore_ms")  # type: ignore[assignment]
            invoker = _Timed(invoker, self._obs, "invoke_ms")  # type: ignore[assignment]
        self.ds = datastore
        self.invoker = invoker
        self.blobs = blobs
        self.retention = self.options.retention
        self.faults = faults or Faults()
        self.clock = clock
        self.sleep = sleep
        self.log = log or (lambda msg: None)
        self.planner = Planner(ir)
        self.collector = Collector(datastore, blobs, self.options.gc)
        self.wrapper = wrapper
        if wrapper is not None and hasattr(wrapper, "attach"):
            wrapper.attach(self)  # wrappers that read the datastore or the clock (e.g. ASL)
        self.checkpointing = (self.options.checkpoint and ir.checkpoint) or ir.has_fanin
        # a checkpointing function with no edge at all ends the session whatever its value:
        # its commit point is the create of `result` itself, it writes no checkpoint
        # (docs/protocol.md "One execution", 3)
        self.result_commit = self.checkpointing and not ir.next
        # the platform's per-execution timer, when it has one (local target: the platform
        # kills the instance at the armed deadline; runtime/local/entry.py Watchdog)
        self.watchdog: Any = None

    # ------------------------------------------------------------------ public helpers
    def load(self, session: str, item: dict[str, Any]) -> Any:
        """The value held by an item ({"v"} inline or {"blob"}); KeyError if its blob is gone."""
        return ValueStore(self.ds, self.blobs).load(session, item)

    def plan(self, value: Any, p: Payload, instance: str, route: Any = None) -> Plan:
        """See runtime.plan.Planner.plan."""
        return self.planner.plan(value, p, instance, route)

    # ------------------------------------------------------------------ user code
    def _call_user(self, value: Any, ctx: UserContext) -> Any:
        policy = self.ir.retry
        attempt = 0
        rec = getattr(self._obs, "rec", None)
        while True:
            t = time.perf_counter()
            try:
                # every call gets its own copy of the input, as from a payload: a handler that
                # changes its input in place must not change what a Retry attempt, the wrapper
                # (an ASL ResultPath merges into the state's input) or the history read after it
                out = self.handler(json_copy(value), ctx)
            # user code: every Exception, and the process exits it asked for (sys.exit(),
            # raise KeyboardInterrupt) as Lambda's runtime reports them: a failure of this
            # invocation, not of the platform (InjectedCrash and the like still propagate)
            except (Exception, KeyboardInterrupt, SystemExit) as exc:  # noqa: BLE001 - user code: see the comment above
                etype = type(exc).__name__
                text = user_error_text(exc)
                if attempt < policy.max_attempts and policy.matches(etype):
                    if rec is not None:
                        rec["extra"].append({"kind": "retried", "error": etype, "t0": self.clock(),
                                             "detail": f"{etype}: {text}; IR Retry {attempt + 1}/"
                                                       f"{policy.max_attempts}"[:2000]})
                    self.sleep(policy.interval * (policy.backoff ** attempt))
                    attempt += 1
                    self.log(f"{ctx.instance}: {etype}: {text}; retry {attempt}/{policy.max_attempts}")
                    continue
                raise UserFunctionError(etype, text, user_traceback(exc)) from None
            finally:
                if rec is not None:
                    rec["user_ms"] += (time.perf_counter() - t) * 1000
            if self.wrapper is not None:  # the wrapper walks the value: refuse one too deep first
                self._check_depth(out)
            return out

    def _check_depth(self, out: Any) -> None:
        """UserFunctionError when the handler's return value is nested too deep to encode as
        JSON (the encoder's RecursionError), before a wrapper walks it."""
        try:
            canonical_json(out)
        except RecursionError:
            raise self._too_deep() from None
        except (TypeError, ValueError):
            pass  # reported with the value's type by _run_user

    def _too_deep(self) -> UserFunctionError:
        return UserFunctionError("TypeError", f"{self.ir.name} returned a value nested too deep to encode as "
                                 f"JSON (deeper than Python's recursion limit of {sys.getrecursionlimit()})")

    def _run_user(self, value: Any, ctx: UserContext) -> tuple[Any, Any]:
        if self.wrapper is not None:
            out, route = self.wrapper(self._call_user, value, ctx)
        else:
            out, route = self._call_user(value, ctx), None
        try:
            # canonical JSON form: what is checkpointed is exactly what consumers will see
            out = json.loads(canonical_json(out))
        except (TypeError, ValueError) as exc:
            raise UserFunctionError("TypeError", f"{self.ir.name} returned a value that is not "
                                    f"JSON-serializable ({type(out).__name__}): {exc}") from None
        except RecursionError:
            raise self._too_deep() from None
        return out, route

    # ------------------------------------------------------------------ main entry
    def handle(self, raw: dict[str, Any], delivery: dict[str, Any] | None = None) -> Outcome:
        """Run one execution of the invocation described by the wire payload `raw`.

        `delivery`: what the platform knows of this delivery, {"attempt": int (1-based),
        "request_id": str}, recorded in the history (runtime.ports.Events) when the engine
        has an `events` adapter. Returns an Outcome. Raises UnumError for a malformed
        payload, InjectedCrash (fault injection) and infrastructure errors from the adapters,
        which the platform retries; user errors never propagate: they are committed and
        recorded as the session's failure. History is written after the execution, outside
        the commit protocol, and a failure to write it never fails the execution."""
        if self.events is None:
            return self._handle_raw(raw)
        return self._observed(raw, delivery or {})

    def _observed(self, raw: dict[str, Any], delivery: dict[str, Any]) -> Outcome:
        full = self.options.history == "full"
        rec: dict[str, Any] = {"kind": None, "session": raw.get("Session") if isinstance(raw, dict) else None,
                               "instance": None, "function": self.ir.name,
                               "attempt": delivery.get("attempt"), "request_id": delivery.get("request_id"),
                               "t0": self.clock(), "user_ms": 0.0, "datastore_ms": 0.0, "invoke_ms": 0.0,
                               "extra": [], "started": None, "ended": None}
        if full:
            try:
                rec["payload_bytes"] = len(encode(raw))
            except (TypeError, ValueError):
                pass
        self._obs.rec = rec
        c0 = self._obs.c0 = time.perf_counter()
        try:
            out = self._handle_raw(raw)
        except BaseException as exc:
            rec.update(kind="crashed", error=type(exc).__name__, detail=f"{type(exc).__name__}: {exc}"[:2000])
            raise
        else:
            rec.update(kind=out.status, detail=out.detail[:2000] or None, invoked=out.invoked)
            if out.status == "failed":
                rec["error"] = out.detail.partition(":")[0]
            rec["session"], rec["instance"] = out.session, out.instance
            return out
        finally:
            self._obs.rec = None
            self.last_record = rec  # for the target's log capture (session, instance)
            rec["t1"] = self.clock()
            total = (time.perf_counter() - c0) * 1000
            rec["runtime_ms"] = max(0.0, total - rec["user_ms"] - rec["datastore_ms"] - rec["invoke_ms"])
            if full:  # planner metadata (runtime/metadata.py)
                rec["peak_memory_mb"] = peak_memory_mb()
            self._emit(rec, full)

    def observing(self) -> bool:
        """True while an execution runs whose event is recorded at history level `full`
        (then `observe` adds fields to it)."""
        return getattr(self._obs, "rec", None) is not None and self.options.history == "full"

    def observe(self, field: str, value: Any) -> None:
        """Set `field` of the current execution's event to `value`: a JSON value, or a
        callable `value(event) -> JSON value` called when the execution ends, with the
        event's other fields (e.g. `states`: runtime.asl.steps.StepLog.compact); an empty
        list is left out. No effect unless `observing()`."""
        if self.observing():
            self._obs.rec.setdefault("observed", {})[field] = value

    def _emit(self, rec: dict[str, Any], full: bool) -> None:
        """Write an execution's history (never raises)."""
        self._emit_parts(rec, self._event(rec), full)

    def _event(self, rec: dict[str, Any]) -> dict[str, Any]:
        """The execution event of record `rec`: its fields but the internal ones, and the
        observed ones (`observe`) resolved."""
        event = {k: v for k, v in rec.items() if k not in ("started", "ended", "extra", "observed")}
        for k, v in (rec.get("observed") or {}).items():
            try:
                v = v(event) if callable(v) else v
            except Exception as exc:  # noqa: BLE001  (an observation never fails the execution)
                self.log(f"history: could not record {k}: {type(exc).__name__}: {exc}")
                continue
            if not (isinstance(v, list) and not v):
                event[k] = v
        return event

    def _emit_parts(self, parts: dict[str, Any], rec: dict[str, Any], full: bool) -> None:
        ev = self.events
        assert ev is not None
        started, ended, extra = parts["started"], parts["ended"], parts["extra"]
        if rec["session"] is None:
            return
        if started is not None:
            emit_safely(ev.session_started, rec["session"], self.ir.name, *started, log=self.log)
        if full:
            base = {k: rec.get(k) for k in ("session", "instance", "function", "attempt", "request_id")}
            events = [{**base, "t1": None, **e} for e in extra] + [rec]
            emit_safely(ev.record, events, log=self.log)
        if ended is not None:
            emit_safely(ev.session_ended, rec["session"], session_status(ended), rec["t1"], ended, log=self.log)

    def _handle_raw(self, raw: dict[str, Any]) -> Outcome:
        if window.is_window_payload(raw):  # a window firing or timer (runtime/triggers/window.py)
            t0 = self.clock()
            name, resolved = window.resolve(raw, self.ds, self.blobs, self.clock(), self.retention)
            if resolved is None:
                return Outcome("dropped", window.store_session(name), self.ir.name,
                               f"window {name}: timer of an empty window")
            raw = resolved
            rec = getattr(self._obs, "rec", None)
            if rec is not None:  # history: one `fired` event per firing (docs/observability.md)
                rec["extra"].append(window.fired_event(raw, t0))
        p = Payload.decode(raw, new_session=lambda: str(uuid.uuid4()))
        ex = self._execution(p)
        try:
            return self._handle(ex)
        except (_Drop, StaleExecution) as why:
            # after user code ran, a drop may follow writes (a wrapper's, the blobs marker)
            self._undo_late_writes(ex)
            return Outcome("dropped", ex.session, ex.instance, str(why))
        except Suspended as why:
            # a suspended Task attempt wrote its records (runtime/asl/attempts.py); the
            # session may have ended and been swept before they landed
            self._undo_late_writes(ex)
            return Outcome("suspended", ex.session, ex.instance, str(why))

    def _execution(self, p: Payload) -> Execution:
        indexes = tuple(f.index for f in p.frames)
        inst = instance_name(self.ir.name, indexes, p.iteration, tuple(f.base for f in p.frames))
        extra = dict(p.extra)
        entry = SESSION_CONTEXT not in extra
        if entry:  # the entry invocation: the session starts now
            extra[SESSION_CONTEXT] = {"Start": self.clock()}
        try:
            start = float(extra[SESSION_CONTEXT]["Start"])
        except (KeyError, TypeError, ValueError):
            raise UnumError(f"invocation payload: {SESSION_CONTEXT} has no numeric Start") from None
        rec = getattr(self._obs, "rec", None)
        if rec is not None and isinstance(p.delivery.get(redrive.REDRIVEN), int):
            n = p.delivery[redrive.REDRIVEN]  # the first delivery of redrive n: ExecutionRedriven
            rec["extra"].append({"kind": "redriven", "t0": self.clock(), "t1": self.clock(),
                                 "redrive_count": n, "detail": f"redrive {n}"})
        if rec is not None:
            rec["session"], rec["instance"] = p.session, inst
            if entry:
                rec["started"] = (start, {"blob": p.value} if p.source == "blob" else p.value)
            if self.options.history == "full" and rec.get("payload_bytes", 1 << 30) <= 2048 \
                    and p.source in ("http", "blob"):
                rec["input"] = p.value if p.source == "http" else {"blob": p.value}
                if isinstance(p.delivery.get(INPUT_OF), str) and self.events is not None \
                        and self.events.derived_fields:
                    rec["input_of"] = p.delivery[INPUT_OF]
        ctx = UserContext(p.session, inst, self.ir.name, list(indexes), [f.size for f in p.frames],
                          p.iteration, extra, bases=[f.base for f in p.frames])
        first = dict(extra)  # the context as delivered, with the session start this execution uses
        ctx.wire_of = lambda: {**{k: v for k, v in p.encode().items() if k not in p.delivery}, **first}
        refs, keys = None, []
        if p.source == SHUFFLE_SOURCE:  # a shuffle consumer (runtime/triggers/shuffle.py)
            ctx.key = consumer_input(p.value)[0]
        if p.source == "checkpoint":
            refs = [str(r) for r in p.value]
            keys = [checkpoint_key(r) for r in refs]
        elif p.source == "refs":
            rl = RefList.from_wire(p.value)
            refs, keys = rl.names(), rl.keys()
        ex = Execution(p, inst, ctx, ValueStore(self.ds, self.blobs), start, created=ctx.created,
                       refs=refs, ref_keys=keys)
        ex.values.before_put = lambda: self._mark_blobs(ex)
        return ex

    def _mark_blobs(self, ex: Execution) -> None:
        """Before this execution's first blob: create the session's BLOBS_MARKER, so that the
        final sweep lists the blob store (runtime.session.end). Not under gc `none`, which
        sweeps nothing (the bucket's lifecycle rule expires blobs)."""
        if ex.marked or self.options.gc == "none":
            return
        self.ds.put(ex.session, BLOBS_MARKER, {"blobs": True}, self._expiry(ex))
        ex.created.append(BLOBS_MARKER)
        ex.marked = True

    def _expiry(self, ex: Execution) -> float:
        return self.retention.item_expiry(ex.start)

    def _handle(self, ex: Execution) -> Outcome:
        session, inst = ex.session, ex.instance
        own, inputs = self._ingress(ex)
        status = "adopted"
        planned: Plan | None = None
        if own is None:
            status = "ran"
            item, planned, value = self._run(ex, self._input(ex, inputs))
            if self.result_commit:
                return self._commit_result(ex, item, inputs)
            own = self._commit(ex, item)
            if own is not item:
                status, planned = "adopted", None
        if "error" in own:
            return self._failed(ex, own)
        if planned is None:
            try:
                value = ex.values.load(session, own)
            except KeyError:  # collected while this (late) execution read it
                raise _Drop("checkpoint collected while it was read") from None
        self._publish(ex, own)
        plan = planned if planned is not None else self.planner.plan(value, ex.payload, inst, own.get("route"))
        invoked = self._continue(ex, own, plan)
        before_gc = len(ex.created)
        result = None
        if plan.terminal:
            piece = ex.values.piece(session, "result", value)
            result = self._create_result(session, success_item(inst, piece))[1]
            self._note_end(result, status, invoked)
        self.faults.point("before_gc", session, inst)
        self._collect(ex, inputs)
        if result is not None and self._keeps_failure(result):
            self._note_redrive(ex, failed=False)  # another branch failed first: continue on redrive
        elif result is not None:
            self._end(session, result)
        elif not invoked or len(ex.created) > before_gc:
            # a continuation was delivered after everything created before it, and one that
            # finds the session ended sweeps it again; only later creations need checking
            self._undo_late_writes(ex)
        return Outcome(status, session, inst, invoked=invoked)

    # ------------------------------------------------------------------ ingress
    def _ingress(self, ex: Execution) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        """Read own checkpoint, inputs and result; returns (own item or None, input items).
        Raises _Drop for stale executions. `result` is read under every GC mode, `none`
        included: a session that ended (a branch failed, a timeout, a give-up, a stop) must
        not run the user code of its other branches' next invocations.

        Two ordered reads when this invocation has a checkpoint: [own checkpoint, inputs]
        first, `result` only after that read returned. A multi-item read is not a snapshot,
        and the final sweep removes a checkpoint (or its tombstone) only after `result`
        exists: so a duplicate of an invocation committed before this ingress began either
        finds its checkpoint (adopt, or drop on a tombstone), or finds it swept and then
        finds `result` (drop), and never runs the user code (docs/protocol.md "Why the
        invariants hold", 1). In one read, `result` could be served before the sweep and
        the checkpoint after it."""
        own_ckpt = self.checkpointing and not self.result_commit
        consumed = None
        if own_ckpt:
            items = self.ds.get_many(ex.session, [checkpoint_key(ex.instance)] + ex.ref_keys)
            own, inputs = items[0], items[1:]
            if own is None and self._records_done(ex):
                # a fan-in target whose checkpoint is gone under gc eager: did it commit and
                # consume its inputs? (`_consumed`; read after the inputs, as `result` is)
                result, consumed = self.ds.get_many(ex.session, [RESULT_KEY, done_key(ex.instance)])
            else:
                result = self.ds.get(ex.session, RESULT_KEY)
        else:  # no checkpoint of its own: nothing committed to find, one read
            items = self.ds.get_many(ex.session, ex.ref_keys + [RESULT_KEY])
            own, inputs, result = None, items[:-1], items[-1]
            if self._records_done(ex):  # after the inputs were read (`_consumed`)
                consumed = self.ds.get(ex.session, done_key(ex.instance))
        if result is not None:
            if self._keeps_failure(result):  # redrive re-invokes it (runtime/redrive.py)
                self._note_redrive(ex, failed=own is not None and "error" in own)
                raise _Drop("session failed (kept for redrive)")
            # a stale execution; an earlier attempt of it may have crashed after writing
            # past the final sweep, so sweep again, blobs included (rare: stale paths only)
            self._end(ex.session, result, all_blobs=True)
            raise _Drop("session already finished")
        if own is not None and own.get("gc"):
            raise _Drop("checkpoint already collected")
        if consumed is not None:
            raise _Drop("fan-in already consumed (this invocation committed; its checkpoint was collected)")
        if own is None and any(it is None or it.get("gc") for it in inputs):
            raise _Drop("fan-in inputs already collected (an execution of this invocation completed)")
        return own, inputs  # type: ignore[return-value]

    def _input(self, ex: Execution, inputs: list[dict[str, Any]]) -> Any:
        p = ex.payload
        try:
            if ex.refs is not None:
                return [ex.values.load(ex.session, it) for it in inputs]
            if p.source == SHUFFLE_SOURCE:
                return consumer_values(p.value, self.blobs, ex.session)
            if p.source == "blob":
                if not ex.payload.parents:
                    self._mark_blobs(ex)  # maybe an entry input blob: its writer made no marker
                return json.loads(self.blobs.get(ex.session, p.value))
        except KeyError:
            raise _Drop("input already collected (an execution of this invocation completed)") from None
        return p.value

    # ------------------------------------------------------------------ commit
    def _run(self, ex: Execution, event: Any) -> tuple[dict[str, Any], Plan | None, Any]:
        """Run the user code and plan; returns (item to commit, plan, value): a success, or
        a failure item with no plan."""
        p = ex.payload
        try:
            if p.depth > self.options.max_transitions:
                raise UserFunctionError("Unum.TransitionLimitExceeded", (
                    f"{ex.instance} is transition {p.depth} of its path, over the limit of "
                    f"{self.options.max_transitions} (runtime.max_transitions): a cycle without exit?"))
            if self.clock() > ex.start + self.retention.session_timeout:
                raise UserFunctionError(SESSION_TIMEOUT_ERROR, (
                    f"the session started {self.clock() - ex.start:.0f} s ago, over "
                    f"runtime.session_timeout_seconds = {self.retention.session_timeout:.0f}"))
            value, route = self._run_user(event, ex.ctx)
            plan = self.planner.plan(value, p, ex.instance, route)
        except UserFunctionError as err:
            error = {"Error": err.error_type, "Cause": err.message, "Trace": err.trace[-20:]}
            if err.state is not None:
                error["State"] = err.state
            return {"error": error, "consumers": 0}, None, None
        except IRError as err:
            return {"error": {"Error": "IRError", "Cause": str(err)}, "consumers": 0}, None, None
        prefix = "result" if self.result_commit else f"ckpt/{ex.instance}"
        # at-least-once (no checkpoint): this item is never stored, so its value stays inline
        # (a blob would be a write nobody reads, issue 25); a loop exit and `result` store
        # their own piece of it
        value_piece = ex.values.piece(ex.session, prefix, value) if self.checkpointing else {"v": value}
        item: dict[str, Any] = {"consumers": plan.consumers, **value_piece}
        if route is not None:
            item["route"] = route
        if ex.ctx.extra:
            item["x"] = ex.ctx.extra
        if ex.ctx.published:
            item["pub"] = {k: ex.values.piece(ex.session, k, v) for k, v in ex.ctx.published.items()}
        if p.depth:  # the transition count is committed: every continuation uses this one
            item["d"] = p.depth
        return item, plan, value

    def _commit(self, ex: Execution, item: dict[str, Any]) -> dict[str, Any]:
        """Create the checkpoint unless it exists; returns the committed item (this one or
        the stored one). A function without a checkpoint commits nothing but a failure
        (which is recorded as the session's result directly)."""
        if not self.checkpointing:
            return item
        self.faults.point("before_checkpoint", ex.session, ex.instance)
        key = checkpoint_key(ex.instance)
        created, stored = self.ds.create_if_absent(ex.session, key, item, self._expiry(ex))
        if created:
            ex.created.append(key)
            self._note_checkpoint(item)
        else:
            keep = set(item_blobs(stored))
            mine = [b for b in ex.values.written if b not in keep]
            if mine:
                self.blobs.delete(ex.session, mine)
            ex.values.written = [b for b in ex.values.written if b in keep]
            if stored.get("gc"):
                raise _Drop("checkpoint already collected")
        self.faults.point("after_checkpoint", ex.session, ex.instance)
        return item if created else stored

    def _note_checkpoint(self, item: dict[str, Any]) -> None:
        rec = getattr(self._obs, "rec", None)
        if rec is None or self.options.history != "full":
            return
        try:
            size = len(encode(item))
        except (TypeError, ValueError):
            return
        rec["checkpoint_bytes"] = size
        if size <= 4096:
            if "v" in item:
                rec["output"] = item["v"]
            elif "error" in item:
                rec["output"] = {"Error": item["error"].get("Error"), "Cause": item["error"].get("Cause")}

    # ------------------------------------------------------------------ egress
    def _publish(self, ex: Execution, own: dict[str, Any]) -> None:
        for key, piece in (own.get("pub") or {}).items():
            created, _ = self.ds.create_if_absent(ex.session, key, piece, self._expiry(ex))
            if created:
                ex.created.append(key)

    def _continue(self, ex: Execution, own: dict[str, Any], plan: Plan) -> int:
        session, inst, p = ex.session, ex.instance, ex.payload
        context = own.get("x", {}) if self.checkpointing else ex.ctx.extra
        # the committed transition count (issue 22): an adopter continues from the winner's,
        # not from its own delivery's (a fan-in invoked by a duplicate carries a higher one)
        depth = int(own.get("d", p.depth)) if self.checkpointing else p.depth  # no "d": 0 (entry)
        parents = ((Parent(inst, plan.consumers, tuple(item_blobs(own, published=False))),)
                   if self.checkpointing else ())
        batch: list[tuple[str, dict[str, Any]]] = []
        delayed: dict[float, list[tuple[str, dict[str, Any]]]] = {}
        fired = 0  # invocations a trigger sent itself (a completed shuffle stage's consumers)
        # history hint (runtime.ports.Events.derived_fields): a child whose input is the
        # output this execution records need not record it again
        rec = getattr(self._obs, "rec", None)
        hint = (rec is not None and "output" in rec and "v" in own and self.events is not None
                and self.events.derived_fields)
        fanout = Fanout() if rec is not None and self.observing() else None  # runtime/metadata.py
        for c in plan.calls:
            trigger = trigger_for(c.trigger)  # fan-in, quorum, shuffle, window (runtime/triggers/)
            if trigger is not None:
                if c.refs is not None and fanout is not None and rec is not None:
                    fanout.add(c.target, "fanin", int(rec.get("checkpoint_bytes") or 0))
                done = trigger.fire(self, ex, own, plan, c, context, depth)
                batch.extend(done.calls)
                fired += done.invoked
                continue
            child = Payload(session, "http", c.value, c.frames, c.iteration, parents, p.version,
                            dict(context), depth + 1)
            data = encode(c.value)
            if fanout is not None:
                fanout.add(c.target, edge_kind(c, len(p.frames)), len(data))
            if len(data) > self.invoker.max_payload_bytes:
                target = frames_name(c.target, c.frames, c.iteration)
                child.source = "blob"
                child.value = ex.values.put(session, blob_key(f"payload/{target}", data), data)
            elif hint and c.value == own["v"]:
                child.delivery = {INPUT_OF: inst}
            if c.delay > 0:
                delayed.setdefault(c.delay, []).append((c.target, child.encode()))
            else:
                batch.append((c.target, child.encode()))
        for d, calls in sorted(delayed.items()):
            self.invoker.invoke_many(calls, delay=d)
        if len(batch) > 1:
            half = len(batch) // 2
            self.invoker.invoke_many(batch[:half])
            self.faults.point("mid_invoke", session, inst)
            self.invoker.invoke_many(batch[half:])
        elif batch:
            self.invoker.invoke_many(batch)
        if fanout is not None and rec is not None:
            fanout.into(rec)
        return len(batch) + sum(len(v) for v in delayed.values()) + fired

    def _records_done(self, ex: Execution) -> bool:
        """Is this execution a fan-in target (plain, `Data.Source = "refs"`, or a quorum's,
        `"checkpoint"`) under gc `eager` whose commit is not the session's `result`? Such a
        target records that it consumed its inputs (`done_key`, see `_consumed`). (A
        re-fired terminal finds `result`.)"""
        return self.options.gc == "eager" and ex.refs is not None and not self.result_commit

    def _consumed(self, ex: Execution, own: dict[str, Any], plan: Plan, c: Call) -> bool:
        """Under gc `eager`, has the target of fan-in call `c` consumed its inputs? Then this
        branch adds nothing and fires nothing, and its checkpoint is collected as if the
        target had consumed it (`ex.declined`). Always False under `safe` and `none`. The
        target of a Shuffle edge is its stage, named `shuffle/<stage>` (the stage's member in
        a producer's `gc/` set, runtime/triggers/shuffle.py `fire_stage`).

        One mechanism for every fan-in target (docs/protocol.md "GC modes"; quorum.py steps
        6-8 read the same item in the slots' read):
        1. the target, once its checkpoint committed and before it deletes its inputs (the
           branch checkpoints, `exit/` items, its `fanin/` set), creates `done/<target>`
           (create-if-absent; `_collect`);
        2. a branch reads it before it hands over its value and adds itself to the set (one
           `get`, here): a branch whose checkpoint the target deleted, and that runs again
           (seed 001 §3.5: its input came inline), reads the item after the delete, hence
           after its create, and never re-creates the set the target deleted nor completes
           it with a value no execution of the target was planned with;
        3. the target's ingress, when its own checkpoint is absent, reads it with `result`
           (after its checkpoint and inputs): it exists only once the target committed and
           invoked its continuations, so the delivery drops, even when inputs were re-created.
        """
        if self.options.gc != "eager":
            return False
        target = c.set_name if c.shuffle and c.set_name else frames_name(c.target, c.frames, c.iteration)
        if self.ds.get(ex.session, done_key(target)) is None:
            return False
        ex.declined.append((target, Parent(ex.instance, plan.consumers, tuple(item_blobs(own, published=False)))))
        return True

    def _record_done(self, ex: Execution, consumer: str) -> None:
        """Create `done/<consumer>` (gc `eager`): `consumer`, whose commit is durable, is
        about to delete its inputs (`_consumed`, 1; a complete shuffle stage too)."""
        key = done_key(consumer)
        created, _ = self.ds.create_if_absent(ex.session, key, {"by": consumer}, self._expiry(ex))
        if created:
            ex.created.append(key)

    def _collect(self, ex: Execution, inputs: list[dict[str, Any]]) -> None:
        p = ex.payload
        if self._records_done(ex):  # before its inputs are deleted (`_consumed`, 1)
            self._record_done(ex, ex.instance)
        if ex.refs is not None:
            parents = [Parent(it.get("ref", r), int(it.get("consumers", 1)),
                              tuple(item_blobs(it, published=False)))
                       for r, it in zip(ex.refs, inputs) if it is not None and not it.get("gc")]
            exits = [k for k in ex.ref_keys if not k.startswith("ckpt/")]
            if exits and self.options.gc != "none":
                self.ds.delete(ex.session, exits)
            own_set = fanin_key(ex.instance)
        else:
            parents, own_set = list(p.parents), None
        input_blob = p.value if p.source == "blob" and self.checkpointing else None
        if p.source == SHUFFLE_SOURCE and self.checkpointing:
            input_blob = consumer_input(p.value)[2]
        self.collector.collect(ex.session, ex.instance, parents, own_set, input_blob,
                               lambda: self._expiry(ex), ex.created)
        for target, me in ex.declined:  # never consumed (a straggler, or a re-run after the target)
            self.collector.collect(ex.session, target, [me], None, None, lambda: self._expiry(ex), ex.created)

    def _undo_late_writes(self, ex: Execution) -> None:
        """If the session ended while this execution ran (another branch reached a terminal,
        or this is a slow duplicate), the final sweep may already have happened, so whatever
        this execution created would never be collected: delete it again
        (runtime.session.undo_late_writes). One read, after the continuations (or when the
        execution is dropped or suspended after writing), off the critical path."""
        if self.options.gc == "none" or not (ex.created or ex.values.written):
            return
        undo_late_writes(self.ds, ex.session, ex.created, self.blobs, ex.values.written)

    def _note_end(self, result: dict[str, Any], status: str, invoked: int) -> None:
        """This execution wrote (or found) the session's result: record the end and this
        execution at once, before the final sweep (a platform may stop the instance as soon
        as a client sees the result). The full record written later is then ignored as a
        duplicate (same key)."""
        rec = getattr(self._obs, "rec", None)
        if rec is None:
            return
        rec["ended"] = result
        early = self._event(rec)
        early.update(kind=status, invoked=invoked, t1=self.clock())
        if self.events is not None and self.events.derived_fields and status == "ran" \
                and result.get("instance") == rec.get("instance"):
            early["ends"] = True  # this execution's value is the result's
        if status == "failed":
            early.update(error=result.get("error"), detail=f"{result.get('error')}: {result.get('cause')}"[:2000])
        total = (time.perf_counter() - self._obs.c0) * 1000
        early["runtime_ms"] = max(0.0, total - rec["user_ms"] - rec["datastore_ms"] - rec["invoke_ms"])
        if self.options.history == "full":
            early["peak_memory_mb"] = peak_memory_mb()
        snapshot = {**rec, "started": rec["started"], "ended": result, "extra": list(rec["extra"])}
        rec["started"], rec["extra"] = None, []
        self._emit_parts(snapshot, early, self.options.history == "full")
        rec["ended"] = None
        if self.on_session_end is not None:
            try:
                self.on_session_end()
            except Exception:  # noqa: BLE001  (observations never fail an execution)
                pass

    def _end(self, session: str, result: dict[str, Any], all_blobs: bool = False) -> None:
        if self.options.gc != "none":
            end(self.ds, self.blobs, session, result, all_blobs)

    def _create_result(self, session: str, new: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """Create-if-absent the session's result `new` (runtime.session.create_result). In the
        entry execution, with an events adapter that records the session's start in the same
        write (Events `result_fields`), the start goes with it, and is not recorded again."""
        rec = getattr(self._obs, "rec", None)
        record = None
        if self.events is not None and rec is not None and rec.get("started") is not None:
            try:
                record = self.events.result_fields(session, self.ir.name, *rec["started"])
            except Exception as exc:  # noqa: BLE001  (history never fails an execution)
                self.log(f"history: could not record the session start: {type(exc).__name__}: {exc}")
        created, result = create_result(self.ds, session, new if record is None else {**new, RECORD_FIELD: record},
                                        self.retention.result_expiry(self.clock()))
        if created and record is not None and rec is not None:
            rec["started"] = None  # recorded with the result
        return created, result

    def _commit_result(self, ex: Execution, item: dict[str, Any], inputs: list[dict[str, Any]]) -> Outcome:
        """Commit a function with no edge (`result_commit`): the create-if-absent of the
        session's `result` is its commit point, so the first outcome of any of its executions
        (a success or a failure after retries) is the session's, and nothing else is written
        on the critical path. A conflict adopts the stored result (this invocation's, or
        another terminal's that ended the session first)."""
        session, inst = ex.session, ex.instance
        if "error" in item:
            err = item["error"]
            new = failure_item(inst, err.get("Error", "Unum.Error"), err.get("Cause", ""), err.get("Trace"),
                               err.get("State"))
        else:
            new = success_item(inst, {k: item[k] for k in ("v", "blob") if k in item})
        self.faults.point("before_checkpoint", session, inst)
        noted = self.options.redrive and "error" in item
        if noted:  # before the result: a redrive may follow the moment it exists
            self._note_redrive(ex, failed=False)
        created, result = self._create_result(session, new)
        status = "failed" if created and "error" in item else "ran" if created else "adopted"
        if created:
            self._note_checkpoint(item)
        else:
            keep = set(item_blobs(result))
            mine = [b for b in ex.values.written if b not in keep]
            if mine:
                self.blobs.delete(session, mine)
            ex.values.written = [b for b in ex.values.written if b in keep]
        self.faults.point("after_checkpoint", session, inst)
        self._note_end(result, status, 0)
        if status == "failed":
            where = failed_where(inst, new.get("state"))
            self.log(f"{where}: {new.get('error')}: {cause_line(new.get('cause'))}")
        self.faults.point("before_gc", session, inst)
        if self._keeps_failure(result):  # its inputs stay: a redrive runs it again
            if not noted:
                self._note_redrive(ex, failed=False)
        else:
            self._collect(ex, inputs)
            self._end(session, result)
        if status == "failed":
            return Outcome("failed", session, inst, f"{new.get('error')}: {new.get('cause')}")
        return Outcome(status, session, inst)

    def _failed(self, ex: Execution, own: dict[str, Any]) -> Outcome:
        """The committed outcome of this invocation is a failure: record it as the session's
        result (the first outcome wins) and end the session."""
        err = own["error"]
        where = failed_where(ex.instance, err.get("State"))
        self.log(f"{where}: {err.get('Error')}: {cause_line(err.get('Cause'))}")
        if self.options.redrive:  # before the result: a redrive may follow the moment it exists
            self._note_redrive(ex, failed=self.checkpointing)
        result = self._create_result(ex.session, failure_item(ex.instance, err.get("Error", "Unum.Error"),
                                                              err.get("Cause", ""), err.get("Trace"),
                                                              err.get("State")))[1]
        self._note_end(result, "failed", 0)
        if not self._keeps_failure(result):
            self._end(ex.session, result)
        return Outcome("failed", ex.session, ex.instance, f"{err.get('Error')}: {err.get('Cause')}")

    def _keeps_failure(self, result: dict[str, Any]) -> bool:
        """Does the FAILED session of `result` keep its state for a redrive (runtime.redrive)?"""
        return self.options.redrive and session_status(result) == "FAILED"

    def _note_redrive(self, ex: Execution, failed: bool) -> None:
        """Record this invocation in the session's redrive frontier (runtime/redrive.py `note`);
        `failed`: its own checkpoint holds its committed failure."""
        assert ex.ctx.wire_of is not None
        redrive.note(self.ds, ex.session, ex.instance, self.ir.name, ex.ctx.wire_of(), failed,
                     self.clock(), self._expiry(ex))


class _Timed:
    """A port (datastore, blob store, invoker) whose method calls add their wall time (ms) to
    field `slot` of the current execution's history record (`obs.rec`, when there is one)."""

    def __init__(self, inner: Any, obs: threading.local, slot: str):
        self._inner = inner
        self._obs = obs
        self._slot = slot

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr) or name.startswith("_"):
            return attr
        inner, obs, slot = self._inner, self._obs, self._slot

        def timed(*args: Any, **kwargs: Any) -> Any:
            rec = getattr(obs, "rec", None)
            if rec is None:
                return getattr(inner, name)(*args, **kwargs)
            t = time.perf_counter()
            try:
                return getattr(inner, name)(*args, **kwargs)
            finally:
                rec[slot] += (time.perf_counter() - t) * 1000

        # kept: later lookups of `name` find it without __getattr__; it looks the method up on
        # the inner port at each call, so a method replaced there later is still the one called
        self.__dict__[name] = timed
        return timed
