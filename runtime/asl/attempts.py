"""Task attempts that outlive one execution: timeouts, heartbeats and callback tokens.

Source: ASL spec "Task State" (TimeoutSeconds, TimeoutSecondsPath, HeartbeatSeconds,
HeartbeatSecondsPath; `States.Timeout`, `States.HeartbeatTimeout`), AWS developer guide
"Wait for a Callback with Task Token" (`.waitForTaskToken`, `$$.Task.Token`,
SendTaskSuccess/SendTaskFailure/SendTaskHeartbeat) and docs/protocol.md (the commit rule).

A Task state with a timeout or a callback keeps one datastore item per *attempt outcome*, so
that an attempt that ended outside this process (the platform killed the instance at the
attempt's deadline; a callback arrived; a waiting callback timed out) reaches the Task's
Retry/Catch with the right retry count, and every execution of the invocation (duplicates,
redeliveries, the resumed one) derives the same sequence of outcomes:

    asl/try/<instance>/<n>  the outcome of attempt n (create-if-absent: the first writer wins)
                            {"Error", "Cause"} or, for a callback's success, {"Output": value}
    asl/cb/<instance>/<n>   the callback token record of attempt n (create-if-absent)
                            {"k": nonce, "fn": function, "p": wire payload, "t0": start (unix s),
                             "to": TimeoutSeconds or null, "hb": HeartbeatSeconds or null,
                             "x": the items' expiry}
    asl/cbs/<instance>/<n>  the Lambda call of attempt n returned (the wait began)
    asl/hb/<instance>/<n>   the last heartbeat {"at": unix s} (overwritten)

Successful attempts of a plain Task are not recorded: the checkpoint commits them. Errors
are recorded (so a redelivery does not run the failed attempts again), and so is a timeout:
by the platform when it kills the instance (local), or here when the in-function timer
fires (aws, gcp). Items live until the session's final sweep (they are small).

An execution may write these items after the session ended and was swept (a slow execution
of a waiting Task, a slow duplicate): every item an execution creates here is added to its
context's `created` list, the engine's own record of its writes, so the engine's late-write
rule deletes it again when the session turns out to have ended, whether the execution then
commits, is dropped or suspends (runtime/engine.py, runtime.session.undo_late_writes). The
platform's timer record (runtime/local/entry.py Watchdog) is followed by a redelivery, which
finds `result` and sweeps again.

Before an attempt's user code runs (the Lambda call), `result` is read once more, after the
journal reads that found the attempt not done: a session that has ended drops the execution
(StaleExecution). Records are removed only by the end of the session, which begins after
`result` is created, so when this read finds no `result`, the records those reads found
absent were not recorded when they were read, hence not when the delivery began: no user
code runs for an attempt whose outcome was recorded when its delivery began, nor for a
session that is over, whatever order the reads are served in (the engine's ingress argument,
docs/protocol.md "Why the invariants hold", 1).
"""

from __future__ import annotations

import secrets
import threading
from typing import Any, Callable

from ..errors import StaleExecution, Suspended
from ..payload import RESULT_KEY
from .errors import AslError
from .tokens import Token

__all__ = ["TaskAttempts", "beat_key", "call_with_timeout", "expired", "heartbeat_outcome", "replay", "token_key",
           "try_key"]

TRY, TOKEN, SENT, BEAT = "asl/try/", "asl/cb/", "asl/cbs/", "asl/hb/"
TIMER_SLACK = 0.05  # seconds after a deadline that a waiting callback's timer fires


def try_key(instance: str, n: int) -> str:
    """Item holding the outcome of attempt `n` of the Task run by `instance`."""
    return f"{TRY}{instance}/{n}"


def token_key(instance: str, n: int) -> str:
    """Item holding the callback token record of attempt `n`."""
    return f"{TOKEN}{instance}/{n}"


