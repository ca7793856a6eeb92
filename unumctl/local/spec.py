"""The embedded default target `local` as the registry sees it (unumctl/registry.py): worker
processes and a SQLite datastore on this machine. It has no settings section (it deploys to
no cloud), adds nothing to a bundle and is not priced."""

from __future__ import annotations

from ..registry import TargetSpec

__all__ = ["SPEC"]

SPEC = TargetSpec(
    name="local",
    target="unumctl.local.target:LocalTarget",
    entry_line="from runtime.local.entry import LocalFunction as local_function  # noqa: F401\n",
    model="unumctl.deploy.appgraph:_local",
    history="unumctl.observe.reader:LocalHistoryReader.for_app",
    # `tune` on local plans for the cloud it stands for (unumctl/local/stands_for.py)
    sizing="unumctl.local.stands_for:SIZING",
    tuning="unumctl.local.stands_for:TUNING",
)
