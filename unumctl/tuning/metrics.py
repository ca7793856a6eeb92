"""Per-function and per-edge measurements of recorded sessions (issue 25 item 1; seed 004's
"metadata of past runs": execution time and output size per task), read from a target's
execution history (unumctl.observe.HistoryReader: local SQLite, AWS CloudWatch Logs, GCP
Firestore), at history level `full` (docs/observability.md "What is recorded").

Which events count: the executions whose user code ran (`ran`, `failed`). Per execution:
- `duration_ms`: `user_ms + datastore_ms + invoke_ms + runtime_ms` (the engine's one clock
  over the execution; platform start-up and cold starts are not in it);
- `billed_ms`: the duration rounded up to the target's billing increment, from the price
  table (unumctl/cost/prices.json: aws `lambda_billing_increment_ms`, gcp
  `functions_billing_increment_ms`; local is billed as aws, the target it stands for);
- `io_ms` (an addition to the contract's fields): the part of the duration spent waiting on
  the datastore and invoke calls (`datastore_ms + invoke_ms`), which does not scale with
  the CPU share (unumctl.tuning.memory's model);
- `peak_memory_mb`, `input_bytes` (= `payload_bytes`), `output_bytes` (= `checkpoint_bytes`,
  when this execution created the checkpoint), `fanout_width` (sum of the event's
  `fanout_width` over kinds);
- edges: one EdgeStats per (source, target, kind) with each execution's bytes on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

from .sizing import for_cloud

__all__ = ["FunctionStats", "Metrics", "billed", "billing_increment_ms", "collect", "from_events"]

RAN = ("ran", "failed")  # user code ran


@dataclass
class FunctionStats:
    """Measurements of one function over the collected sessions: one list entry per
    execution that ran its user code. Units: ms, MB, bytes, calls."""

    name: str
    executions: int = 0
    duration_ms: list[float] = field(default_factory=list)
    billed_ms: list[float] = field(default_factory=list)
    peak_memory_mb: list[float] = field(default_factory=list)
    input_bytes: list[int] = field(default_factory=list)
    output_bytes: list[int] = field(default_factory=list)
    fanout_width: list[int] = field(default_factory=list)
    io_ms: list[float] = field(default_factory=list)  # of duration_ms: datastore_ms + invoke_ms


@dataclass
class EdgeStats:
    """Bytes sent on one edge `source` -> `target` of `kind` (scalar, map, fanin), one entry
    per execution of `source` that planned calls on it."""

    source: str
    target: str
    kind: str
    bytes: list[int] = field(default_factory=list)


@dataclass
class Metrics:
    """What `collect` returns: `functions` (name -> FunctionStats), `edges` ((source, target,
    kind) -> EdgeStats), `sessions` (the session ids read), `session_ms` (session -> function
    -> the longest execution of the function in that session, ms: a Map's slowest branch,
    what a critical path goes through), `cloud` and `increment_ms` (the billing increment
    used)."""

    functions: dict[str, FunctionStats]
    edges: dict[tuple[str, str, str], EdgeStats]
    sessions: list[str]
    session_ms: dict[str, dict[str, float]]
    cloud: str
    increment_ms: float


def billing_increment_ms(cloud: str, prices: dict[str, Any]) -> float:
    """The billing increment of a function execution on `cloud`, ms, from the price table
    (unumctl.cost.prices.load_prices) through the target's Sizing (unumctl.tuning.sizing).
    Raises ValueError for a target without one."""
    return for_cloud(cloud).increment_ms(prices)


def billed(duration_ms: float, increment_ms: float) -> float:
    """`duration_ms` rounded up to a multiple of `increment_ms` (at least one increment)."""
    return max(1, math.ceil(duration_ms / increment_ms - 1e-9)) * increment_ms


def duration_of(event: dict[str, Any]) -> float | None:
    """An execution event's duration, ms: the sum of its time split, else (t1 - t0); None
    when neither was recorded."""
    parts = [event.get(k) for k in ("user_ms", "datastore_ms", "invoke_ms", "runtime_ms")]
    if all(isinstance(p, (int, float)) for p in parts):
        return float(sum(parts))  # type: ignore[arg-type]
    if isinstance(event.get("t0"), (int, float)) and isinstance(event.get("t1"), (int, float)):
        return (event["t1"] - event["t0"]) * 1000
    return None


def from_events(by_session: dict[str, list[dict[str, Any]]], cloud: str, increment_ms: float) -> Metrics:
    """Metrics from each session's events (HistoryReader.history lists)."""
    functions: dict[str, FunctionStats] = {}
    edges: dict[tuple[str, str, str], EdgeStats] = {}
    session_ms: dict[str, dict[str, float]] = {}
    for session, events in by_session.items():
        longest = session_ms.setdefault(session, {})
        for e in events:
            if e.get("kind") not in RAN or not e.get("function"):
                continue
            ms = duration_of(e)
            if ms is None:
                continue
            fn = e["function"]
            st = functions.setdefault(fn, FunctionStats(fn))
            st.executions += 1
            st.duration_ms.append(ms)
            st.billed_ms.append(billed(ms, increment_ms))
            st.io_ms.append(min(ms, float(e.get("datastore_ms") or 0) + float(e.get("invoke_ms") or 0)))
            if isinstance(e.get("peak_memory_mb"), (int, float)):
                st.peak_memory_mb.append(float(e["peak_memory_mb"]))
            if isinstance(e.get("payload_bytes"), int):
                st.input_bytes.append(e["payload_bytes"])
            if isinstance(e.get("checkpoint_bytes"), int):
                st.output_bytes.append(e["checkpoint_bytes"])
            st.fanout_width.append(sum((e.get("fanout_width") or {}).values()))
            for target, (kind, nbytes) in (e.get("edges") or {}).items():
                edges.setdefault((fn, target, kind), EdgeStats(fn, target, kind)).bytes.append(int(nbytes))
            longest[fn] = max(longest.get(fn, 0.0), ms)
    return Metrics(functions, edges, list(by_session), session_ms, cloud, increment_ms)


def collect(reader: Any, cloud: str, prices: dict[str, Any], sessions: Iterable[str] | None = None,
            limit: int | None = None) -> Metrics:
    """Metrics of recorded sessions read through `reader` (unumctl.observe.HistoryReader of
    target `cloud`): the given `sessions`, else the `limit` newest SUCCEEDED ones (all when
    None). `prices`: the price table (billing increment). Raises ValueError when no session
    has execution events (history level below `full`, or nothing ran)."""
    ids = list(sessions) if sessions is not None else [
        s["session"] for s in reader.sessions(status="SUCCEEDED", limit=limit)]
    by_session = {s: reader.history(s) for s in ids}
    m = from_events(by_session, cloud, billing_increment_ms(cloud, prices))
    if not m.functions:
        raise ValueError(f"no execution events in {len(ids)} session(s) on {cloud}: tune needs "
                         "runtime.history: full (docs/observability.md) and at least one finished session")
    return m
