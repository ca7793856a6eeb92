"""The Python client for application code: start sessions of a deployed (or local) app, get
their status, wait for their results, list and stop them (docs/client.md).

A `Client` addresses one app on one target (`local`, `aws`, `gcp`; on `local` a live
`unumctl serve` hosting the app runs the sessions) and stage, from the same deployment
record the CLI uses (the stage's Terraform outputs, or the local state directory:
unumctl/deploy/statepath.py). `unumctl invoke` runs through it; underneath, every target
has one start (`Target.start`) and one wait (`Target.wait`), composed once in
`Target.invoke`.

    from unumctl.client import Client

    with Client("examples/wordcount", cloud="aws", stage="prod") as c:
        sid = c.start({"text": "a b a"}, idempotency_key=request_id)   # sent again: same sid
        counts = c.result(sid, timeout=60)                             # the output, or raises

Exactly one session per key: the session id is derived from the idempotency key
(runtime.payload.SessionId.for_key) and the start is conditional (the local session
registry, or the session's start record created with create-if-absent on the clouds:
runtime.session.claim_start), so a start sent again, from a retried request or a redelivered
event, finds its session and starts nothing new, as Step Functions' StartExecution does for
an execution name it has seen with the same input (and refuses with another input:
https://docs.aws.amazon.com/step-functions/latest/apireference/API_StartExecution.html).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from runtime.errors import UnumError
from runtime.payload import SessionId
from runtime.session import STATUSES, session_status

from .targets import Target, TargetError, get_target

__all__ = ["Client", "ClientError", "SessionFailed", "SessionId", "STATUSES"]


class ClientError(Exception):
    """A one-line error of the client: a bad key or id, a session id reused with another
    input (ExecutionAlreadyExists), an app not deployed, no result in time (the message
    names the fix). Subclasses: SessionFailed."""


class SessionFailed(ClientError):
    """The session ended without a value: `status` (FAILED, TIMED_OUT, ABORTED), `error`
    and `cause` (Step Functions' Error and Cause), `item` (its whole result item)."""

    def __init__(self, session: str, item: dict[str, Any]):
        from .failure import failure_line
        super().__init__(failure_line(session, item))
        self.session = session
        self.status = session_status(item)
        self.error = str(item.get("error") or "")
        self.cause = str(item.get("cause") or "")
        self.item = item


class Client:
    """Sessions of the app in `app_dir` on target `cloud` (a context manager; `close` stops
    what it started: on `local`, the platform that runs the sessions in this process).

    `stage`: the stage addressed (None: the manifest's `stage:`, else dev); `region`, and the
    target's other options (aws: `profile`; local: `workers` per function, `faults`): as the
    CLI's global options. Raises ClientError when the app cannot be loaded or the target is
    unknown. Thread use: one Client per thread."""

    def __init__(self, app_dir: str | Path, cloud: str = "local", *, stage: str | None = None,
                 region: str | None = None, **options: Any):
        from .pipeline import load
        try:
            app = load(Path(app_dir))
            opts = {k: v for k, v in {"stage": stage, "region": region, **options}.items() if v is not None}
            target = get_target(cloud, app, **opts)
        except (TargetError, ValueError, OSError, UnumError) as exc:
            raise ClientError(str(exc)) from None
        self._target: Target = target
        self.cloud = cloud

    @classmethod
    def of_target(cls, target: Target) -> "Client":
        """A Client over an existing Target (the CLI's, with its options)."""
        c = cls.__new__(cls)
        c._target, c.cloud = target, target.name
        return c

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Release the target's resources (local: stop its platform; sessions still running
        keep their state and `unumctl resume APP SESSION` finishes them)."""
        self._target.close()

    @staticmethod
    def session_for(idempotency_key: str) -> SessionId:
        """The session id of `idempotency_key` (1 to 255 characters, no control characters):
        `key-` + SHA-256 hex (runtime.payload.SessionId.for_key). ClientError otherwise."""
        try:
            return SessionId.for_key(idempotency_key)
        except UnumError as exc:
            raise ClientError(str(exc)) from None

    def start(self, input: Any, *, idempotency_key: str | None = None,
              session: str | None = None) -> SessionId:
        """Start a session with `input` (a JSON value) and return its id, at once (the
        session runs on the target). The id is `session_for(idempotency_key)`, else
        `session` (1 to 80 of A-Z a-z 0-9 _ -, a letter or digit first), else a new UUID4.
        The same id with the same input starts nothing new and returns the id (the session
        may be running or ended); ClientError for the same id with another input
        (ExecutionAlreadyExists), a bad key or id, input that is not JSON, both
        `idempotency_key` and `session`, or an app that is not deployed."""
        if idempotency_key is not None and session is not None:
            raise ClientError("start: give idempotency_key or session, not both")
        sid = self.session_for(idempotency_key) if idempotency_key is not None else self._id(session, True)
        try:
            self._target.start(input, sid)
        except TargetError as exc:
            raise ClientError(str(exc)) from None
        except (TypeError, ValueError) as exc:
            raise ClientError(f"start: the input is not JSON: {exc}") from None
        return sid

    def wait(self, session: str, timeout: float = 600.0) -> dict[str, Any]:
        """Wait up to `timeout` seconds for the session's result item and return it:
        {"status": "SUCCEEDED", "v": output} or {"status": "FAILED"|"TIMED_OUT"|"ABORTED",
        "error", "cause", ...} (runtime/session.py). ClientError when it has none in time
        (it keeps running; wait again) or the id is bad."""
        sid = self._id(session)
        try:
            return self._target.wait(sid, timeout)
        except TargetError as exc:
            raise ClientError(str(exc)) from None

    def result(self, session: str, timeout: float = 600.0) -> Any:
        """The session's output (JSON value) once it has succeeded, waiting up to `timeout`
        seconds. SessionFailed when it ended otherwise; ClientError as for `wait`."""
        item = self.wait(session, timeout)
        if item.get("status") != "SUCCEEDED":
            raise SessionFailed(str(session), item)
        return item.get("v")

    def status(self, session: str) -> str:
        """RUNNING (no result yet, or not started), SUCCEEDED, FAILED, TIMED_OUT or ABORTED:
        the status of the session's result item (runtime.session.session_status), read now.
        ClientError when nothing is deployed (or ran locally) yet."""
        try:
            return session_status(self._target.result(self._id(session)))
        except TargetError as exc:
            raise ClientError(str(exc)) from None

    def sessions(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Sessions newest first, from the target's execution history (unumctl/observe:
        needs `runtime.history` other than off): [{"session", "status", "start", "end",
        "duration" (s), "invocations"}]; `status`: one of STATUSES. ClientError when the
        target has no history reader or nothing ran."""
        from . import observe
        if status is not None and status not in STATUSES:
            raise ClientError(f"sessions: status {status!r} is not one of {', '.join(STATUSES)}")
        t = self._target
        try:
            opts = {k: v for k, v in t.options.items() if k not in ("workers", "faults")}  # the CLI's reader options
            return observe.reader(self.cloud, t.app, **opts).sessions(status, limit)
        except (TargetError, OSError) as exc:
            raise ClientError(str(exc)) from None

    def stop(self, session: str, error: str = "", cause: str = "") -> str:
        """Stop the session (Step Functions' StopExecution): its outcome becomes ABORTED
        with `error` and `cause` unless it already has one (the first outcome wins), and it
        ends (its items swept; executions still running drop). Returns its status after the
        call (ABORTED, or the outcome it had). ClientError when no such session started."""
        try:
            return session_status(self._target.stop(self._id(session), error, cause))
        except TargetError as exc:
            raise ClientError(str(exc)) from None

    def invoke(self, input: Any, wait: bool, timeout: float, session: str | None = None,
               faults: str | None = None) -> tuple[SessionId, dict[str, Any] | None]:
        """Start a session and, with `wait`, wait for its result item: (session id, item or
        None). What `unumctl invoke` runs (Target.invoke: `start`, then `wait`); TargetError
        as the CLI reports it; `faults`: local only (runtime/faults.py syntax)."""
        return self._target.invoke(input, wait, timeout, session, faults)

    @staticmethod
    def _id(session: str | None, new: bool = False) -> SessionId:
        if session is None and new:
            return SessionId.new()
        try:
            return SessionId(session)
        except UnumError as exc:
            raise ClientError(str(exc)) from None
