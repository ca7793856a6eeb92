"""Step Functions callbacks: task tokens and SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat.

Source: AWS developer guide "Wait for a Callback with Task Token" and the Step Functions API
reference (SendTaskSuccess, SendTaskFailure, SendTaskHeartbeat: errors InvalidToken,
TaskTimedOut, TaskDoesNotExist, InvalidOutput); docs/stepfunctions.md "Timeouts, heartbeats
and callbacks"; the items are described in runtime/asl/attempts.py.

A token names the app, the session, the waiting invocation and the attempt, plus a random
nonce committed in the attempt's token record: `Token.decode` checks every field against a
strict pattern before any of it reaches a datastore key, and the nonce must match the record.

`CallbackClient(datastore, invoker)` works with any target's ports: inside a function use
`client(context)` (the engine's own ports); a service or the CLI builds it from the target's
datastore and invoker (unumctl's `callback_ports`). Sending an outcome:

1. decode the token (InvalidToken), read the token record of the attempt (with its outcome
   and heartbeat items) and then, in a second read, the session's result (TaskTimedOut when
   the session ended; InvalidToken when there is no record of that attempt, e.g. a wrong
   attempt number, or its nonce differs). The order matters because a multi-item read is
   not a snapshot: the final sweep deletes the record only after `result` exists, so a
   record swept during the first read is followed by a `result` the second read sees;
2. claim the attempt's outcome with create-if-absent on `asl/try/<instance>/<n>`: the first of
   {success, failure, timeout} wins; a deadline already passed claims the timeout instead;
3. re-invoke the waiting invocation with its stored payload: it replays its attempts from the
   records and continues through the Task's ResultSelector/ResultPath/OutputPath/Retry/Catch.

A lost claim raises TaskTimedOut, but step 3 still runs: re-invoking is always harmless (a
duplicate is deduplicated by the checkpoint), so a sender that crashed between 2 and 3 and
retries heals the session.

Every write (a claim this call created, a heartbeat) is followed by the engine's late-write
check (runtime.session.undo_late_writes; docs/protocol.md "One execution", 5): one read of
`result`, since the session may have ended and been swept between the read in step 1 and the
write, and then nothing else would remove the item before its expiry. A session found ended
deletes the item again and the call raises TaskTimedOut, Step Functions' answer for a task whose execution has closed
(API reference, SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat, Errors: "The task
token has either expired or the task associated with the token has already been closed");
the waiting invocation is then not re-invoked.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

from ..payload import RESULT_KEY
from ..ports import Datastore, Invoker
from ..session import Retention, undo_late_writes
from .attempts import beat_key, expired, token_key, try_key
from .tokens import MAX_TOKEN, CallbackError, Token, _invalid  # noqa: F401  (re-exported for callers)

__all__ = ["CallbackClient", "CallbackError", "Token", "client"]

MAX_OUTPUT = 256 * 1024       # bytes of output JSON (SendTaskSuccess limit)
MAX_ERROR, MAX_CAUSE = 256, 32768  # characters (SendTaskFailure limits)


class CallbackClient:
    """SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat on a target's ports.

    `datastore`, `invoker`: the app's ports (the same the functions use); `clock()`: unix
    seconds; `app`: when given, tokens of another app are refused (InvalidToken); `retention`:
    the app's expiry policy (runtime/session.py), which dates a heartbeat or outcome item
    when the token record has no expiry hint (as an item of a session starting now)."""

    def __init__(self, datastore: Datastore, invoker: Invoker, clock: Callable[[], float] = time.time,
                 app: str | None = None, retention: Retention = Retention()):
        self.ds = datastore
        self.invoker = invoker
        self.clock = clock
        self.app = app
        self.retention = retention

    # ---- API
    def send_task_success(self, token: str, output: Any) -> None:
        """Complete the waiting Task with `output` (any JSON value) as its result.
        Raises CallbackError (InvalidToken, InvalidOutput, TaskDoesNotExist, TaskTimedOut)."""
        try:
            size = len(json.dumps(output, separators=(",", ":"), allow_nan=False).encode())
        except (TypeError, ValueError) as exc:
            raise CallbackError("InvalidOutput", f"the output is not JSON: {exc}") from None
        if size > MAX_OUTPUT:
            raise CallbackError("InvalidOutput", f"the output is {size} bytes, over the "
                                                 f"{MAX_OUTPUT}-byte limit")
        self._complete(token, {"Output": output})

    def send_task_failure(self, token: str, error: str | None = None, cause: str | None = None) -> None:
        """Fail the waiting Task with `error` / `cause` (the Task's Retry and Catch apply).
        Raises CallbackError as send_task_success."""
        if error is not None and (not isinstance(error, str) or len(error) > MAX_ERROR):
            raise CallbackError("InvalidOutput", f"error must be a string of at most {MAX_ERROR} characters")
        if cause is not None and (not isinstance(cause, str) or len(cause) > MAX_CAUSE):
            raise CallbackError("InvalidOutput", f"cause must be a string of at most {MAX_CAUSE} characters")
        self._complete(token, {"Error": error, "Cause": cause})

    def send_task_heartbeat(self, token: str) -> None:
        """Report that the work for the token is still going on (restarts HeartbeatSeconds).
        Raises CallbackError (InvalidToken, TaskDoesNotExist, TaskTimedOut)."""
        t, rec, out, beat = self._lookup(token)
        now = self.clock()
        if out is None:
            late = expired(rec, beat, now)
            if late is None:
                key = beat_key(t.instance, t.n)
                self.ds.put(t.session, key, {"at": now}, self._expires(rec, now))
                self._unless_ended(t, key)
                return
            self._claim_and_resume(t, rec, late)
        raise _timed_out()

    # ---- steps
    def _lookup(self, token: str):
        t = Token.decode(token)
        if self.app is not None and t.app != self.app:
            raise _invalid()
        # two ordered reads, as the engine's ingress: the attempt's items first, `result` only
        # after that read returned. A multi-item read is not a snapshot (DynamoDB BatchGetItem),
        # and the final sweep removes the token record only after `result` exists: so a record
        # found missing here is either never issued (no `result` after it either) or swept,
        # and then `result` is found. In one read, `result` could be served before the sweep
        # and the record after it, refusing a genuine token as InvalidToken.
        rec, out, beat = self.ds.get_many(t.session, [token_key(t.instance, t.n), try_key(t.instance, t.n),
                                                      beat_key(t.instance, t.n)])
        result = self.ds.get(t.session, RESULT_KEY)
        if result is not None:
            raise _timed_out()  # the session has ended
        if rec is None:
            # no record of this attempt while the session has no result: the token names an
            # attempt, invocation or session this app never issued (a wrong attempt number
            # included), so it cannot be told from a forged one
            raise _invalid()
        if rec.get("k") != t.nonce:
            raise _invalid()
        return t, rec, out, beat

    def _complete(self, token: str, outcome: dict[str, Any]) -> None:
        t, rec, out, beat = self._lookup(token)
        if out is not None:
            self._resume(t, rec)  # heals a sender that crashed after its claim
            raise _timed_out()
        now = self.clock()
        late = expired(rec, beat, now)
        if late is not None:
            self._claim_and_resume(t, rec, late)
            raise _timed_out()
        if not self._claim_and_resume(t, rec, outcome):
            raise _timed_out()

    def _claim_and_resume(self, t: Token, rec: dict[str, Any], outcome: dict[str, Any]) -> bool:
        key = try_key(t.instance, t.n)
        created, _ = self.ds.create_if_absent(t.session, key, outcome, self._expires(rec, self.clock()))
        if created:
            self._unless_ended(t, key)
        self._resume(t, rec)
        return created

    def _unless_ended(self, t: Token, written: str) -> None:
        """After writing item `written`: when the session has ended meanwhile (its final
        sweep may already have run), delete the item again and raise TaskTimedOut
        (runtime.session.undo_late_writes, the engine's rule). If `result` is absent here,
        the write completed before the final sweep begins (the sweep follows the create of
        `result`), so the sweep removes it."""
        if undo_late_writes(self.ds, t.session, [written]) is not None:
            raise _timed_out()

    def _resume(self, t: Token, rec: dict[str, Any]) -> None:
        self.invoker.invoke_many([(rec["fn"], rec["p"])])

    def _expires(self, rec: dict[str, Any], now: float) -> float:
        return float(rec.get("x") or self.retention.item_expiry(now))


def _timed_out() -> CallbackError:
    return CallbackError("TaskTimedOut", "Task Timed Out: 'Provided task does not exist anymore'")


def client(context: Any) -> CallbackClient:
    """The CallbackClient of a running function, from its `context` argument (the engine's
    datastore and invoker); raises LookupError outside a compiled Step Functions function."""
    c = getattr(context, "task_callbacks", None)
    if c is None:
        raise LookupError("no callback client on this context: call send_task_* from a function "
                          "of a Step Functions app, or build a CallbackClient from the app's ports")
    return c
