"""Entry point of a function bundle on the local target.

The local worker process (unumctl/local/worker.py) imports the bundle's `unum_entry`, which
re-exports `LocalFunction`, and calls `handle` once per delivered invocation.
"""

from __future__ import annotations

import os
import signal
import sys
import tempfile
import time
from typing import Any, Callable, Sequence

from ..bundle import load_bundle
from ..engine import Outcome
from ..errors import UnumError
from ..faults import FaultSpec, SeededFaults
from ..payload import RESULT_KEY, check_session_id
from ..ports import Invoker
from .datastore import FileBlobStore, SqliteDatastore
from .history import SqliteHistory
from .queue import DurableQueue

__all__ = ["LocalFunction", "OutputCapture", "QueueInvoker"]


class OutOfMemory(BaseException):
    """The function exceeded its memory limit: the runtime exits, as Lambda's does
    ("Runtime exited ... out of memory"); the platform counts a failed delivery attempt.
    A BaseException so that the engine's handling of user exceptions does not catch it."""


class QueueInvoker(Invoker):
    """Asynchronous invoke on the local target: persists the calls in the app's durable queue
    (runtime.local.queue, committed before `invoke_many` returns, as Lambda's Invoke returns
    once the event is queued) and then notifies the platform process, which delivers them.

    `send`: the connection to the platform; `queue`: DurableQueue or None (notify only, the
    platform persists); `owner`: the platform's owner token; `parent()`: the message id of the
    delivery being executed."""

    max_payload_bytes = 256 * 1024  # as Lambda's async invoke limit, to exercise references
    supports_delay = True  # `delay` is a platform timer (used for ASL Wait states)

    def __init__(self, send: Callable[[Any], None], queue: DurableQueue | None = None,
                 owner: str | None = None, parent: Callable[[], int | None] = lambda: None):
        self.send = send
        self.queue = queue
        self.owner = owner
        self.parent = parent
        self.held: list[tuple[float, list]] | None = None  # notices kept until flush()

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        if not calls:
            return
        if self.queue is None:
            self.send(("invoke", list(calls), delay))
            return
        ids = self.queue.add(calls, self.owner, self.parent(), delay)
        notice = [(i, fn, p) for i, (fn, p) in zip(ids, calls)]
        if self.held is not None:
            self.held.append((delay, notice))
        else:
            self.send(("invoke", notice, delay))

    def hold(self) -> None:
        """Keep the platform's notices until `flush()`: the rows are queued (in the datastore's
        deferred transaction, runtime.local.datastore) but the platform hears of them only
        once the execution committed them."""
        self.held = []

    def take(self) -> list[tuple[list, float]]:
        """The held notices, one (notice, delay) per delay, and stop holding."""
        held, self.held = self.held, None
        by_delay: dict[float, list] = {}
        for delay, notice in held or ():
            by_delay.setdefault(delay, []).extend(notice)
        return [(notice, delay) for delay, notice in by_delay.items()]

    def flush(self) -> None:
        """Send the held notices (one message per delay) and stop holding."""
        for notice, delay in self.take():
            self.send(("invoke", notice, delay))


class Watchdog:
    """The platform's per-attempt timer for a Task's TimeoutSeconds (runtime.asl.attempts):
    `arm` asks the platform to kill this instance `seconds` from now unless `disarm` comes
    first, and then to record `outcome` (States.Timeout) as item `key` of `session`
    (create-if-absent, expiring at `expires_at`) before it redelivers the invocation, which
    replays the attempts and so applies the Task's Retry/Catch. `send`: the connection to the
    platform; `current()`: the platform's id of the message being executed."""

    def __init__(self, send: Callable[[Any], None], current: Callable[[], Any]):
        self.send = send
        self.current = current

    def arm(self, seconds: float, session: str, key: str, outcome: dict[str, Any],
            expires_at: float) -> None:
        self.send(("arm", self.current(), float(seconds), session, key, outcome, float(expires_at)))

    def disarm(self) -> None:
        self.send(("disarm", self.current()))


