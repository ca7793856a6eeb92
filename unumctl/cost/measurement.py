"""What one measured run of an app did: the input of billing (billing.py).

The emulated run that produces it is measure.py (python -m unumctl.cost.measure:
moto + the emulated Lambda, or the GCP emulators) and is started by emulated.py as a child
process; this module only defines and checks the JSON it prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..deploy.settings import Clouds

__all__ = ["Measurement", "MeasurementError"]


class MeasurementError(ValueError):
    """A measurement lacks a field or has one of the wrong type (message names it)."""


@dataclass
class Measurement:
    """One app run `sessions` times on `cloud` ("aws" or "gcp").

    `executions`: (function, ms) per function execution, ms = the handler's measured duration;
    `memory_mb`: function -> configured memory (MB, from the manifest through the deployment
    model); `operations`: counter name -> count over all sessions (aws: "service:Operation",
    "service:Operation#items"; gcp: "firestore_reads", "publish_bytes", ...); `item_bytes`
    (aws): "dynamodb:Operation#bytes" -> size in bytes of each item written or read;
    `log_bytes` / `log_bytes_history`: log ingestion bytes (all lines / the history's lines);
    `session_ms`: wall time per session from the entry invoke to the result item;
    `entry_bytes`: the entry payload's JSON size; `target`: what ran; `functions`: the
    workflow's functions (an execution of anything else, e.g. the AWS error handler, is not
    a transition of the workflow); `warmup_sessions`: sessions run before these and not
    counted (steady state: the emulator's execution environments were warm), None when the
    run says nothing about it; `cold_starts`: environments started during the counted ones;
    `windows` (an app with Window edges, docs/ir.md "Windows across sessions"): `ticks`,
    [(window, seconds between the scheduler's ticks)] per tick the measured run sent after the
    sessions as the cloud's scheduler would, and `consumer_sessions`, the window sessions
    (`win-<name>-<id>`) that fired; their executions and operations are in the fields above,
    so every per-execution figure is per object (producer session) with the consumers' share."""

    app: str
    cloud: str
    sessions: int
    executions: list[tuple[str, float]]
    memory_mb: dict[str, int]
    operations: dict[str, int]
    session_ms: list[float]
    item_bytes: dict[str, list[int]] = field(default_factory=dict)
    log_bytes: int = 0
    log_bytes_history: int = 0
    entry_bytes: int = 0
    target: str = ""
    functions: list[str] = field(default_factory=list)
    warmup_sessions: int | None = None
    cold_starts: int | None = None
    window_ticks: list[tuple[str, float]] = field(default_factory=list)
    consumer_sessions: list[str] = field(default_factory=list)

    @classmethod
    def from_json(cls, obj: Any) -> "Measurement":
        """Build from the JSON object unumctl/cost/measure.py prints; MeasurementError."""
        if not isinstance(obj, dict):
            raise MeasurementError("measurement: not a JSON object")
        for k, t in (("app", str), ("cloud", str), ("sessions", int), ("executions", list),
                     ("memory_mb", dict), ("operations", dict), ("session_ms", list)):
            if not isinstance(obj.get(k), t):
                raise MeasurementError(f"measurement: {k}: missing or not a {t.__name__}")
        if obj["cloud"] not in Clouds.deployable() or obj["sessions"] < 1:
            raise MeasurementError(f"measurement: cloud {obj['cloud']!r} / sessions {obj['sessions']!r} out of range")
        execs = [(str(f), float(ms)) for f, ms in obj["executions"]]
        win = obj.get("windows") or {}
        if not isinstance(win, dict) or not isinstance(win.get("ticks", []), list) or not isinstance(
                win.get("consumer_sessions", []), list):
            raise MeasurementError("measurement: windows: expected {\"ticks\": [[window, seconds], ...], "
                                   "\"consumer_sessions\": [session, ...]}")
        missing = sorted({f for f, _ in execs} - set(obj["memory_mb"]))
        if missing:
            raise MeasurementError(f"measurement: memory_mb: no memory for {', '.join(missing)}")
        return cls(app=obj["app"], cloud=obj["cloud"], sessions=obj["sessions"], executions=execs,
                   memory_mb={k: int(v) for k, v in obj["memory_mb"].items()},
                   operations={k: int(v) for k, v in obj["operations"].items()},
                   session_ms=[float(x) for x in obj["session_ms"]],
                   item_bytes={k: [int(b) for b in v] for k, v in obj.get("item_bytes", {}).items()},
                   log_bytes=int(obj.get("log_bytes", 0)), log_bytes_history=int(obj.get("log_bytes_history", 0)),
                   entry_bytes=int(obj.get("entry_bytes", 0)), target=str(obj.get("target", "")),
                   functions=[str(f) for f in obj.get("functions", [])],
                   warmup_sessions=_opt_int(obj.get("warmup_sessions")),
                   cold_starts=_opt_int(obj.get("cold_starts")),
                   window_ticks=[(str(w), float(s)) for w, s in win.get("ticks", [])],
                   consumer_sessions=[str(x) for x in win.get("consumer_sessions", [])])

    def steady_state_note(self) -> str | None:
        """The report's line on cold starts (None when the run did not say)."""
        if self.warmup_sessions is None:
            return None
        if self.warmup_sessions == 0:
            return f"cold starts billed: no warm-up session ran ({self.cold_starts or 0} cold start(s) counted)"
        return (f"steady state: {self.warmup_sessions} warm-up session(s) ran first and are not billed "
                f"(until a session started no new execution environment); cold starts among the "
                f"billed sessions: {self.cold_starts or 0}")

    def window_note(self) -> str | None:
        """The report's line on the windows' consumer sessions (None without windows)."""
        if not self.window_ticks and not self.consumer_sessions:
            return None
        ticks = ", ".join(f"{w} every {s:g} s" for w, s in self.window_ticks) or "none (ByBatchSize only)"
        return (f"windows: {len(self.consumer_sessions)} consumer session(s) "
                f"({', '.join(self.consumer_sessions) or 'none fired'}) ran on the {self.sessions} measured "
                f"objects and are billed with them: per execution = per object (producer session), the "
                f"consumers' executions, operations and log lines included; scheduler ticks sent: {ticks}. "
                f"Assumption: each window fired closes the objects of the measured sessions, so a consumer "
                f"and a tick are shared by {self.sessions} objects; in production a tick every T s closes "
                f"the objects that arrived in T s (at R objects/s, 1/(R*T) tick and consumer per object)")

    def per_session(self, name: str) -> float:
        """operations[name] / sessions (0 when not counted)."""
        return self.operations.get(name, 0) / self.sessions


def _opt_int(v: Any) -> int | None:
    return None if v is None else int(v)
