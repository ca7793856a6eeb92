"""Observability: what happened in a session (docs/observability.md).

`reader(cloud, app)` gives a `HistoryReader` for a target; `unumctl sessions`, `describe`,
`history` and `logs` (unumctl/cli.py) only format what it returns (unumctl/observe/render.py).
Local: runtime/local/history.py tables; AWS: CloudWatch Logs and the session index in the
app's DynamoDB table (unumctl/observe/aws.py); gcp: Firestore history + the emulated
functions' output (unumctl/observe/gcp.py).
"""

from __future__ import annotations

from typing import Any

from ..targets import TargetError
from .reader import HistoryReader, LocalHistoryReader, UnknownSession

__all__ = ["HistoryReader", "LocalHistoryReader", "UnknownSession", "reader"]


def reader(cloud: str, app: Any, **options: Any) -> HistoryReader:
    """The HistoryReader of `app` (unumctl.manifest.App) on target `cloud`; `options`: the
    target's CLI options (aws: region, profile). Raises TargetError for a target without one
    yet, or when nothing ran (or nothing is deployed) there."""
    if cloud == "local":
        return LocalHistoryReader(app)
    if cloud == "aws":
        from .aws import AwsHistoryReader
        return AwsHistoryReader.for_app(app, **options)
    if cloud == "gcp":
        from .gcp import GcpHistoryReader
        return GcpHistoryReader(app)
    raise TargetError(f"--cloud {cloud}: no execution history for this target; use local, aws or gcp "
                      "(docs/observability.md)")
