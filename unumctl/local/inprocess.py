"""One call that runs an app on the local target for a user's unit test (docs/python.md
"Testing"): the real engine, worker processes and a SQLite datastore, no CLI."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

__all__ = ["run"]


def run(app_dir: str | Path, value: Any, timeout: float = 60.0, state: str | Path | None = None) -> dict[str, Any]:
    """Run the app at `app_dir` (IR, Step Functions or Python workflow) once with input
    `value` on the local target (unumctl.local.LocalRunner: real engine, SQLite datastore
    under `state`, a temporary directory by default) and return the session's result item,
    `{"status": "SUCCEEDED" | "FAILED", "v": result, ...}`. Raises AppError for a bad app,
    TimeoutError after `timeout` seconds."""
    from ..pipeline import load
    from . import LocalRunner
    app = load(app_dir)
    with tempfile.TemporaryDirectory(prefix="unum-run-") as tmp:
        with LocalRunner(app, state=Path(state) if state else Path(tmp), quiet=True) as runner:
            return runner.run(value, timeout=timeout)
