"""The embedded default target `local` as the registry sees it (unumctl/registry.py): worker
processes and a SQLite datastore on this machine. It has no settings section (it deploys to
no cloud), adds nothing to a bundle and is not priced."""

from __future__ import annotations

from typing import Any

from ..registry import TargetSpec

SPEC = TargetSpec(
    name="local",
    target="unumctl.local.target:LocalTarget",
    entry_line="from runtime.local.entry import LocalFunction as local_function  # noqa: F401\n",
    model="unumctl.deploy.appgraph:_local",
    history="unumctl.local.spec:history_reader",
)


def history_reader(app: Any, **options: Any) -> Any:
    """The observe.HistoryReader of `app` on local (options: ignored); its module is imported
    only when used."""
    from ..observe.reader import LocalHistoryReader
    return LocalHistoryReader(app)