def sent_key(instance: str, n: int) -> str:
    """Item saying that attempt `n`'s Lambda call returned (its callback wait began)."""
    return f"{SENT}{instance}/{n}"


def beat_key(instance: str, n: int) -> str:
    """Item holding the last heartbeat of attempt `n`."""
    return f"{BEAT}{instance}/{n}"


def timeout_outcome(seconds: float) -> dict[str, Any]:
    """The outcome of an attempt that ran past its TimeoutSeconds (States.Timeout)."""
    return {"Error": "States.Timeout", "Cause": f"The task timed out after {seconds:g} seconds "
                                                "(TimeoutSeconds)."}


def heartbeat_outcome(seconds: float) -> dict[str, Any]:
    """The outcome of a callback attempt that got no heartbeat for HeartbeatSeconds."""
    return {"Error": "States.HeartbeatTimeout", "Cause": f"No heartbeat was received for "
                                                         f"{seconds:g} seconds (HeartbeatSeconds)."}


def replay(outcome: dict[str, Any]) -> Any:
    """The result of a recorded attempt: its callback output, or raises its AslError."""
    if "Error" in outcome:
        raise AslError(outcome.get("Error"), outcome.get("Cause"))
    return outcome.get("Output")


def expired(rec: dict[str, Any], beat: dict[str, Any] | None, now: float) -> dict[str, Any] | None:
    """The timeout outcome of a waiting callback whose deadline has passed at `now`, else None.
    `rec` is its token record, `beat` its last heartbeat item (or None)."""
    t0 = float(rec["t0"])
    if rec.get("to") is not None and now >= t0 + float(rec["to"]):
        return timeout_outcome(float(rec["to"]))
    if rec.get("hb") is not None:
        last = max(t0, float((beat or {}).get("at", t0)))
        if now >= last + float(rec["hb"]):
            return heartbeat_outcome(float(rec["hb"]))
    return None


def next_deadline(rec: dict[str, Any], beat: dict[str, Any] | None) -> float | None:
    """When a waiting callback times out if nothing happens (unix s), or None (never)."""
    t0 = float(rec["t0"])
    cands = []
    if rec.get("to") is not None:
        cands.append(t0 + float(rec["to"]))
    if rec.get("hb") is not None:
        cands.append(max(t0, float((beat or {}).get("at", t0))) + float(rec["hb"]))
    return min(cands) if cands else None


