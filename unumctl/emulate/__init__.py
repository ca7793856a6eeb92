"""Emulated clouds on this machine, for `unumctl emulate <cloud>` (docs/aws.md, docs/gcp.md),
`unumctl cost` and the tests. The neutral front: `Emulator` (what a TargetSpec `emulator`
names) and `EmulatorMissing`; each target's emulator lives in its package.

- `unumctl.aws.emulate`: moto_server (`moto_local`, one request at a time: `moto_serialized`)
  and a local Lambda API (`local_lambda`) that runs each function's built archive through its
  Lambda handler in worker processes (`lambda_worker`), with CloudWatch Logs delivery
  (`local_logs`); `lambda_front` serves the functions Terraform created on moto.
- `unumctl.gcp.emulate`: the Firestore and Pub/Sub emulators and the GCS stand-in
  (`emulators`) and the platform that serves an app's built GCP bundles on them with
  functions-framework and push subscriptions (`platform`).

Everything binds 127.0.0.1 only. The components are optional dependencies
(`pip install 'unumctl[emulate]'`, and the Google Cloud SDK's emulators for gcp); a missing
one is reported by name with how to install it.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Callable

__all__ = ["Emulator", "EmulatorMissing"]


class EmulatorMissing(RuntimeError):
    """A component needed to run an emulator is not installed (message names it)."""


@dataclass(frozen=True)
class Emulator:
    """A target's `unumctl emulate <cloud>` (TargetSpec `emulator`): `start(workdir)` a
    context manager that runs the emulator (files under `workdir`), yields the environment
    to export ({name: value}) and stops everything it started on exit; raises EmulatorMissing
    or RuntimeError (one line) when a component is missing or does not start. `help`: the
    command's help text (first line: its summary). `takes_apps`: the command takes APP
    directories to serve on the emulators, and `start(workdir, apps)` gets them loaded
    (unumctl.manifest.App); else the emulator serves what `unumctl apply` creates on it and
    the command takes none."""

    start: Callable[..., AbstractContextManager[dict[str, str]]]
    help: str
    takes_apps: bool = False
