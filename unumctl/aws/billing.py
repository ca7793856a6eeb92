"""How AWS bills a measured run of an app (unumctl/cost/billing.py `CloudBilling`; prices in
unumctl/cost/prices.json, section "aws", with its sources).

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
- EventBridge Scheduler (a ByTime window's timer, unumctl/deploy/windows.py): one invocation
  per tick the measurement sent (`Measurement.window_ticks`), per object; the monthly free
  invocations not applied.
"""

from __future__ import annotations

from typing import Any

from ..cost.billing import CloudBilling, Line, dynamodb_units, lambda_lines, line
from ..cost.measurement import Measurement

__all__ = ["BILLING"]


def unum_lines(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    """(cost lines per execution, names of counters not priced) of Unum on AWS (rules above)."""
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
            lines.append(line("dynamodb", f"{op.split(':')[1]} ({m.operations[op] / n:g} calls)", units / n,
                               "WRU" if write else "RRU", price / 1e6))
        elif kind in ("s3_put", "s3_get"):
            lines.append(line("s3", op.split(":")[1], m.operations[op] / n, "request",
                               a[f"{kind}_per_thousand"] / 1e3))
        elif kind != "free":
            unpriced.append(op)
    lines.append(line("logs", "CloudWatch Logs ingestion", m.log_bytes / n / 1e9, "GB",
                       a["cloudwatch_logs_ingestion_per_gb"]))
    if m.window_ticks:
        lines.append(line("scheduler", "EventBridge Scheduler invocations (window ticks)", len(m.window_ticks) / n,
                          "invocation", a["eventbridge_scheduler_per_million_invocations"] / 1e6))
    return lines, unpriced


def function_log_lines(m: Measurement, prices: dict[str, Any]) -> list[Line]:
    """CloudWatch Logs ingestion of the functions' own lines (the history's lines are Unum's)."""
    return [line("logs", "CloudWatch Logs ingestion (the functions' lines, not Unum's history)",
                 (m.log_bytes - m.log_bytes_history) / m.sessions / 1e9, "GB",
                 prices["aws"]["cloudwatch_logs_ingestion_per_gb"])]


def task_lines(m: Measurement, prices: dict[str, Any], tasks: float, execs: float) -> list[Line]:
    """Lambda lines of `tasks` Task calls per workflow execution (GB-seconds scaled from the
    `execs` measured executions per session) plus the functions' own log lines: what any
    orchestrator calling the same functions pays (Step Functions, Cloud Workflows)."""
    lines = lambda_lines(m, prices, requests=tasks, scale=tasks / execs if execs else 0.0)
    return lines + function_log_lines(m, prices)


BILLING = CloudBilling(unum_lines, function_log_lines, price_sections=("aws",), task_lines=task_lines)
