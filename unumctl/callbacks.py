"""SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat for an app, from Python (the
`unumctl send-task-*` commands call these).

Source: the Step Functions API reference (SendTaskSuccess, SendTaskFailure,
SendTaskHeartbeat) and docs/stepfunctions.md "Timeouts, heartbeats and callbacks". The work
is done by runtime.asl.callback.CallbackClient on the target's datastore and invoker
(`Target.callback_ports`); on the local target the session is then run on until it has a
result or waits again (`wait=True`).

    from unumctl.callbacks import send_task_success
    result = send_task_success("examples/orders", token, {"paid": True})   # local

Every function raises unumctl.targets.TargetError with Step Functions' error name and
wording (`InvalidToken: Invalid token`, `TaskTimedOut: Task Timed Out: 'Provided task does
not exist anymore'`) and unumctl.manifest.AppError for a bad app directory.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .pipeline import load as load_app
from .targets import get_target

__all__ = ["send_task_failure", "send_task_heartbeat", "send_task_success"]


def _target(app_dir: str | Path, cloud: str, **options: Any):
    return get_target(cloud, load_app(Path(app_dir)), **options)


def send_task_success(app_dir: str | Path, token: str, output: Any, cloud: str = "local",
                      wait: bool = True, timeout: float = 600.0, **options: Any) -> dict[str, Any] | None:
    """Complete the Task waiting on `token` with `output` (JSON). Returns the session's
    result item when the target ran the session to its end here (local with `wait`), else
    None. `options`: target options (e.g. region, profile)."""
    return _target(app_dir, cloud, **options).send_task("success", token, output=output, wait=wait,
                                                        timeout=timeout)


def send_task_failure(app_dir: str | Path, token: str, error: str | None = None, cause: str | None = None,
                      cloud: str = "local", wait: bool = True, timeout: float = 600.0,
                      **options: Any) -> dict[str, Any] | None:
    """Fail the Task waiting on `token` with `error`/`cause` (its Retry/Catch apply); returns
    as send_task_success."""
    return _target(app_dir, cloud, **options).send_task("failure", token, error=error, cause=cause,
                                                        wait=wait, timeout=timeout)


def send_task_heartbeat(app_dir: str | Path, token: str, cloud: str = "local", **options: Any) -> None:
    """Restart the HeartbeatSeconds of the Task waiting on `token`."""
    _target(app_dir, cloud, **options).send_task("heartbeat", token)