class LocalFunction:
    """One function instance ("container") of the local target.

    `env`: {"db": sqlite path, "blobs": blob dir, "faults": spec string or "",
    "max_attempts": delivery attempts, "owner": the platform's queue owner token (optional;
    without it the platform persists invocations itself), "wal_autocheckpoint": pages
    (optional; the platform checkpoints the WAL itself)}; `send` delivers messages to the
    platform process."""

    def __init__(self, bundle_dir: str, env: dict[str, Any], send: Callable[[Any], None]):
        self.bundle = load_bundle(bundle_dir)
        self.env = env
        self.send = send
        self.ds = SqliteDatastore(env["db"], autocheckpoint=env.get("wal_autocheckpoint"))
        self.blobs = FileBlobStore(env["blobs"], gate=self.ds)  # deletes wait for the commit
        self._current: int | None = None
        self.queue = queue = DurableQueue(self.ds) if env.get("owner") else None
        self.invoker = QueueInvoker(send, queue, env.get("owner"), lambda: self._current)
        # what the last `handle` did beyond its Outcome (for the platform's "done" message):
        # whether it deleted its queue message itself, whether it created or found the result
        self.acked = False
        self.ended = False
        # coalesce: the worker sends the notices of a completed execution with its "done"
        # message (one message per execution) instead of `handle` sending them
        self.coalesce = False
        self.notices: list[tuple[list, float]] = []
        self.spec = FaultSpec.parse(env.get("faults") or None)
        handler = self.bundle.handler

        def guarded(event: Any, context: Any) -> Any:
            try:
                return handler(event, context)
            except MemoryError as exc:  # not a user error: the instance ran out of memory
                raise OutOfMemory(str(exc)) from exc

        self.bundle.handler = guarded
        level = self.bundle.options.history
        self.history = SqliteHistory(self.ds, level) if level != "off" else None
        try:
            self.engine = self.bundle.engine(self.ds, self.invoker, self.blobs, events=self.history)
        except TypeError:  # a bundle whose runtime predates history
            self.engine = self.bundle.engine(self.ds, self.invoker, self.blobs)
        # the function's own output (print, logging, subprocesses), per execution
        self.capture = OutputCapture() if self.history is not None and env.get("capture", True) else None
        if self.capture is not None and hasattr(self.engine, "on_session_end"):
            self.engine.on_session_end = self._flush_output  # before a client may stop this instance
        self._delivery: tuple = (None, 0, None)
        self._msg: Any = None
        if hasattr(self.engine, "watchdog"):
            self.engine.watchdog = Watchdog(send, lambda: self._msg)

    def handle(self, payload: dict[str, Any], attempt: int, message_key: Any,
               message_id: int | None = None, ack: bool = False) -> Outcome:
        """Run one delivery attempt (1-based) of a message; InjectedCrash and OutOfMemory
        propagate. `message_id`: the durable queue id of the message (the parent of what this
        execution invokes). `ack`: delete that queue row when the execution completes, in the
        execution's own transaction (the platform then does not; it asks only when this is
        the message's one copy in flight). Raises UnumError for a payload whose Session is
        not a safe id.

        Transactions (runtime.local.datastore, deferred commit): everything the execution
        writes from its checkpoint on is committed once, at its end, with the
        acknowledgement; then the platform is told of the invocations it queued. When the
        execution raises, what it wrote is committed as it stands (as if each write had been
        its own transaction), the message is not acknowledged and the platform is still told
        of what was queued."""
        if not isinstance(payload, dict):
            raise UnumError(f"invocation payload must be a JSON object, got {type(payload).__name__}")
        if payload.get("Session") is not None:
            check_session_id(payload["Session"])
        if self.spec is not None:
            self.engine.faults = SeededFaults(self.spec, attempt, int(self.env.get("max_attempts", 3)),
                                              message_key)
        self._current = message_id
        self._msg = message_key
        self.acked = self.ended = False
        self.notices = []
        self.ds.result_touched = False
        delivery = {"attempt": attempt, "request_id": f"{message_id}/{message_key}"}
        deferred = self.queue is not None
        if deferred:
            self.ds.defer_from("ckpt/", (RESULT_KEY,))  # a checkpoint or the result: the commit point
            self.invoker.hold()
        capture = self.capture is not None
        if capture:
            self._delivery = (payload, attempt, delivery["request_id"])
            self.capture.start()  # type: ignore[union-attr]
        notify = True  # False once the deferred transaction is lost: its rows do not exist
        try:
            out = self.engine.handle(payload, delivery)
            if capture:
                capture = False
                self._store_output()  # in the execution's transaction
            if deferred:
                if ack and message_id is not None:
                    self.queue.delete([message_id])  # type: ignore[union-attr]
                self._kill_point("kill_before_commit", out)
                notify = False
                self.ds.commit_deferred()
                notify = True
                self.acked = ack and message_id is not None
            self.ended = self.ds.result_touched
            return out
        except BaseException:
            if deferred and notify:
                notify = False
                try:
                    self.ds.commit_deferred()  # what was written before the failure stays
                    notify = True
                except Exception:  # noqa: BLE001  (lost: the redelivery starts over)
                    self.ds.rollback_deferred()
            raise
        finally:
            self._current = None
            self._msg = None
            if capture:
                self._store_output()
            if deferred:
                if not notify:
                    self.invoker.held = None
                elif self.coalesce:
                    self.notices = self.invoker.take()  # sent by the worker, see `coalesce`
                else:
                    self.invoker.flush()

    def _kill_point(self, name: str, out: Outcome) -> None:
        """Fault injection (runtime.faults KILL_POINTS): when the seeded draw says so, tell
        the platform (it counts the fault) and SIGKILL this process, as a platform kills an
        instance: nothing of the open transaction is committed and the platform redelivers."""
        faults = self.engine.faults
        if self.spec is None or not isinstance(faults, SeededFaults) or \
                not faults.kills(name, out.session, out.instance):
            return
        try:
            self.send(("fault", self._msg, name))
        except OSError:
            pass
        os.kill(os.getpid(), signal.SIGKILL)

    def _flush_output(self) -> None:
        """Record what the running execution printed so far and go on capturing."""
        self._store_output()
        self.capture.start()  # type: ignore[union-attr]

    def _store_output(self) -> None:
        """Stop capturing, pass the output on to the platform's stderr and record each line
        with the execution's session, function and invocation (never raises)."""
        payload, attempt, request_id = self._delivery
        try:
            text, t = self.capture.stop(), time.time()  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001
            return
        if not text:
            return
        try:
            os.write(self.capture.saved_err, text.encode("utf-8", "replace"))  # type: ignore[union-attr]
        except OSError:
            pass
        rec = getattr(self.engine, "last_record", None) or {}
        obs = getattr(getattr(self.engine, "_obs", None), "rec", None)
        if obs is not None:  # still running (flushed at the session's end)
            rec = obs
        session = rec.get("session") or (payload.get("Session") if isinstance(payload, dict) else None)
        instance = rec.get("instance")
        rows = [(session, self.bundle.ir.name, instance, attempt, request_id, t, line)
                for line in text.splitlines()]
        try:
            self.history.logs_write(rows)  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001  (history never fails an execution)
            pass


