"""How Google Cloud bills a measured run of an app (unumctl/cost/billing.py `CloudBilling`;
prices in unumctl/cost/prices.json, section "gcp", with its sources).

- Cloud Functions gen2: one invocation per execution; compute per execution rounded up to
  `functions_billing_increment_ms`, x memory GiB (manifest) and x the tier's default vCPU.
- Firestore reads / writes / deletes as the adapters count them (runtime/gcp/datastore.py), the
  history's writes apart; the documents a session leaves for the TTL policies (its `result`,
  its history, everything with `runtime.gc: none`), billed as deletes ("TTL delete operations
  count towards your document delete costs", cloud.google.com/firestore/docs/ttl); Pub/Sub bytes published (>= pubsub_min_message_bytes per message, the
  entry message included); GCS class A / B operations; Cloud Logging ingestion of the
  history's lines.
- Cloud Scheduler (a ByTime window's timer, unumctl/deploy/windows.py): a job is billed per
  day, not per execution (`cloud_scheduler_job_per_31_days` per 31 days); a job ticking every
  T s runs 31 * 86400 / T times in 31 days, so each tick the measurement sent
  (`Measurement.window_ticks`) is billed that share of the job's price, per object; the free
  jobs of the billing account not applied.
"""

from __future__ import annotations

import math
from typing import Any

from ..cost.billing import CloudBilling, Line, line
from ..cost.measurement import Measurement
from ..cost.prices import PriceTableError

__all__ = ["BILLING", "vcpu_for_memory"]

GCP_PRICED = {"firestore_reads", "firestore_writes", "firestore_deletes", "firestore_ttl_deletes",
              "publishes", "publish_bytes", "gcs_class_a", "gcs_class_b", "history_writes",
              "history_ttl_deletes", "history_log_bytes"}


def vcpu_for_memory(prices: dict[str, Any], memory_mb: int) -> float:
    """Cloud Functions gen2 default vCPU for a memory setting (MB), from the table's
    gcp.functions_vcpu_by_memory_mb ([[max MB, vCPU], ...] ascending). PriceTableError when
    the memory exceeds the last tier."""
    for limit, cpu in prices["gcp"]["functions_vcpu_by_memory_mb"]:
        if memory_mb <= limit:
            return float(cpu)
    raise PriceTableError(f"price table {prices.get('_path')}: gcp.functions_vcpu_by_memory_mb: "
                          f"no tier for {memory_mb} MB (add one)")


def unum_lines(m: Measurement, prices: dict[str, Any]) -> tuple[list[Line], list[str]]:
    """(cost lines per execution, names of counters not priced) of Unum on GCP (rules above)."""
    g = prices["gcp"]
    per = m.per_session
    entry = max(g["pubsub_min_message_bytes"], m.entry_bytes)  # the entry message (published by the caller)
    lines = function_lines(m, prices) + [
        line("firestore", "document reads", per("firestore_reads"), "read", g["firestore_read_per_100k"] / 1e5),
        line("firestore", "document writes", per("firestore_writes"), "write", g["firestore_write_per_100k"] / 1e5),
        line("firestore", "document deletes", per("firestore_deletes"), "delete", g["firestore_delete_per_100k"] / 1e5),
        line("firestore", "TTL deletes (documents left when the session ends)", per("firestore_ttl_deletes"),
             "delete", g["firestore_delete_per_100k"] / 1e5),
        line("firestore", "history writes", per("history_writes"), "write", g["firestore_write_per_100k"] / 1e5),
        line("firestore", "history TTL deletes", per("history_ttl_deletes"), "delete",
             g["firestore_delete_per_100k"] / 1e5),
        line("pubsub", f"bytes published ({per('publishes') + 1:g} messages incl. the entry)",
              (per("publish_bytes") + entry) / 2**40, "TiB", g["pubsub_per_tib"]),
        line("gcs", "class A operations", per("gcs_class_a"), "operation", g["gcs_class_a_per_thousand"] / 1e3),
        line("gcs", "class B operations", per("gcs_class_b"), "operation", g["gcs_class_b_per_thousand"] / 1e3),
        line("logs", "Cloud Logging ingestion (history lines)", per("history_log_bytes") / 2**30, "GiB",
              g["cloud_logging_ingestion_per_gib"]),
    ]
    if m.window_ticks:
        job_31_days = g["cloud_scheduler_job_per_31_days"]
        per_tick = sum(job_31_days * s / (31 * 86400) for _, s in m.window_ticks) / len(m.window_ticks)
        lines.append(line("scheduler", "Cloud Scheduler job, its share per tick (window ticks)",
                          len(m.window_ticks) / m.sessions, "tick", per_tick))
    return lines, sorted(k for k in m.operations if k not in GCP_PRICED)


def function_lines(m: Measurement, prices: dict[str, Any], requests: float | None = None,
                   scale: float = 1.0) -> list[Line]:
    """Cloud Functions gen2 invocations, GiB-seconds and vCPU-seconds per workflow execution of
    the measured executions (rules above). `requests` overrides the invocation count and
    `scale` multiplies the compute (a hosted orchestrator's calls, `task_lines`)."""
    g = prices["gcp"]
    n = m.sessions
    inc = g["functions_billing_increment_ms"] or 1
    secs = [(f, math.ceil(ms / inc) * inc / 1000) for f, ms in m.executions]
    gib_s = sum(s * m.memory_mb[f] / 1024 for f, s in secs) / n
    vcpu_s = sum(s * vcpu_for_memory(prices, m.memory_mb[f]) for f, s in secs) / n
    return [
        line("functions", "invocations", len(m.executions) / n if requests is None else requests, "invocation",
             g["functions_invocation_per_million"] / 1e6),
        line("functions", f"memory (billed per {inc:g} ms, memory from the manifest)", gib_s * scale, "GiB-second",
             g["functions_gib_second"]),
        line("functions", "CPU (the memory tier's default vCPU)", vcpu_s * scale, "vCPU-second",
             g["functions_vcpu_second"]),
    ]


def task_lines(m: Measurement, prices: dict[str, Any], tasks: float, execs: float) -> list[Line]:
    """Cloud Functions lines of `tasks` calls per workflow execution by a hosted orchestrator
    (Cloud Workflows), compute scaled from the `execs` measured executions per session."""
    return function_lines(m, prices, requests=tasks, scale=tasks / execs if execs else 0.0)


BILLING = CloudBilling(
    unum_lines, lambda m, prices: [],  # the functions' own log lines are not measured on gcp
    notes=("Step Functions columns price the same executions with AWS Lambda prices "
           "(the GCP function logs are not measured, so no log ingestion is added there)",),
    price_sections=("aws", "gcp"), task_lines=task_lines,
    workflows_calls_internal=True)  # Cloud Run functions: internal steps of Cloud Workflows
