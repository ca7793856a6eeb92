"""Billed operations of a measured run (measurement.py) and their price (prices.json), per
execution of the workflow (one session).

Each cost is a `Line`: what is billed, how many per execution, the unit, the unit price and
the dollars per execution. Rules, by the clouds' pricing pages (sources in prices.json):

The rules of each cloud are in that target's package (`unumctl/aws/billing.py`,
`unumctl/gcp/billing.py`), named by its TargetSpec's `billing` (unumctl/registry.py) and found
through `for_cloud`. Counters the table does not price are returned apart (`unpriced`), never dropped.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Callable

from .. import registry
from .measurement import Measurement

__all__ = ["CloudBilling", "Line", "dynamodb_units", "for_cloud", "lambda_lines", "line",
           "operations_per_transition", "total", "transitions", "unum_lines"]


@dataclass
class Line:
    """One billed item: `group` (lambda, dynamodb, s3, logs, functions, firestore, pubsub, gcs,
    stepfunctions), `item` (what), `quantity` per execution, `unit`, `unit_price` (USD per
    unit) and `usd` per execution."""

    group: str
    item: str
    quantity: float
    unit: str
    unit_price: float
    usd: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def line(group: str, item: str, quantity: float, unit: str, unit_price: float) -> Line:
    return Line(group, item, quantity, unit, unit_price, quantity * unit_price)


@dataclass(frozen=True)
class CloudBilling:
    """How one cloud bills a measured run: `unum_lines(m, prices)` -> (lines per execution,
    names of counters not priced); `function_log_lines(m, prices)` -> the log ingestion of the
    functions' own lines, which any orchestrator pays too (stepfunctions.py); `notes` for the
    report; `price_sections`: the sections of prices.json the report cites;
    `task_lines(m, prices, tasks, execs)` -> the cloud's function lines when a hosted
    orchestrator of the same cloud calls the functions `tasks` times per workflow execution
    (GB-seconds scaled by tasks / execs, the measured executions per session; systems.py);
    `workflows_calls_internal`: a Google Cloud Workflows step calling this cloud's functions
    is an internal step (Cloud Run functions), not an external one (cloud.google.com/workflows/pricing)."""

    unum_lines: Callable[[Measurement, dict[str, Any]], tuple[list[Line], list[str]]]
    function_log_lines: Callable[[Measurement, dict[str, Any]], list[Line]]
    notes: tuple[str, ...] = ()
    price_sections: tuple[str, ...] = ()
    task_lines: Callable[[Measurement, dict[str, Any], float, float], list[Line]] | None = None
    workflows_calls_internal: bool = False


def for_cloud(cloud: str) -> CloudBilling:
    """The billing rules of `cloud` (its TargetSpec's `billing`, unumctl/registry.py).
    ValueError for a target without billing rules (registry.priced)."""
    if cloud not in registry.priced():
        raise ValueError(f"no billing rules for target {cloud!r} (clouds: {', '.join(registry.priced())})")
    return registry.part(cloud, "billing")


def unum_lines(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    """(cost lines per execution, names of counters not priced) for Unum on `m.cloud`."""
    return for_cloud(m.cloud).unum_lines(m, prices)


def lambda_lines(m: Measurement, prices: dict[str, Any], requests: float | None = None,
                 scale: float = 1.0) -> list[Line]:
    """Lambda requests and GB-seconds per execution of the measured function executions (AWS
    prices, whatever cloud `m` ran on). `requests` overrides the request count and `scale`
    multiplies the GB-seconds (stepfunctions.py: Task invocations of an equivalent state
    machine)."""
    a = prices["aws"]
    n = m.sessions
    inc = a["lambda_billing_increment_ms"] or 1
    gb_s = sum(math.ceil(ms / inc) * inc / 1000 * m.memory_mb[f] / 1024 for f, ms in m.executions) / n
    return [line("lambda", "requests", len(m.executions) / n if requests is None else requests,
                  "request", a["lambda_request_per_million"] / 1e6),
            line("lambda", f"duration (billed per {inc:g} ms, memory from the manifest)", gb_s * scale,
                  "GB-second", a["lambda_gb_second"])]


def dynamodb_units(m: Measurement, op: str, unit_bytes: int) -> float:
    """Request units of `op` ("dynamodb:PutItem") over all sessions: per item
    max(1, ceil(bytes / unit_bytes)), from `m.item_bytes`; one per item without sizes."""
    sizes = m.item_bytes.get(op + "#bytes")
    if sizes is None:
        return m.operations.get(op + "#items", m.operations.get(op, 0))
    return sum(max(1, math.ceil(b / unit_bytes)) for b in sizes)


def total(lines: list[Line]) -> float:
    """USD per execution of `lines`."""
    return sum(x.usd for x in lines)


def transitions(m: Measurement) -> float:
    """Function executions per session (one transition of the workflow each), the error
    handler's left out."""
    wf = set(m.functions)
    return sum(1 for f, _ in m.executions if not wf or f in wf) / m.sessions


def operations_per_transition(m: Measurement) -> dict[str, float]:
    """Every counted operation per function execution (per transition), by kind."""
    t = len(m.executions) or 1
    return {k: round(v / t, 3) for k, v in sorted(m.operations.items()) if "#" not in k and not k.endswith("_bytes")}
