"""One schedule of one workflow: builds the world, the stores, the stepped ports and the
checker, and runs the real Engine for every delivered execution."""

from __future__ import annotations

import copy
import json
from typing import Any

from runtime.payload import RESULT_KEY
from runtime.session import entry_payload, give_up

from . import adapters, platforms
from .invariants import Checker, exec_instance
from .memstore import MemBlobStore, MemDatastore
from .model import WorkflowSpec
from .scheduler import ACTOR, SESSION, Op, World
from .stepped import _call
from .stepped import SteppedBlobStore, SteppedDatastore, SteppedInvoker


class _Watchdog:
    """The platform's per-attempt timer of one execution (Engine.watchdog): `arm` makes the
    scheduler's `timeout` action possible while the attempt runs, `disarm` ends that."""

    def __init__(self, ex):
        self.ex = ex

    def arm(self, seconds, session, key, outcome, expires_at) -> None:
        self.ex.armed = (session, key, copy.deepcopy(outcome), expires_at)

    def disarm(self) -> None:
        self.ex.armed = None


class Harness:
    """Everything of one schedule. `datastore_cls` lets a test substitute a broken
    datastore (tools.explorer.broken) to show that the checks can fail."""

    def __init__(self, spec: WorkflowSpec, datastore_cls=SteppedDatastore):
        self.spec = spec
        self.world = World()
        self.mem = MemDatastore(spec.max_item_bytes)
        # a bucket lifecycle rule expires every blob at one age (runtime/session.py)
        self.options = adapters.make_options(spec.gc, spec.checkpoint, **spec.options)
        blob_age = self.options.retention.blob_expiry_days * 86400
        self.mem_blobs = MemBlobStore(self.world.now, lambda key: blob_age)
        self.checker = Checker(spec, self.world, self.mem, self.mem_blobs)
        self.ds = datastore_cls(self.mem, self.checker)
        self.ds.world = self.world
        self.blobs = SteppedBlobStore(self.mem_blobs, self.world, spec.deferred_blob_deletes)
        self.invoker = SteppedInvoker(self.world, spec.max_payload_bytes)
        w = self.world
        w.txn_mode = spec.txn
        w.clock_mode = spec.clock
        w.redelivery = platforms.redelivery_delays(spec.platform)
        w.mem = self.mem
        w.apply_blob_deletes = lambda dels: [self.mem_blobs.delete(s, refs) for s, refs in dels]
        w.on_deliver = self.checker.delivered
        w.on_rollback = self.checker.rolled_back
        w.on_timeout = self._timeout
        w.tokens = self.waiting
        w.run_engine = self._run_engine
        w.on_exec_end = self._ended
        w.on_step = self.checker.after_step
        w.on_expire = self._expire
        entry = next(fn for fn, ir in spec.functions.items() if ir.start)
        w.post(entry, entry_payload(SESSION, copy.deepcopy(spec.input)), None)

    # ------------------------------------------------------------------ callback actors
    def waiting(self) -> list[str]:
        """Token records (asl/cb/<instance>/<n>) of Task attempts that wait for a callback:
        committed, with no recorded outcome, while the session runs."""
        if self.result() is not None:
            return []
        names = self.mem.names(SESSION)
        return [n for n in names if n.startswith("asl/cb/")
                and "asl/try/" + n[len("asl/cb/"):] not in names]

    def _run_actor(self, ex) -> Any:
        """A callback actor: SendTask<kind> through runtime.asl.callback.CallbackClient on the
        stepped ports (its reads and writes are steps, like an execution's)."""
        from runtime.asl.callback import CallbackClient, CallbackError, Token
        kind, key = ex.msg.payload["kind"], ex.msg.payload["key"]
        ex.instance = f"send-task-{kind}"
        inst, n = key[len("asl/cb/"):].rsplit("/", 1)
        rec = self.mem.read_one(SESSION, key) or {}
        token = Token(self.spec.name, SESSION, inst, int(n), rec.get("k", "0" * 32)).encode()
        client = CallbackClient(self.ds, self.invoker, clock=ex.clock, app=self.spec.name)
        try:
            if kind == "success":
                client.send_task_success(token, {"ok": ex.id})
            elif kind == "failure":
                client.send_task_failure(token, "Rejected", f"by {ex.id}")
            else:
                client.send_task_heartbeat(token)
        except CallbackError as err:
            ex.detail = err.code
            return type("Refused", (), {"status": "refused"})()
        return type("Sent", (), {"status": "sent"})()

    # ------------------------------------------------------------------ engine side
    def _run_engine(self, ex) -> Any:
        if ex.fn == ACTOR:
            return self._run_actor(ex)
        ir = self.spec.functions[ex.fn]
        payload = copy.deepcopy(ex.msg.payload)
        try:
            ex.instance = exec_instance(ex.fn, payload)
        except Exception:  # malformed payloads are the engine's business
            ex.instance = ex.fn
        engine = adapters.make_engine(ir, self._user(ex, self.spec.handlers[ex.fn], ir.wrapper is not None), self.ds,
                                      self._invoker_for(ex, ir), self.blobs, self.options, ex.clock,
                                      wrapper=self._recording(ex, adapters.make_wrapper(ir)),
                                      watchdog=_Watchdog(ex))
        return adapters.handle(engine, payload)

    def _invoker_for(self, ex, ir) -> Any:
        """The invoker of `ex`'s engine: the platform's, or, when the function runs fan-in
        targets in-process (issue 25, IR `Fused.InProcess`, runtime.fusion.InProcessInvoker),
        one that runs them in this execution with engines built as above (recorded too)."""
        names = {t["Function"] for t in (ir.fused or {}).get("InProcess", [])}
        if not names:
            return self.invoker
        from runtime.fusion import InProcessInvoker

        def engine_for(target):
            if target not in names:
                return None
            t_ir = self.spec.functions[target]
            return adapters.make_engine(t_ir, self._user(ex, self.spec.handlers[target], t_ir.wrapper is not None),
                                        self.ds, proxy,
                                        self.blobs, self.options, ex.clock,
                                        wrapper=self._recording(ex, adapters.make_wrapper(t_ir)),
                                        watchdog=_Watchdog(ex))
        proxy = InProcessInvoker(self.invoker, engine_for)
        return proxy

    def _user(self, ex, handler, wrapped: bool = False):
        checker = self.checker

        def user(event, context):
            if not wrapped:  # (a): the engine's input itself, at every call (IR Retry included)
                checker.user_input(ex, context.instance, event)
            if ex.armed is not None:  # the attempt's timer runs: the platform may fire it now
                _call(Op("user", "user code runs (its attempt's timer is armed)", fn=lambda: None))
            if isinstance(event, dict) and isinstance(event.get("RetryCount"), int):
                checker.attempt_ran(ex, context.instance, event["RetryCount"])
            checker.user_starts(ex, context.instance, copy.deepcopy(event))
            try:
                out = handler(event, context)
            except Exception as exc:
                checker.user_error(ex, type(exc).__name__)
                raise
            checker.user_output(ex, context.instance, copy.deepcopy(out))
            return out
        return user

    def _recording(self, ex, inner):
        """A wrapper around the function's own wrapper (or the plain call) that records the
        input given to user code and the value computed by this execution."""
        checker = self.checker

        def wrapper(call_user, value, ctx):
            checker.ran(ex, ctx.instance, copy.deepcopy(value))
            if inner is None:
                out, route = call_user(value, ctx), None
            else:
                out, route = inner(call_user, value, ctx)
            checker.computed_value(ex, ctx.instance, out)
            return out, route
        if inner is not None and hasattr(inner, "attach"):
            wrapper.attach = inner.attach  # type: ignore[attr-defined]
        return wrapper

    # ------------------------------------------------------------------ platform side
    def _ended(self, ex, gave_up: bool) -> None:
        if ex.status in ("crashed", "error") and ex.fn != ACTOR and not gave_up:
            self.checker.failed(ex)
        if ex.status == "error":
            self.checker.errors.append(f"{ex.id} ({ex.fn}): {type(ex.error).__name__}: {str(ex.error)[:160]}")
        if gave_up:
            # the platform's on-failure path (unumctl/local/platform.py _give_up), which
            # writes through the session contract as every target does
            give_up(self.mem, self.mem_blobs, SESSION, ex.fn, "Unum.RetriesExhausted",
                    f"{ex.fn}: {ex.error}", self.options.retention, self.world.now())
            self.checker.gave_up(ex)

    def _timeout(self, ex) -> None:
        """The platform's timer fired (runtime/local/entry.py Watchdog): it records the
        attempt's outcome, create-if-absent, before it kills and redelivers."""
        session, key, outcome, expires_at = ex.armed
        created, _ = self.mem.create_if_absent(session, key, outcome, expires_at)
        if created:
            self.checker.created(key, copy.deepcopy(outcome), ex)

    def _expire(self, now: float) -> None:
        self.mem.purge_expired(now)
        self.mem_blobs.purge_expired(now)

    def describe(self, action: tuple) -> str:
        """Human-readable form of an action taken in this world."""
        kind = action[0]
        if kind in ("run", "crash"):
            ex = self.world.execs[action[1]]
            return f"{kind:7} {ex.instance or ex.fn} [{ex.id}]"
        if kind in ("deliver", "dup"):
            m = self.world.msgs[action[1]]
            try:
                inst = exec_instance(m.fn, m.payload)
            except Exception:
                inst = m.fn
            return f"{kind:7} {inst} <{m.id}>"
        if kind == "send":
            return f"send    task {action[1]} for {action[2]} (callback actor)"
        if kind == "timeout":
            return f"timeout {self.world.execs[action[1]].instance} [{action[1]}] (the platform kills it)"
        if kind == "tick":
            return "tick    (the clock advances to the next timer, or by 2 h)"
        return "expire  (clock +25h, TTL removes expired items/blobs)"

    def result(self) -> dict[str, Any] | None:
        """The session result item (None when absent)."""
        return self.mem.read_one(SESSION, RESULT_KEY)


def summary_json(h: Harness, values: bool = False) -> str:
    """One line: result status/instance (and value) and leftovers."""
    res = h.result()
    keys = ("status", "instance", "error") + (("v", "blob") if values else ())
    return json.dumps({"result": None if res is None else {k: res.get(k) for k in keys},
                       "left": h.mem.names(SESSION), "blobs": h.mem_blobs.keys(SESSION)})
