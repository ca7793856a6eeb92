"""Billed operations of a measured run (measurement.py) and their price (prices.json), per
execution of the workflow (one session).

Each cost is a `Line`: what is billed, how many per execution, the unit, the unit price and
the dollars per execution. Rules, by the clouds' pricing pages (sources in prices.json):

aws
- Lambda: one request per function execution (retries and the error handler included;
  `lambda:Invoke` itself is not billed: it is the invoked function's request); duration
  rounded up to `lambda_billing_increment_ms` per execution x the function's memory (manifest)
  = GB-seconds.
- DynamoDB on demand: per item written, ceil(bytes / dynamodb_write_unit_bytes) write request
  units (at least 1), per item read (strongly consistent) ceil(bytes / dynamodb_read_unit_bytes)
  read request units (at least 1; a Query rounds its total), twice for transactional calls; by
  operation. Without item sizes (an older measurement), one unit per item. A lower bound
  where the stored item is unknown before the call (lambda_worker.py `_write_sizes`):
  UpdateItem / DeleteItem sized by key + values, a replacing PutItem by the new item only
  (DynamoDB bills the larger of old and new).
- S3: requests by class as `aws.operations` maps them (s3_put / s3_get / free).
- CloudWatch Logs: ingestion of every line the functions' log streams receive.
gcp
- Cloud Functions gen2: one invocation per execution; compute per execution rounded up to
  `functions_billing_increment_ms`, x memory GiB (manifest) and x the tier's default vCPU.
- Firestore reads / writes / deletes as the adapters count them (runtime/gcp/datastore.py), the
  history's writes apart; Pub/Sub bytes published (>= pubsub_min_message_bytes per message, the
  entry message included); GCS class A / B operations; Cloud Logging ingestion of the
  history's lines.
Counters the table does not price are returned apart (`unpriced`), never dropped.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from .measurement import Measurement
from .prices import vcpu_for_memory


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


def _line(group: str, item: str, quantity: float, unit: str, unit_price: float) -> Line:
    return Line(group, item, quantity, unit, unit_price, quantity * unit_price)


def unum_lines(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    """(cost lines per execution, names of counters not priced) for Unum on `m.cloud`."""
    return (_aws if m.cloud == "aws" else _gcp)(m, prices)


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
    return [_line("lambda", "requests", len(m.executions) / n if requests is None else requests,
                  "request", a["lambda_request_per_million"] / 1e6),
            _line("lambda", f"duration (billed per {inc:g} ms, memory from the manifest)", gb_s * scale,
                  "GB-second", a["lambda_gb_second"])]


def dynamodb_units(m: Measurement, op: str, unit_bytes: int) -> float:
    """Request units of `op` ("dynamodb:PutItem") over all sessions: per item
    max(1, ceil(bytes / unit_bytes)), from `m.item_bytes`; one per item without sizes."""
    sizes = m.item_bytes.get(op + "#bytes")
    if sizes is None:
        return m.operations.get(op + "#items", m.operations.get(op, 0))
    return sum(max(1, math.ceil(b / unit_bytes)) for b in sizes)


def _aws(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    a = prices["aws"]
    n = m.sessions
    kinds = a["operations"]
    lines = lambda_lines(m, prices)
    unpriced = []
    for op in sorted(k for k in m.operations if "#" not in k):
        kind = kinds.get(op)
        if kind is None:
            unpriced.append(op)
            continue
        if kind in ("wru", "wru_transactional", "rru", "rru_transactional"):
            write = kind.startswith("wru")
            units = dynamodb_units(m, op, a["dynamodb_write_unit_bytes" if write else "dynamodb_read_unit_bytes"])
            units *= 2 if kind.endswith("transactional") else 1
            price = a["dynamodb_write_request_unit_per_million" if write else "dynamodb_read_request_unit_per_million"]
            lines.append(_line("dynamodb", f"{op.split(':')[1]} ({m.operations[op] / n:g} calls)", units / n,
                               "WRU" if write else "RRU", price / 1e6))
        elif kind in ("s3_put", "s3_get"):
            lines.append(_line("s3", op.split(":")[1], m.operations[op] / n, "request",
                               a[f"{kind}_per_thousand"] / 1e3))
        elif kind != "free":
            unpriced.append(op)
    lines.append(_line("logs", "CloudWatch Logs ingestion", m.log_bytes / n / 1e9, "GB",
                       a["cloudwatch_logs_ingestion_per_gb"]))
    return lines, unpriced


GCP_PRICED = {"firestore_reads", "firestore_writes", "firestore_deletes", "publishes", "publish_bytes",
              "gcs_class_a", "gcs_class_b", "history_writes", "history_log_bytes"}


def _gcp(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    g = prices["gcp"]
    n = m.sessions
    inc = g["functions_billing_increment_ms"] or 1
    secs = [(f, math.ceil(ms / inc) * inc / 1000) for f, ms in m.executions]
    gib_s = sum(s * m.memory_mb[f] / 1024 for f, s in secs) / n
    vcpu_s = sum(s * vcpu_for_memory(prices, m.memory_mb[f]) for f, s in secs) / n
    per = m.per_session
    entry = max(g["pubsub_min_message_bytes"], m.entry_bytes)  # the entry message (published by the caller)
    lines = [
        _line("functions", "invocations", len(m.executions) / n, "invocation", g["functions_invocation_per_million"] / 1e6),
        _line("functions", f"memory (billed per {inc:g} ms, memory from the manifest)", gib_s, "GiB-second",
              g["functions_gib_second"]),
        _line("functions", "CPU (the memory tier's default vCPU)", vcpu_s, "vCPU-second", g["functions_vcpu_second"]),
        _line("firestore", "document reads", per("firestore_reads"), "read", g["firestore_read_per_100k"] / 1e5),
        _line("firestore", "document writes", per("firestore_writes"), "write", g["firestore_write_per_100k"] / 1e5),
        _line("firestore", "document deletes", per("firestore_deletes"), "delete", g["firestore_delete_per_100k"] / 1e5),
        _line("firestore", "history writes", per("history_writes"), "write", g["firestore_write_per_100k"] / 1e5),
        _line("pubsub", f"bytes published ({per('publishes') + 1:g} messages incl. the entry)",
              (per("publish_bytes") + entry) / 2**40, "TiB", g["pubsub_per_tib"]),
        _line("gcs", "class A operations", per("gcs_class_a"), "operation", g["gcs_class_a_per_thousand"] / 1e3),
        _line("gcs", "class B operations", per("gcs_class_b"), "operation", g["gcs_class_b_per_thousand"] / 1e3),
        _line("logs", "Cloud Logging ingestion (history lines)", per("history_log_bytes") / 2**30, "GiB",
              g["cloud_logging_ingestion_per_gib"]),
    ]
    return lines, sorted(k for k in m.operations if k not in GCP_PRICED)


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
