"""Where the state of one deployment lives on this machine, keyed by (cloud, region, stage).

- Terraform (aws, gcp): `<app>/.unum/terraform/<cloud>/<region>/<stage>/`: the rendered root
  module, `.terraform/`, the local-backend state `terraform.tfstate` and the saved plan of
  `apply`. Two regions or two stages of one app never share a state, so `--region us-west-2`
  after `--region us-east-1` plans a new deployment instead of moving (destroying) the first.
- local (and `unumctl serve`): `<app>/.unum/local/<stage>/`: the SQLite datastore `unum.db`,
  `blobs/`, the bundle copies, the serve record. Two stages of one app keep separate sessions.

Before this layout, state lived unkeyed in `<app>/.unum/terraform/<cloud>/` and
`<app>/.unum/local/`. That state is never dropped: the first command that needs the directory
moves it (one line on stderr saying from where to where) to the default stage, in the region
it was deployed in (read from its rendered `terraform.tfvars.json` or `main.tf`), or refuses
with one line (ValueError) saying how to move it by hand when that region cannot be read,
the destination exists already, or (local) a process is running on it. The move renames the
whole directory (atomic); an interrupted move is finished by the next command.

Every process running a local platform on a state directory holds a shared lock on its
RUNNER_LOCK file (`hold_runner_lock`); `runner_alive` asks whether one does (before a move,
and to tell a stopped session from a running one).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Callable

from ..build import state_dir
from .stage import DEFAULT_STAGE, check_stage

__all__ = ["adopt_unkeyed_local", "hold_runner_lock", "key_of", "local_dir", "runner_alive", "terraform_dir"]

# a region name as a directory: aws `us-east-1`, gcp `europe-west1` (letters, digits, '-')
REGION_RE = re.compile(r"[a-z][a-z0-9-]{1,30}[a-z0-9]")
# files that only the unkeyed layout has directly in `<app>/.unum/terraform/<cloud>/`
UNKEYED_TERRAFORM = ("main.tf", "terraform.tfstate", "terraform.tfstate.backup", ".terraform",
                     "terraform.tfvars.json")
UNKEYED_LOCAL = ("unum.db",)  # the local datastore directly in `<app>/.unum/local/`
MOVING = ".unkeyed"  # suffix of an unkeyed directory being moved (renamed aside first)

Say = Callable[[str], None]

# in the state directory: every process running a local platform for the app (invoke, resume,
# serve, send-task-*) holds a shared flock(2) on it while it runs, and the kernel drops the lock
# when that process ends however it ends (Ctrl-C, kill -9)
RUNNER_LOCK = "runners.lock"


def hold_runner_lock(state: Path) -> int:
    """Take a shared lock on `state`/RUNNER_LOCK and return its file descriptor (the lock is
    held until every descriptor sharing it, e.g. a child's inherited copy, is closed)."""
    fd = os.open(state / RUNNER_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_SH)
    return fd


def runner_alive(state: Path) -> bool:
    """Whether some process is running a local platform on `state` (holds RUNNER_LOCK): when
    none is, a session without a result is stopped (its invoke was interrupted), not running."""
    try:
        fd = os.open(state / RUNNER_LOCK, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def _stderr(line: str) -> None:
    print(f"unumctl: {line}", file=sys.stderr, flush=True)


def check_region(region: object, field: str = "--region") -> str:
    """`region` when it is usable as a directory name (REGION_RE), else ValueError (one line
    naming `field`): a region comes from flags and the environment and must not be a path."""
    if isinstance(region, str) and REGION_RE.fullmatch(region):
        return region
    raise ValueError(f"{field}: {repr(region)[:40]} is not a region name (e.g. us-east-1 or europe-west1)")


def terraform_dir(app: Any, cloud: str, region: str, stage: str = DEFAULT_STAGE, say: Say = _stderr) -> Path:
    """The Terraform working directory of `app` (unumctl.manifest.App) on `cloud` in `region`
    at `stage`: `<app>/.unum/terraform/<cloud>/<region>/<stage>` (not created). An unkeyed
    state of `cloud` is moved first (adopt_unkeyed_terraform, its line given to `say`).
    ValueError (one line) for a bad region or stage, or an unkeyed state it cannot move."""
    region, stage = check_region(region), check_stage(stage)
    adopt_unkeyed_terraform(app, cloud, say)
    return state_dir(app) / "terraform" / cloud / region / stage


def local_dir(app: Any, stage: str = DEFAULT_STAGE, say: Say = _stderr) -> Path:
    """The local target's state directory of `app` at `stage`: `<app>/.unum/local/<stage>`
    (not created). An unkeyed local state is moved to the default stage first
    (adopt_unkeyed_local). ValueError (one line) for a bad stage or a state it cannot move."""
    stage = check_stage(stage)
    adopt_unkeyed_local(app, say)
    return state_dir(app) / "local" / stage


def key_of(workdir: str | Path) -> tuple[str, str, str] | None:
    """(cloud, region, stage) of a Terraform working directory terraform_dir made, None for
    another path."""
    parts = Path(workdir).parts
    if len(parts) >= 5 and parts[-5:-3] == (".unum", "terraform"):
        return parts[-3], parts[-2], parts[-1]
    return None


def _unkeyed_region(d: Path) -> str | None:
    """The region an unkeyed Terraform directory `d` was rendered for: `region` of its
    `terraform.tfvars.json` (aws), else the default of `variable "region"` in its `main.tf`
    (gcp); None when neither says (or the value is not a region name)."""
    try:
        value = json.loads((d / "terraform.tfvars.json").read_text()).get("region")
    except (OSError, ValueError, AttributeError):
        value = None
    if value is None:
        try:
            text = (d / "main.tf").read_text()
        except OSError:
            text = ""
        m = re.search(r'variable\s+"region"\s*\{[^}]*?default\s*=\s*"([^"]*)"', text)
        value = m.group(1) if m else None
    return value if isinstance(value, str) and REGION_RE.fullmatch(value) else None


def adopt_unkeyed_terraform(app: Any, cloud: str, say: Say = _stderr) -> Path | None:
    """Move an unkeyed `<app>/.unum/terraform/<cloud>/` (the layout before stages: any of
    UNKEYED_TERRAFORM directly in it) to `<cloud>/<region it was rendered for>/<DEFAULT_STAGE>/`;
    returns the new directory, None when there was nothing to move. ValueError (one line, the
    fix: where to move it by hand) when the region cannot be read or the destination exists."""
    base = state_dir(app) / "terraform" / cloud
    aside = base.with_name(cloud + MOVING)
    if not aside.is_dir():
        if not any(os.path.lexists(base / n) for n in UNKEYED_TERRAFORM):
            return None
        region = _unkeyed_region(base)
        if region is None:
            raise ValueError(f"{base}: Terraform state from before stages, and its region cannot be read; "
                             f"move its contents to {base}/REGION/{DEFAULT_STAGE}/ (REGION: where it was "
                             "applied), then re-run")
        dest = base / region / DEFAULT_STAGE
        if os.path.lexists(dest):
            raise ValueError(f"{base}: Terraform state from before stages, and {dest} exists too; "
                             f"merge them by hand (keep the one holding the deployed terraform.tfstate), then re-run")
        os.rename(base, aside)  # one rename: the unkeyed files leave `base` together
    region = _unkeyed_region(aside)
    if region is None:  # (read before the rename: only a hand-edited file gets here)
        raise ValueError(f"{aside}: Terraform state from before stages, and its region cannot be read; move "
                         f"its contents to {base}/REGION/{DEFAULT_STAGE}/, then re-run")
    dest = base / region / DEFAULT_STAGE
    if os.path.lexists(dest):
        raise ValueError(f"{aside}: Terraform state from before stages, and {dest} exists too; merge them "
                         "by hand, then re-run")
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.rename(aside, dest)
    say(f"moved the Terraform state of {app.name} on {cloud} from {base} (before stages) to {dest} "
        f"(region {region}, stage {DEFAULT_STAGE})")
    return dest


def adopt_unkeyed_local(app: Any, say: Say = _stderr) -> Path | None:
    """Move an unkeyed `<app>/.unum/local/` (the layout before stages: UNKEYED_LOCAL directly
    in it) to `<app>/.unum/local/<DEFAULT_STAGE>/`; returns the new directory, None when there
    was nothing to move. ValueError (one line) when a local platform or `unumctl serve` runs on
    it (it must be stopped first) or the destination exists."""
    base = state_dir(app) / "local"
    aside = base.with_name("local" + MOVING)
    if not aside.is_dir():
        if not any(os.path.lexists(base / n) for n in UNKEYED_LOCAL):
            return None
        if runner_alive(base):
            raise ValueError(f"{base}: local state from before stages is in use by a running unumctl "
                             f"(invoke, resume or serve); stop it, then re-run to move the state to "
                             f"{base / DEFAULT_STAGE}")
        if os.path.lexists(base / DEFAULT_STAGE):
            raise ValueError(f"{base}: local state from before stages, and {base / DEFAULT_STAGE} exists too; "
                             f"move one of them away by hand, then re-run")
        os.rename(base, aside)
    dest = base / DEFAULT_STAGE
    base.mkdir(mode=0o700, exist_ok=True)
    os.rename(aside, dest)
    say(f"moved the local state of {app.name} from {base} (before stages) to {dest} (stage {DEFAULT_STAGE})")
    return dest