class OutputCapture:
    """Redirects file descriptors 1 and 2 (so print, logging, C extensions and child
    processes alike) to a private temporary file while one execution runs; `stop()` restores
    them and returns what was written (text, decoded as UTF-8 with replacement).
    Output written after `stop()` by threads the execution left running goes to the next
    execution's capture (or to the platform's stderr)."""

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()
        self.saved_out = os.dup(1)
        self.saved_err = os.dup(2)
        self.active = False
        self.dirty = False  # the file holds output of an earlier capture (truncated by start)

    @staticmethod
    def _flush() -> None:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (AttributeError, ValueError, OSError):
                pass

    def start(self) -> None:
        self._flush()
        if self.dirty:  # most executions print nothing: then the file is still empty
            self.file.seek(0)
            self.file.truncate()
            self.dirty = False
        os.dup2(self.file.fileno(), 1)
        os.dup2(self.file.fileno(), 2)
        self.active = True

    def stop(self) -> str:
        if not self.active:
            return ""
        self._flush()
        os.dup2(self.saved_out, 1)
        os.dup2(self.saved_err, 2)
        self.active = False
        # fds 1 and 2 shared the file's offset (dup2): it is the number of bytes written,
        # whether by print, a C extension or a child process
        if os.lseek(self.file.fileno(), 0, os.SEEK_CUR) == 0:
            return ""
        self.dirty = True
        self.file.seek(0)
        return self.file.read().decode("utf-8", "replace")
