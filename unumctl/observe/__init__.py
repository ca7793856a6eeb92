"""Observability: what happened in a session (docs/observability.md).

`reader(cloud, app)` gives a `HistoryReader` for a target; `unumctl sessions`, `describe`,
`history` and `logs` (unumctl/cli.py) only format what it returns (unumctl/observe/render.py).
Local: runtime/local/history.py tables; AWS: CloudWatch Logs and the session index in the
app's DynamoDB table (unumctl/observe/aws.py); gcp: Firestore history + the emulated
functions' output (unumctl/gcp/history.py). Which reader a target has is its TargetSpec's
`history` (unumctl/registry.py).
"""

from __future__ import annotations

from typing import Any

from .. import registry
from ..targets import TargetError
from .reader import HistoryReader, LocalHistoryReader, UnknownSession

__all__ = ["HistoryReader", "LocalHistoryReader", "UnknownSession", "reader"]


def reader(cloud: str, app: Any, **options: Any) -> HistoryReader:
    """The HistoryReader of `app` (unumctl.manifest.App) on target `cloud`; `options`: the
    target's CLI options (aws: region, profile). Raises TargetError for a target without one
    yet, or when nothing ran (or nothing is deployed) there."""
    make = registry.part(cloud, "history") if cloud in registry.names() else None
    if make is not None:
        return make(app, **options)
    raise TargetError(f"--cloud {cloud}: no execution history for this target; use "
                      f"{', '.join(n for n in registry.names() if registry.spec(n).history)} "
                      "(docs/observability.md)")
