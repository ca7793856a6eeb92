"""Count Firestore reads/writes/deletes, Pub/Sub publishes and GCS operations per
transition for every example on the GCP adapter (emulators + functions-framework), and
price one million executions with unumctl/cost/prices.json, through the harness and the
billing rules of `unumctl cost` (unumctl/cost/measure.py, unumctl/cost/billing.py).

    .venv/bin/python bench/gcp_calls.py [--sessions N] [--json out.json]
    .venv/bin/python bench/gcp_calls.py --history full,session-only,off [--example wordcount]

With --history, only `--example` runs, once per runtime.history level (a copy of the app
with `runtime.history` set), and the report adds the history's own cost: its Firestore
writes (runtime/gcp/history.py `usage["writes"]`, documents in `<collection>-history`) and
the bytes of its structured log lines (`usage["log_bytes"]`, priced as Cloud Logging
ingestion), per million workflow sessions and per million function executions.

Documents a session leaves for the TTL policies (`result`, the history, everything with
`runtime.gc: none`) are counted after the sessions (`firestore_ttl_deletes`,
`history_ttl_deletes`, column ttl/t) and priced as deletes, as Firestore bills them.

Counting (unumctl/cost/measure.py): each function runs with UNUM_USAGE_LOG=1, so runtime/gcp/entry.py prints one JSON
line per execution with the operations its adapters issued (FirestoreDatastore.usage,
PubSubInvoker.usage, GcsBlobStore.usage) and the execution's duration. A transition is one
function execution. Cost per execution of the workflow:
  invocations x functions_invocation_per_million / 1e6
  + Firestore reads/writes/deletes x their per-100k prices
  + published bytes (billed >= pubsub_min_message_bytes per message) x pubsub_per_tib
  + compute: billed duration (rounded up to functions_billing_increment_ms) x (memory GiB x
    gib-second price + vCPU share x vCPU-second price), gen2 CPU shares per memory tier
    (functions_vcpu_by_memory_mb in the price table).
Durations measured on the emulators are not cloud durations; the compute part is reported
separately so it can be replaced by measured cloud numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.cost import billing  # noqa: E402
from unumctl.cost.measurement import Measurement  # noqa: E402
from unumctl.cost.prices import load_prices  # noqa: E402
from unumctl.gcp.emulate.emulators import Emulators  # noqa: E402
from unumctl.gcp.measure import measure_gcp  # noqa: E402


def measure(example: Path, emu: Emulators, workdir: Path, sessions: int) -> dict:
    """The shared harness's measurement (unumctl/cost/measure.py, behind `unumctl cost
    --cloud gcp`) of `example` on the running emulators, plus per-session counters."""
    value = json.loads((example / "input.json").read_text())
    m = Measurement.from_json(measure_gcp(example, value, sessions, emulators=emu))
    per_session = {k: v / sessions for k, v in m.operations.items()}
    per_session["executions"] = len(m.executions) / sessions
    return {"measurement": m, "per_session": per_session}


def cost(m: dict, prices: dict) -> dict:
    """$ per million sessions by the product's billing rules (unumctl/cost/billing.py): the
    operations (invocations, Firestore, Pub/Sub, GCS, history) and the compute apart."""
    lines, _ = billing.unum_lines(m["measurement"], prices)
    compute = sum(x.usd for x in lines if x.unit in ("GiB-second", "vCPU-second"))
    ops = billing.total(lines) - compute
    return {"ops_per_million": round(ops * 1e6, 2), "compute_per_million": round(compute * 1e6, 2),
            "total_per_million": round((ops + compute) * 1e6, 2)}


def history_cost(s: dict, prices: dict) -> float:
    """$ per session of the execution history: Firestore writes of `<collection>-history`
    plus Cloud Logging ingestion of its structured lines (unumctl/cost/prices.json)."""
    g = prices["gcp"]
    return (s.get("history_writes", 0) * g["firestore_write_per_100k"] / 1e5
            + s.get("history_ttl_deletes", 0) * g["firestore_delete_per_100k"] / 1e5
            + s.get("history_log_bytes", 0) * g["cloud_logging_ingestion_per_gib"] / 2**30)


def with_history(example: Path, level: str, dest: Path) -> Path:
    """A copy of `example` whose manifest sets runtime.history = `level`."""
    import shutil

    import yaml
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns(".unum", "__pycache__"))
    manifest = yaml.safe_load((dest / "unumctl.yaml").read_text())
    manifest.setdefault("runtime", {})["history"] = level
    (dest / "unumctl.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return dest


def history_report(example: Path, levels: list[str], sessions: int, prices: dict) -> dict:
    """Measure `example` once per history level; print and return the report."""
    report = {}
    with tempfile.TemporaryDirectory() as tmp, Emulators(Path(tmp) / "emu") as emu:
        import os
        os.environ.update(emu.env)
        for level in levels:
            app_dir = with_history(example, level, Path(tmp) / f"app-{level}")
            m = measure(app_dir, emu, Path(tmp) / f"run-{level}", sessions)
            s = m["per_session"]
            n = s["executions"]
            h = history_cost(s, prices)
            report[level] = {"transitions": n, "history_writes": s.get("history_writes", 0),
                             "history_log_bytes": s.get("history_log_bytes", 0),
                             "history_per_million_sessions": round(h * 1e6, 2),
                             "history_per_million_executions": round(h / n * 1e6, 2),
                             "cost_usd": cost(m, prices)}
    print(f"{example.name}: runtime.history cost on gcp ({sessions} sessions per level)")
    print(f"{'level':13} {'trans':>5} {'h.writes':>8} {'h.log B':>8} {'$hist/M sess':>12} "
          f"{'$hist/M exec':>12} {'$ops/M sess':>11} {'$total/M sess':>13}")
    for level, r in report.items():
        c = r["cost_usd"]
        print(f"{level:13} {r['transitions']:5.0f} {r['history_writes']:8.1f} {r['history_log_bytes']:8.0f} "
              f"{r['history_per_million_sessions']:12.2f} {r['history_per_million_executions']:12.2f} "
              f"{c['ops_per_million']:11.2f} {c['total_per_million']:13.2f}")
    print(f"prices: {prices['_path']} ({prices['as_of']}; {prices['gcp']['_sources']})")
    return report


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--history", help="comma-separated runtime.history levels to compare "
                    "(full,session-only,off) on --example")
    ap.add_argument("--example", default="wordcount")
    args = ap.parse_args()
    prices = load_prices()
    if args.history:
        levels = [x.strip() for x in args.history.split(",") if x.strip()]
        bad = [x for x in levels if x not in ("full", "session-only", "off")]
        if bad:
            ap.error(f"--history: {bad[0]!r} is not one of full, session-only, off")
        example = ROOT / "examples" / args.example
        if not (example / "unumctl.yaml").exists():
            ap.error(f"--example: {example} has no unumctl.yaml")
        report = history_report(example, levels, args.sessions, prices)
        if args.json:
            args.json.write_text(json.dumps(report, indent=2))
        return 0
    report = {}
    with tempfile.TemporaryDirectory() as tmp, Emulators(Path(tmp) / "emu") as emu:
        import os
        os.environ.update(emu.env)
        for ex in sorted(p for p in (ROOT / "examples").iterdir() if (p / "unumctl.yaml").exists()):
            m = measure(ex, emu, Path(tmp) / ex.name, args.sessions)
            s = m["per_session"]
            n = s["executions"]
            report[ex.name] = {"transitions": n, **{k: round(v, 2) for k, v in s.items()},
                               "per_transition": {k: round(s.get(k, 0) / n, 2) for k in
                                                  ("firestore_reads", "firestore_writes",
                                                   "firestore_deletes", "firestore_ttl_deletes",
                                                   "publishes")},
                               "cost_usd": cost(m, prices)}
    print(f"{'example':16} {'trans':>5} {'reads':>6} {'writes':>6} {'dels':>5} {'pubs':>5} "
          f"{'r/t':>5} {'w/t':>5} {'d/t':>5} {'ttl/t':>5} {'p/t':>5} {'$ops/M':>8} {'$cpu/M':>8} {'$/M':>8}")
    for name, r in report.items():
        pt, c = r["per_transition"], r["cost_usd"]
        print(f"{name:16} {r['transitions']:5.0f} {r.get('firestore_reads', 0):6.1f} "
              f"{r.get('firestore_writes', 0):6.1f} {r.get('firestore_deletes', 0):5.1f} "
              f"{r.get('publishes', 0):5.1f} {pt['firestore_reads']:5.2f} {pt['firestore_writes']:5.2f} "
              f"{pt['firestore_deletes']:5.2f} {pt['firestore_ttl_deletes']:5.2f} {pt['publishes']:5.2f} "
              f"{c['ops_per_million']:8.2f} "
              f"{c['compute_per_million']:8.2f} {c['total_per_million']:8.2f}")
    print(f"prices: {prices['_path']} ({prices['as_of']})")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