def call_with_timeout(call: Callable[[], Any], seconds: float) -> Any:
    """Run `call()` on a thread and raise AslError('States.Timeout') if it runs longer than
    `seconds` (the in-function timer of the aws and gcp targets; the late call keeps running
    until the function's own timeout freezes or ends it). Exceptions of `call` propagate."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["v"] = call()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["e"] = exc

    t = threading.Thread(target=run, daemon=True, name="asl-task")
    t.start()
    t.join(seconds)
    if t.is_alive():
        raise AslError(**_err(timeout_outcome(seconds)))
    if "e" in box:
        raise box["e"]
    return box["v"]


class TaskAttempts:
    """The journal and timers of one execution's Task (see module docstring).

    `engine`: the runtime.engine.Engine (its `ds`, `invoker`, `clock`, `watchdog`,
    retention); `ctx`: the UserContext of this execution; `expires_at`: the items' expiry
    (unix s); `app`: the app (state machine) name put in tokens."""

    def __init__(self, engine: Any, ctx: Any, app: str, expires_at: float):
        self.engine = engine
        self.ds = engine.ds
        self.ctx = ctx
        self.session = ctx.session
        self.instance = ctx.instance
        self.app = app
        self.expires_at = expires_at

    # ---- outcomes
    def outcome(self, n: int) -> dict[str, Any] | None:
        """The recorded outcome of attempt `n`, or None."""
        return self.ds.get(self.session, try_key(self.instance, n))

    def settle(self, n: int, outcome: dict[str, Any]) -> dict[str, Any]:
        """Record `outcome` for attempt `n` unless one is recorded; returns the stored one."""
        return self._create(try_key(self.instance, n), outcome)

    def _create(self, key: str, item: dict[str, Any]) -> dict[str, Any]:
        """Create-if-absent item `key`; returns the stored item. A created item is this
        execution's write for the engine's late-write rule (module docstring)."""
        created, stored = self.ds.create_if_absent(self.session, key, item, self.expires_at)
        if created:
            self.ctx.created.append(key)
        return stored

    # ---- a call under the attempt's timeout
    def call(self, n: int, seconds: float | None, call: Callable[[], Any]) -> Any:
        """Run the Task's call for attempt `n` under TimeoutSeconds: the platform's watchdog
        when it has one (it kills the instance at the deadline and records States.Timeout for
        attempt n itself), else the in-function timer. Raises AslError."""
        if not seconds:
            return call()
        self.live()
        dog = getattr(self.engine, "watchdog", None)
        if dog is None:
            try:
                return call_with_timeout(call, seconds)
            except AslError as err:
                if err.error == "States.Timeout":
                    return replay(self.settle(n, timeout_outcome(seconds)))
                raise
        dog.arm(seconds, self.session, try_key(self.instance, n), timeout_outcome(seconds),
                self.expires_at)
        try:
            return call()
        finally:
            dog.disarm()

    # ---- callbacks
    def token(self, n: int, timeout: float | None, heartbeat: float | None) -> str:
        """The task token of callback attempt `n` (created once; duplicates get the same)."""
        payload = self.ctx.wire_of()
        aslexec = self.ctx.extra.get("AslExec")
        if isinstance(aslexec, dict):
            payload.setdefault("AslExec", dict(aslexec))
        rec = {"k": secrets.token_hex(16), "fn": self.ctx.function, "p": payload,
               "t0": self.engine.clock(), "to": timeout, "hb": heartbeat, "x": self.expires_at}
        stored = self._create(token_key(self.instance, n), rec)
        return Token(self.app, self.session, self.instance, n, stored["k"]).encode()

    def called(self, n: int) -> bool:
        """Whether attempt `n`'s Lambda call already returned in an earlier execution. When it
        did not (the call is next), checks that the session is live (`live`)."""
        if self.ds.get(self.session, sent_key(self.instance, n)) is not None:
            return True
        self.live()
        return False

    def live(self) -> None:
        """Before an attempt's user code runs, after the journal reads that found it not done:
        raises StaleExecution when the session has ended (module docstring)."""
        if self.ds.get(self.session, RESULT_KEY) is not None:
            raise StaleExecution("the session ended while this Task attempt was read (not run)")

    def wait(self, n: int) -> Any:
        """After attempt `n`'s Lambda call: its callback outcome when one is recorded (or
        its deadline passed: the timeout is recorded), else set a timer for the deadline
        (where the invoker has timers) and raise Suspended."""
        now = self.engine.clock()
        self._create(sent_key(self.instance, n), {"at": now})
        out, rec, beat = self.ds.get_many(self.session, [try_key(self.instance, n),
                                                         token_key(self.instance, n),
                                                         beat_key(self.instance, n)])
        if out is not None:
            return replay(out)
        if rec is None:  # the session ended and was swept under us (the engine undoes our writes)
            raise Suspended("the callback's token record is gone (the session ended)")
        late = expired(rec, beat, now)
        if late is not None:
            return replay(self.settle(n, late))
        deadline = next_deadline(rec, beat)
        inv = self.engine.invoker
        if deadline is not None and getattr(inv, "supports_delay", False):
            inv.invoke_many([(rec["fn"], rec["p"])], delay=max(0.0, deadline - now) + TIMER_SLACK)
        raise Suspended(f"waiting for a callback on attempt {n} of {self.instance}")


def _err(outcome: dict[str, Any]) -> dict[str, Any]:
    return {"error": outcome.get("Error"), "cause": outcome.get("Cause")}
