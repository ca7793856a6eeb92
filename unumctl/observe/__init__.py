"""Observability: what happened in a session (docs/observability.md).

`reader(cloud, app)` gives a `HistoryReader` for a target; `unumctl sessions`, `describe`,
`history` and `logs` (unumctl/cli.py) only format what it returns (unumctl/observe/render.py).
Local: runtime/local/history.py tables; gcp: Firestore history + the emulated functions'
output (unumctl/observe/gcp.py).
"""

from __future__ import annotations

from typing import Any

from ..targets import TargetError
from .reader import HistoryReader, LocalHistoryReader, UnknownSession

__all__ = ["HistoryReader", "LocalHistoryReader", "UnknownSession", "reader"]


def reader(cloud: str, app: Any) -> HistoryReader:
    """The HistoryReader of `app` (unumctl.manifest.App) on target `cloud`. Raises
    TargetError for a target without one yet, or when nothing ran there."""
    if cloud == "local":
        return LocalHistoryReader(app)
    if cloud == "gcp":
        from .gcp import GcpHistoryReader
        return GcpHistoryReader(app)
    raise TargetError(f"--cloud {cloud}: execution history is only available for --cloud local so far "
                      "(docs/observability.md)")
