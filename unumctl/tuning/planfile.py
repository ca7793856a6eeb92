"""The plan file `APP/unumctl.plan.yaml` (issue 25; docs/tune.md "Plan file"): what
`unumctl tune` derived from measured sessions and `build`, `plan` and `apply` honour unless
given `--no-plan`. YAML, human-editable, committable:

    version: 1
    derived: {command, cloud, sessions, at, latency_bound}   # informational
    memory: {Function: MB}            # overrides functions.F.memory of unumctl.yaml
    fuse: [[A, B], ...]               # co-located groups (unumctl.tuning.colocate)
    batch: {MapTarget: k}             # k items per branch invocation (unumctl.tuning.colocate)
    reasons: {Function or group: text}

`load` checks every field and raises PlanFileError, one line naming the file and the field
and the fix; it reads the file through unumctl/safefile.py (a regular file of at most
MAX_BYTES, nesting and aliases bounded: a FIFO, /dev/zero or an alias bomb is refused, not
waited on). `dump` writes one atomically (a temporary file renamed over it,
safefile.write_atomic) so that a failed write never leaves half a plan and a planted link
is replaced, not written through.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable

import yaml

from ..safefile import UnsafeFileError, load_yaml, read_bounded, write_atomic
from .sizing import for_cloud

__all__ = ["PLAN_FILE", "PlanFileError", "TunePlan", "applied", "dump", "hand_edited", "load",
           "plan_path"]

PLAN_FILE = "unumctl.plan.yaml"
VERSION = 1
# `tune` writes this first line with a digest of the rest: a file whose rest no longer
# matches was edited by hand (or not written by tune), and `tune` does not overwrite it
# without --force
HEADER = "# written by unumctl tune, digest {digest}; edit freely or delete to discard (docs/tune.md)\n"

TOP_KEYS = ("version", "derived", "memory", "fuse", "batch", "reasons")
MAX_BYTES = 1024 * 1024  # a plan file of a few hundred functions is a few tens of KB
FIX = "replace it with the plan file tune writes, or delete it / pass --no-plan to ignore it"


class PlanFileError(ValueError):
    """A bad plan file: the message is one line naming the file, the field and the fix."""


@dataclass
class TunePlan:
    """A plan (docs/tune.md). `memory`: function -> MB; `fuse`: groups of function names in
    run order (each >= 2); `batch`: Map target -> k >= 1 items per branch invocation;
    `derived`: how it was made (command, cloud, sessions, at (ISO 8601 UTC), latency_bound);
    `reasons`: function or group (names joined by "+") -> text."""

    version: int = VERSION
    derived: dict[str, Any] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    fuse: list[list[str]] = field(default_factory=list)
    batch: dict[str, int] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def to_yaml(self) -> dict[str, Any]:
        """The YAML mapping, empty sections left out (version and derived always there)."""
        out: dict[str, Any] = {"version": self.version, "derived": dict(self.derived)}
        for k in ("memory", "fuse", "batch", "reasons"):
            v = getattr(self, k)
            if v:
                out[k] = v
        return out


def plan_path(app_root: str | Path) -> Path:
    """Where the plan file of the app at `app_root` is: beside its unumctl.yaml."""
    return Path(app_root) / PLAN_FILE


def load(app_root: str | Path, functions: Iterable[str], cloud: str | None = None) -> TunePlan | None:
    """The plan of the app at `app_root`, or None when it has no plan file.

    `functions`: the app's function names (its workflow's: `pipeline.load(app_root).workflow.functions`); `cloud`: the
    target whose memory range applies (default: the plan's `derived.cloud`, else local's):
    its Sizing's `memory_range_mb` (unumctl/tuning/sizing.py: Lambda 128-10,240 MB, gen2
    128 MB-32 GiB, local as Lambda).
    Raises PlanFileError (one line: file, field, fix) for unreadable YAML, an unknown key or
    version, an unknown function, memory that is not an integer in the cloud's range, a fuse group of fewer than 2 functions or naming one twice, a batch
    k < 1; for a file that is not a regular file (FIFO, device, directory) or is larger than
    MAX_BYTES, and for YAML nested deeper than safefile.MAX_DEPTH or whose aliases expand
    beyond safefile.MAX_NODES values."""
    path = plan_path(app_root)
    if not path.exists():
        return None
    names = set(functions)

    def bad(where: str, msg: str) -> PlanFileError:
        return PlanFileError(f"{path}: {where}: {msg} (fix it, or delete the file / pass --no-plan to ignore it)")

    try:
        data = load_yaml(read_bounded(path, MAX_BYTES, FIX).decode("utf-8"))
    except UnsafeFileError as exc:
        raise PlanFileError(str(exc)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PlanFileError(f"{path}: cannot read: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" (line {mark.line + 1})" if mark is not None else ""
        raise PlanFileError(f"{path}: not valid YAML{line}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise bad("(top)", "must be a mapping with version, derived, memory, fuse, batch, reasons")
    for k in data:
        if k not in TOP_KEYS:
            raise bad(str(k), f"unknown key (valid keys: {', '.join(TOP_KEYS)})")
    if data.get("version") != VERSION:
        raise bad("version", f"{data.get('version')!r} is not supported; use {VERSION}")

    def mapping(key: str) -> dict[str, Any]:
        v = data.get(key) or {}
        if not isinstance(v, dict):
            raise bad(key, "must be a mapping")
        return v

    def known(where: str, name: Any) -> str:
        if not isinstance(name, str) or name not in names:
            raise bad(where, f"unknown function {name!r} (functions: {', '.join(sorted(names))})")
        return name

    derived = mapping("derived")
    target = str(cloud or derived.get("cloud") or "local")
    try:
        lo, hi = for_cloud(target).memory_range_mb
    except ValueError as exc:  # an unknown or unsized target in derived.cloud
        raise bad("derived.cloud", str(exc)) from None
    memory: dict[str, int] = {}
    for fn, mb in mapping("memory").items():
        known(f"memory.{fn}", fn)
        if isinstance(mb, bool) or not isinstance(mb, int) or not lo <= mb <= hi:
            raise bad(f"memory.{fn}", f"{mb!r} must be an integer number of MB from {lo} to {hi} on {target}")
        memory[fn] = mb
    fuse_raw = data.get("fuse") or []
    if not isinstance(fuse_raw, list):
        raise bad("fuse", "must be a list of groups, each a list of function names")
    fuse: list[list[str]] = []
    seen: set[str] = set()
    for i, group in enumerate(fuse_raw):
        if not isinstance(group, list) or len(group) < 2:
            raise bad(f"fuse[{i}]", f"{group!r} must list at least 2 functions (a group of one fuses nothing)")
        for fn in group:
            known(f"fuse[{i}]", fn)
            if fn in seen:
                raise bad(f"fuse[{i}]", f"{fn} is already in a fuse group; a function belongs to one group")
            seen.add(fn)
        fuse.append(list(group))
    batch: dict[str, int] = {}
    for fn, k in mapping("batch").items():
        known(f"batch.{fn}", fn)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise bad(f"batch.{fn}", f"{k!r} must be an integer >= 1 (items per branch invocation)")
        batch[fn] = k
    reasons = {str(k): str(v) for k, v in mapping("reasons").items()}
    return TunePlan(VERSION, dict(derived), memory, fuse, batch, reasons)


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()[:16]


def render(plan: TunePlan) -> str:
    """The text `dump` writes: HEADER (with the digest of the rest), then the YAML in
    TOP_KEYS order."""
    body = yaml.safe_dump(plan.to_yaml(), sort_keys=False, default_flow_style=False, width=4096)
    return HEADER.format(digest=_digest(body)) + body


def dump(plan: TunePlan, path: str | Path) -> None:
    """Write `plan` to `path` (YAML, `render`) atomically (safefile.write_atomic: a new
    temporary file in the same directory renamed over `path`; a link at `path` is replaced,
    not followed). Raises OSError when the directory is not writable."""
    write_atomic(path, render(plan))


def hand_edited(path: str | Path) -> bool:
    """True when the file at `path` exists and is not as `dump` wrote it: its first line is
    not HEADER or the digest there does not match the rest (it was edited by hand, or not
    written by `tune`), in which case `tune` refuses to overwrite it without --force.
    Raises UnsafeFileError (a ValueError, one line) when `path` is not a regular file (a
    directory, a FIFO) or is larger than MAX_BYTES."""
    path = Path(path)
    if not path.exists():
        return False
    head, _, body = read_bounded(path, MAX_BYTES, FIX).decode("utf-8", errors="replace").partition("\n")
    m = re.fullmatch(re.escape(HEADER.rstrip("\n")).replace(re.escape("{digest}"), "([0-9a-f]{16})"), head)
    return m is None or m.group(1) != _digest(body)


def applied(app: Any, plan: TunePlan | None) -> Any:
    """`app` (unumctl.manifest.App) with the plan applied: its `memory` in the manifest's
    functions (functions.F.memory), and its `fuse` and `batch` in the workflow's IR
    (unumctl.tuning.colocate.apply); `app` itself when `plan` is None or sets none of them.
    The manifest and the IR files on disk are not changed. Raises colocate.FusionError (a
    ValueError, one line naming the plan file and the group) for a group the runtime cannot
    fuse."""
    if plan is None:
        return app
    if plan.memory:
        fns = {name: (spec.model_copy(update={"memory": plan.memory[name]}) if name in plan.memory else spec)
               for name, spec in app.manifest.functions.items()}
        app = replace(app, manifest=app.manifest.model_copy(update={"functions": fns}))
    from .colocate import apply_plan
    return apply_plan(app, plan, str(plan_path(app.root)))
