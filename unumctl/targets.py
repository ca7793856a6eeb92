"""Deployment targets behind one interface; the CLI never branches on the cloud name.

A target's `Target` subclass is named by its TargetSpec (`target`) in the one registry,
unumctl/registry.py; `get_target` imports it on first use, so a target whose extra is not
installed fails only when it is asked for.
"""

from __future__ import annotations

from typing import Any

from . import registry
from .install_hint import install_hint
from .manifest import App


class TargetError(Exception):
    """A one-line, actionable error from a target (missing tool, credentials, not applied)."""


class Target:
    """Operations a target supports. Unsupported ones raise TargetError naming the target."""

    name = "?"

    def __init__(self, app: App, **options: Any):
        self.app = app
        self.options = options

    @property
    def stage(self) -> str:
        """The stage addressed (unumctl/deploy/stage.py): the `stage` option (--stage, checked:
        ValueError one line) > the manifest's `stage:` > "dev"."""
        from .deploy.stage import resolve_stage
        return resolve_stage(self.options.get("stage"), self.app.manifest.stage)

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

    def invoke(self, value: Any, wait: bool, timeout: float, session: str | None = None,
               faults: str | None = None) -> tuple[str, dict[str, Any] | None]:
        """Start a session; returns (session id, result item or None when not waiting)."""
        raise self._unsupported("invoke")

    def result(self, session: str) -> dict[str, Any] | None:
        raise self._unsupported("result")

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
