"""Observability: what happened in a session (docs/observability.md).

`reader(cloud, app)` gives a `HistoryReader` for a target; `unumctl sessions`, `describe`,
`history` and `logs` (unumctl/cli.py) only format what it returns (unumctl/observe/render.py).
Local: runtime/local/history.py tables; AWS: CloudWatch Logs and the session index in the
app's DynamoDB table (unumctl/observe/aws.py).
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
    raise TargetError(f"--cloud {cloud}: execution history is only available for --cloud local so far "
                      "(docs/observability.md)")
