"""The shared part of `unumctl emulate <cloud>` (docs/aws.md and docs/gcp.md, "Rehearse on
emulators"), also used by the tests. A target's own emulator is its TargetSpec `emulator`
(unumctl/<cloud>/emulate/run.py).

Each emulator is a context manager that yields the environment to export (`export_lines`
prints it as `gcloud beta emulators ... env-init` does) and stops everything it started on
exit, by process id. Everything listens on 127.0.0.1, on free ports. A missing component
raises EmulatorMissing (unumctl.emulate) with one line naming it and how to install it.
"""

from __future__ import annotations

import shlex

__all__ = ["export_lines"]


def export_lines(env: dict[str, str]) -> list[str]:
    """`export NAME=value` lines (values shell-quoted), sorted by name."""
    return [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
