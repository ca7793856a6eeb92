"""Deployment targets behind one interface; the CLI never branches on the cloud name.

A target's `Target` subclass is named by its TargetSpec (`target`) in the one registry,
unumctl/registry.py; `get_target` imports it on first use, so a target whose extra is not
installed fails only when it is asked for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from runtime.errors import UnumError
from runtime.payload import SessionId

from . import registry
from .install_hint import install_hint
from .manifest import App

__all__ = ["SessionPorts", "Target", "TargetError", "get_target", "session_id"]


class TargetError(Exception):
    """A one-line, actionable error from a target (missing tool, credentials, not applied)."""


def session_id(value: Any, flag: str = "--session") -> SessionId:
    """`value` parsed into a SessionId (runtime.payload: the one validator), else a
    TargetError naming `flag` and the fix."""
    try:
        return SessionId(value)
    except UnumError as exc:
        raise TargetError(f"{flag}: {exc} (e.g. run-42)") from None


@dataclass(frozen=True)
class SessionPorts:
    """What a deployed target hands the one session loop (`Target.invoke`, `Target.result`),
    as `Target.callback_ports` hands send-task-* its ports:

    - `stores()`: (Datastore, BlobStore) the session's `result` is read from (runtime.ports);
    - `send(payload)`: deliver the entry payload (runtime.session.entry_payload) to the entry
      function (Lambda Invoke with InvocationType=Event, a Pub/Sub publish); TargetError when
      the entry function is not deployed;
    - `max_payload_bytes`: the invoker's limit: a larger input goes to `input_blobs()` (the
      blob store, looked up only then) and travels by reference;
    - `no_result(session, timeout)`: the one line of a `--wait` that saw no result in time."""

    stores: Callable[[], tuple[Any, Any]]
    send: Callable[[dict[str, Any]], None]
    max_payload_bytes: int
    input_blobs: Callable[[], Any]
    no_result: Callable[[SessionId, float], str]


def start_session(ports: SessionPorts, value: Any, session: SessionId, item_expiry: float) -> bool:
    """Start `session` with input `value` through `ports` once (the input inline, or in blob
    `payload/input` beyond `max_payload_bytes`): the session's start record is claimed first
    (runtime.session.claim_start, create-if-absent; it expires at `item_expiry`, Unix s), so
    a start sent again with the same id and input sends nothing. Returns whether the entry
    was sent. TargetError from `send` (the claim is undone: a retry is not blocked) or for
    the same id with another input (ExecutionAlreadyExists); TypeError/ValueError when
    `value` is not JSON."""
    import time

    from runtime.session import SessionExistsError, start_once
    ds, _ = ports.stores()
    large = len(json.dumps(value, separators=(",", ":")).encode()) > ports.max_payload_bytes
    try:
        return start_once(ds, ports.send, session, value, time.time(), item_expiry,
                          ports.input_blobs() if large else None, ports.max_payload_bytes)
    except SessionExistsError as exc:
        raise TargetError(f"--session: {exc}") from None


class Target:
    """Operations a target supports. Unsupported ones raise TargetError naming the target."""

    name = "?"
    # whether `destroy` leaves the app's data (its datastore) in place: `destroy --delete-data`
    # is refused where it is False (destroy deletes it already)
    keeps_data_on_destroy = False

    def __init__(self, app: App, **options: Any):
        self.app = app
        self.options = options

    @property
    def stage(self) -> str:
        """The stage addressed (unumctl/deploy/stage.py): the `stage` option (--stage, checked:
        ValueError one line) > the manifest's `stage:` > "dev"."""
        from .deploy.stage import resolve_stage
        return resolve_stage(self.options.get("stage"), self.app.manifest.stage)

    @property
    def retention(self) -> Any:
        """The app's runtime.session.Retention (its `runtime:` options)."""
        from runtime.engine import Options
        return Options.from_mapping(self.app.runtime_options()).retention

    def _unsupported(self, op: str) -> TargetError:
        return TargetError(f"'{op}' is not available for --cloud {self.name}")

    def plan(self, out: Any = None, variables: list[str] | None = None,
             targets: list[str] | None = None) -> dict[str, Any]:
        """Build, render and plan; returns unumctl.terraform.PlanSummary.as_dict() ({"add",
        "change", "destroy", "changes", "resources": {"add", "change", "destroy", "replace":
        [address]}}) plus "workdir" and target extras. `out`: also write a saved plan there
        (unumctl/savedplan.py); `variables` / `targets`: `--var KEY=VALUE` / `--target
        ADDRESS` for Terraform."""
        raise self._unsupported("plan")

    def apply(self, yes: bool = False, plan_file: Any = None, variables: list[str] | None = None,
              targets: list[str] | None = None) -> dict[str, Any]:
        """Plan and apply, or apply exactly the saved plan `plan_file` (refusing a stale one)."""
        raise self._unsupported("apply")

    def destroy(self, yes: bool = False) -> dict[str, Any]:
        """Destroy the deployment; returns {"destroyed": [address], "workdir"}."""
        raise self._unsupported("destroy")

    def outputs(self) -> dict[str, Any]:
        raise self._unsupported("outputs")

    def status(self) -> dict[str, Any]:
        raise self._unsupported("status")

    # what `invoke --faults` says on a target that injects no faults from the command line
    faults_hint = "--faults is only available on --cloud local"

    def session_ports(self) -> SessionPorts:
        """The ports of the deployed app the one session loop runs over (SessionPorts);
        TargetError when it is not deployed or cannot be reached."""
        raise self._unsupported("invoke")

    def start(self, value: Any, session: SessionId) -> bool:
        """Start session `session` with input `value` once over `session_ports`
        (start_session: a start sent again with the same id and input sends nothing).
        Returns whether the entry was sent. TargetError when the app is not deployed, for
        the same id with another input, or from the invoker; TypeError/ValueError when
        `value` is not JSON. The one start of unumctl.client.Client (and so of `invoke`)."""
        import time
        return start_session(self._ports(), value, session, self.retention.item_expiry(time.time()))

    def wait(self, session: SessionId, timeout: float) -> dict[str, Any]:
        """The result item of `session` ({"status", "v"} or {"status", "error", "cause"}),
        polled from the datastore (runtime.session.wait_result) for up to `timeout` s.
        TargetError with the target's diagnosis when none came in time (the session keeps
        running). The one wait of unumctl.client.Client (and so of `invoke`)."""
        from runtime.session import wait_result
        ports = self._ports()
        ds, blobs = ports.stores()
        item = wait_result(ds, blobs, session, timeout)
        if item is None:
            raise TargetError(ports.no_result(session, timeout))
        return item

    def _ports(self) -> SessionPorts:
        """`session_ports()`, built once per Target (a client starts many sessions)."""
        ports = getattr(self, "_session_ports", None)
        if ports is None:
            ports = self._session_ports = self.session_ports()
        return ports

    def close(self) -> None:
        """Release what `start` and `wait` hold (the local target's platform); no-op here."""

    def invoke(self, value: Any, wait: bool, timeout: float, session: str | None = None,
               faults: str | None = None) -> tuple[SessionId, dict[str, Any] | None]:
        """Start a session (`session`, parsed into a SessionId, or a new one) with `start`
        and, with `wait`, its result item within `timeout` s with `wait`: the one
        start-and-poll, which unumctl.client.Client.invoke (and so `unumctl invoke`) runs.
        Returns (session id, result item or None when not waiting). TargetError for `faults`
        (a target that injects none), a bad id, or no result in time."""
        if faults:
            raise TargetError(self.faults_hint)
        sid = session_id(session) if session is not None else SessionId.new()
        self.start(value, sid)
        return sid, (self.wait(sid, timeout) if wait else None)

    def stop(self, session: SessionId, error: str = "", cause: str = "") -> dict[str, Any]:
        """Stop `session` (StopExecution): its result becomes ABORTED with `error`/`cause`
        unless it has one, and the session ends (runtime.session.finish, end). Returns the
        stored result item. TargetError when the session never started (no start record,
        no result)."""
        import time

        from runtime.session import START_RECORD, end, finish
        ds, blobs = self._ports().stores()
        if ds.get(session, START_RECORD) is None and self.result(session) is None:
            raise TargetError(f"SESSION: no session {session} on --cloud {self.name}")
        item = {"status": "ABORTED", "instance": "StopExecution", "error": str(error), "cause": str(cause)}
        stored = finish(ds, session, item, self.retention.result_expiry(time.time()))
        if stored == item:
            end(ds, blobs, session, stored, all_blobs=True)
        return stored

    def result(self, session: str) -> dict[str, Any] | None:
        """The session's result item, or None while it runs (runtime.session.read_result)."""
        from runtime.session import read_result
        ds, blobs = self._ports().stores()
        return read_result(ds, blobs, session_id(session, "SESSION"))

    def callback_ports(self) -> tuple[Any, Any]:
        """(Datastore, Invoker) of the deployed app, the ports its functions use, for
        runtime.asl.callback.CallbackClient (send-task-*)."""
        raise self._unsupported("send-task-*")

    def send_task(self, kind: str, token: str, *, output: Any = None, error: str | None = None,
                  cause: str | None = None, wait: bool = True,
                  timeout: float = 600.0) -> dict[str, Any] | None:
        """SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat (`kind` = success, failure,
        heartbeat) for a task token of this app. Returns the session's result item when the
        target finishes the session here (local, `wait`), else None. Raises TargetError with
        Step Functions' error name (`InvalidToken: Invalid token`, `TaskTimedOut: ...`)."""
        from runtime.asl.callback import CallbackClient, CallbackError, Token
        try:
            Token.decode(token)  # before anything else is touched
        except CallbackError as exc:
            raise TargetError(str(exc)) from None
        ds, invoker = self.callback_ports()
        client = CallbackClient(ds, invoker, app=self.app.name)
        try:
            if kind == "success":
                client.send_task_success(token, output)
            elif kind == "failure":
                client.send_task_failure(token, error, cause)
            elif kind == "heartbeat":
                client.send_task_heartbeat(token)
            else:
                raise TargetError(f"send_task: unknown kind {kind!r} (success, failure, heartbeat)")
        except CallbackError as exc:
            raise TargetError(str(exc)) from None
        finally:
            close = getattr(ds, "close", None)
            if close is not None:
                close()
        return None


    def redrive(self, session: str, *, wait: bool = True, timeout: float = 600.0,
                now: float | None = None) -> dict[str, Any]:
        """RedriveExecution for session `session` (runtime/redrive.py, Step Functions'
        semantics: a FAILED session within 14 days of its stop re-runs its failed
        invocations; what succeeded is kept). `now`: the clock (Unix s; default the time).
        Returns {"redriveCount", "redriveDate", "invocations", "result": the result item
        (with `wait`; None when it did not arrive within `timeout` s or without `wait`)}.
        Raises TargetError `ExecutionNotRedrivable: <reason>` (SUCCEEDED, RUNNING, past the
        window, an app without runtime.redrive)."""
        import time

        from runtime.redrive import NotRedrivable, redrive
        ds, invoker = self.callback_ports()
        try:
            info = redrive(ds, invoker, session, time.time() if now is None else now,
                           reopen=lambda: self.reopen(ds, session))
        except NotRedrivable as exc:
            raise TargetError(str(exc)) from None
        finally:
            close = getattr(ds, "close", None)
            if close is not None:
                close()
        info["result"] = self._await_result(session, timeout) if wait else None
        return info

    def reopen(self, ds: Any, session: str) -> None:
        """A redrive reopens `session` (runtime/redrive.py `redrive`'s `reopen`): remove its
        `result` from datastore `ds` and let its next end be recorded in the history (whose
        end record is first-wins). Default: delete item `result`; a target whose history
        keeps an end record clears it here."""
        from runtime.payload import RESULT_KEY
        ds.delete(session, [RESULT_KEY])

    def _await_result(self, session: str, timeout: float) -> dict[str, Any] | None:
        """Poll `result` until the session has one or `timeout` seconds pass (then None)."""
        import time
        deadline = time.monotonic() + timeout
        while True:
            item = self.result(session)
            if item is not None or time.monotonic() >= deadline:
                return item
            time.sleep(0.2)


def get_target(cloud: str, app: App, **options: Any) -> Target:
    """Instantiate the target for `cloud` (its TargetSpec's `target`, unumctl/registry.py);
    TargetError for unknown or unavailable clouds."""
    if cloud not in registry.names():
        raise TargetError(f"--cloud {cloud!r}: unknown target (choose from {', '.join(registry.names())})")
    try:
        cls = registry.part(cloud, "target")
    except ImportError as exc:
        raise TargetError(f"--cloud {cloud}: this installation has no {cloud} target ({exc}); "
                          f"install the extra: {install_hint(cloud)}") from None
    return cls(app, **options)
