"""Cost per million executions of each example on Unum-on-AWS versus Step Functions Standard,
from the call counts of bench/aws_calls.py and the ONE price table bench/prices.json.

    .venv/bin/python bench/aws_calls.py && .venv/bin/python bench/aws_cost.py

Unum: Lambda requests (every function execution, error handler included) and GB-seconds
(measured wall time of each execution here x configured memory; local timings, so treat
GB-s as indicative), DynamoDB on-demand write request units (1 per PutItem/UpdateItem/
DeleteItem and per BatchWriteItem item, 4 per TransactWriteItems: set_add writes 2 items
transactionally at 2 units each; items here are < 1 KB) and read request units (1 per
strongly consistent item read in BatchGetItem, per GetItem and per Query, items < 4 KB), S3 requests
(ListObjectsV2 at session end is a PUT/LIST-class request). Lambda Invoke calls are not
billed separately (they are the next function's request).
CloudWatch Logs: ingestion of every line the functions' log streams receive (Lambda's START /
END / REPORT lines, the functions' output, and with runtime.history full the history's event
lines), bytes as PutLogEvents counts them (message + 26 per event), at the ingestion price;
log storage (per GB-month, after compression) is left out. The history's session index is
part of the DynamoDB writes (one UpdateItem at the start and one at the end of a session).
Step Functions Standard: the same Lambda requests and GB-seconds for the user functions,
plus state transitions = one per function execution (a Task state entered) + 1 (the end
state); Map/Parallel state entries would add more, so this is a lower bound for SF.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    prices = json.loads((ROOT / "bench" / "prices.json").read_text())["aws"]
    path = ROOT / "bench" / "results" / "aws_calls.json"
    if not path.exists():
        print(f"{path} missing: run bench/aws_calls.py first", file=sys.stderr)
        return 2
    data = json.loads(path.read_text())
    width = max([16] + [len(k) for k in data])
    print(f"{'example':{width}} {'Unum $/1M':>11} {'(lambda':>9} {'ddb':>8} {'s3':>7} {'logs)':>7} "
          f"{'SFN Std $/1M':>13} {'SFN transitions':>16}")
    rows = {}
    for name, r in data.items():
        n = r["sessions"]
        c = r["calls"]
        per = lambda op: c.get(op, 0) / n  # noqa: E731
        wru = (per("dynamodb:PutItem") + per("dynamodb:UpdateItem") + per("dynamodb:DeleteItem")
               + per("dynamodb:BatchWriteItem#items") + 4 * per("dynamodb:TransactWriteItems"))
        rru = per("dynamodb:BatchGetItem#items") + per("dynamodb:GetItem") + per("dynamodb:Query")
        requests = r["transitions_per_session"]
        gb_s = r["lambda_gb_seconds"] / n
        lam = requests * prices["lambda_request_per_million"] / 1e6 + gb_s * prices["lambda_gb_second"]
        ddb = (wru * prices["dynamodb_write_request_unit_per_million"]
               + rru * prices["dynamodb_read_request_unit_per_million"]) / 1e6
        s3 = (per("s3:ListObjectsV2") + per("s3:PutObject") + per("s3:DeleteObjects")) * prices["s3_put_per_thousand"] / 1e3 \
            + per("s3:GetObject") * prices["s3_get_per_thousand"] / 1e3
        logs = r.get("log_bytes", 0) / n / 1e9 * prices["cloudwatch_logs_ingestion_per_gb"]
        hist_logs = r.get("log_bytes_history", 0) / n / 1e9 * prices["cloudwatch_logs_ingestion_per_gb"]
        unum = (lam + ddb + s3 + logs) * 1e6
        transitions = requests + 1
        sfn = (lam + transitions * prices["stepfunctions_standard_per_thousand_transitions"] / 1e3 + logs) * 1e6
        rows[name] = {"total": unum, "lambda": lam * 1e6, "ddb": ddb * 1e6, "s3": s3 * 1e6, "logs": logs * 1e6,
                      "history_logs": hist_logs * 1e6, "wru": wru, "log_bytes": r.get("log_bytes", 0) / n,
                      "history_bytes": r.get("log_bytes_history", 0) / n,
                      "index_wru": per("dynamodb:UpdateItem"), "transitions": requests,
                      "wru_price": prices["dynamodb_write_request_unit_per_million"],
                      "history": r.get("history")}
        print(f"{name:{width}} {unum:>11.2f} {lam * 1e6:>9.2f} {ddb * 1e6:>8.2f} {s3 * 1e6:>7.2f} {logs * 1e6:>7.2f} "
              f"{sfn:>13.2f} {transitions:>16.1f}")
    history_table(rows)
    print(f"prices: bench/prices.json ({json.loads((ROOT / 'bench' / 'prices.json').read_text())['as_of']})")
    return 0


def history_table(rows: dict[str, dict]) -> None:
    """The cost of runtime.history per million executions (sessions) for each example run at
    several levels (bench/aws_calls.py --history LEVEL), attributed directly: the ingestion
    of the history's event lines plus the session index's writes (UpdateItem, which only the
    index uses: 1 WRU each, items < 1 KB). The difference of whole totals to `off` is shown
    too, but it mixes in run-to-run variation of the protocol's own calls (fan-in races,
    redeliveries); Lambda GB-s are left out (local timings, too noisy for a few ms)."""
    levels: dict[str, dict[str, dict]] = {}
    for name, r in rows.items():
        base = name.split(" (history ")[0]
        levels.setdefault(base, {})[r.get("history") or "full"] = r
    levels = {k: v for k, v in levels.items() if "off" in v and len(v) > 1}
    if not levels:
        return
    print("\nruntime.history, $ per million executions (sessions):")
    print(f"{'example':16} {'history':>12} {'trans/sess':>10} {'log B/sess':>11} {'events B':>9} "
          f"{'index WRU':>9} {'history $':>10} {'$/1M trans':>10} {'logs+ddb $':>11} {'vs off $':>9}")
    for base, by in levels.items():
        off = by["off"]["logs"] + by["off"]["ddb"]
        for level in ("full", "session-only", "off"):
            if level not in by:
                continue
            r = by[level]
            both = r["logs"] + r["ddb"]
            hist = r["history_logs"] + r["index_wru"] * r["wru_price"]
            print(f"{base:16} {level:>12} {r['transitions']:>10.1f} {r['log_bytes']:>11.0f} "
                  f"{r['history_bytes']:>9.0f} {r['index_wru']:>9.1f} {hist:>10.2f} "
                  f"{hist / r['transitions']:>10.3f} {both:>11.2f} {both - off:>+9.2f}")


if __name__ == "__main__":
    sys.exit(main())
