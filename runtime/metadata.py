"""What an execution's history event records for a planner (issue 25; seed 004's metadata
of past runs): the process's peak memory and the calls planned per edge, measured in the
engine at history level `full` (runtime/engine.py, `Engine._observed` and `_continue`).

Fields (docs/observability.md, "What is recorded"):
- `peak_memory_mb`: `resource.getrusage(RUSAGE_SELF).ru_maxrss` of the process that ran the
  execution, in MB (Linux reports KiB, macOS bytes). It is the peak since the process
  started, so on a warm worker (a local worker process, a Lambda execution environment, a
  Cloud Functions instance) it never falls between executions: an upper bound of what this
  execution needed. Lambda's REPORT line `Max Memory Used` is written by the platform after
  the handler returns, so the runtime cannot read it in-process; the same getrusage is
  recorded on every target.
- `fanout_width`: {edge kind: calls planned} for the kinds `scalar` (same branch depth),
  `map` (the call pushes a fan-out frame: a Map or Parallel branch) and `fanin` (the call
  joins a fan-in: its set add, whether or not this branch completes it).
- `edges`: {target function: [kind, bytes]}: the bytes this execution sent to the target
  (the JSON payload values, inline or through a blob; for a fan-in, the size of the
  checkpoint item the target will read, when this execution created it, else 0).

Runtime code: no import of unumctl or a cloud SDK.
"""

from __future__ import annotations

import sys
from typing import Any

try:
    import resource
except ImportError:  # not on Windows: peak memory is not recorded there
    resource = None  # type: ignore[assignment]

__all__ = ["Fanout", "edge_kind", "peak_memory_mb"]

# ru_maxrss unit: bytes on macOS, KiB elsewhere (getrusage(2) on Linux)
_RSS_UNIT = 1 if sys.platform == "darwin" else 1024


def peak_memory_mb() -> float | None:
    """The peak resident set size of this process so far, MB (1 MB = 2**20 bytes), rounded
    to 0.1; None where `resource` is missing. Source: getrusage(2) `ru_maxrss`."""
    if resource is None:
        return None  # type: ignore[unreachable]  # (only where `resource` is missing)
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _RSS_UNIT / 2**20, 1)


def edge_kind(call: Any, depth: int) -> str:
    """The kind of planned call `call` (runtime.plan.Call) from an invocation at fan-out
    depth `depth` (its number of frames): "fanin" (it carries refs or a set), "map" (it
    pushes a frame), else "scalar"."""
    if call.refs is not None:
        return "fanin"
    return "map" if len(call.frames) > depth else "scalar"


class Fanout:
    """The `fanout_width` and `edges` fields of one execution, counted call by call."""

    def __init__(self) -> None:
        self.width: dict[str, int] = {}
        self.edges: dict[str, list[Any]] = {}

    def add(self, target: str, kind: str, nbytes: int) -> None:
        """Count one planned call to `target` of `kind` carrying `nbytes`."""
        self.width[kind] = self.width.get(kind, 0) + 1
        edge = self.edges.setdefault(target, [kind, 0])
        edge[1] += nbytes

    def into(self, rec: dict[str, Any]) -> None:
        """Set the fields on event record `rec` (nothing when no call was planned)."""
        if self.width:
            rec["fanout_width"] = self.width
            rec["edges"] = self.edges
