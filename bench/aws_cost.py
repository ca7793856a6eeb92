"""Cost per million executions of each example on Unum-on-AWS versus Step Functions
Standard and Express, from the measurements of bench/aws_calls.py, priced by the product's
billing rules (unumctl/cost/billing.py, unumctl/aws/billing.py, stepfunctions.py) from the ONE price table
unumctl/cost/prices.json (the same numbers `unumctl cost APP --cloud aws` prints for one app).

    .venv/bin/python bench/aws_calls.py && .venv/bin/python bench/aws_cost.py

Unum: Lambda requests and GB-seconds (measured handler duration of each execution x the
manifest's memory), DynamoDB request units by item size (unumctl/aws/billing.py), S3
requests by class, CloudWatch Logs ingestion of every line the functions' log streams receive
(with runtime.history full, the history's event lines too). Step Functions Standard: the same
Lambda requests and GB-seconds plus one transition per function execution (a lower bound for
IR apps; `unumctl cost` counts the ASL states of a Step Functions app); Express: one request
plus the measured session duration at 64 MB.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.cost import billing, stepfunctions  # noqa: E402
from unumctl.cost.measurement import Measurement  # noqa: E402
from unumctl.cost.prices import load_prices  # noqa: E402


def main() -> int:
    prices = load_prices()
    path = ROOT / "bench" / "results" / "aws_calls.json"
    if not path.exists():
        print(f"{path} missing: run bench/aws_calls.py first", file=sys.stderr)
        return 2
    data = json.loads(path.read_text())
    width = max([16] + [len(k) for k in data])
    print(f"{'example':{width}} {'Unum $/1M':>11} {'(lambda':>9} {'ddb':>8} {'s3':>7} {'logs)':>7} "
          f"{'SFN Std $/1M':>13} {'SFN Exp $/1M':>13} {'transitions':>12}")
    rows = {}
    for name, r in data.items():
        if "executions" not in r:
            print(f"{name:{width}} (measured before the cost module: run bench/aws_calls.py again)")
            continue
        m = Measurement.from_json(r)
        lines, unpriced = billing.unum_lines(m, prices)
        by = {g: sum(x.usd for x in lines if x.group == g) * 1e6 for g in ("lambda", "dynamodb", "s3", "logs")}
        unum = billing.total(lines) * 1e6
        std, n, _ = stepfunctions.standard(m, prices, None)
        exp = stepfunctions.express(m, prices, None)
        wru = sum(x.quantity for x in lines if x.unit == "WRU")
        index_wru = sum(x.quantity for x in lines if x.item.startswith("UpdateItem"))
        a = prices["aws"]
        rows[name] = {"total": unum, "lambda": by["lambda"], "ddb": by["dynamodb"], "s3": by["s3"],
                      "logs": by["logs"],
                      "history_logs": m.log_bytes_history / m.sessions / 1e9 * a["cloudwatch_logs_ingestion_per_gb"] * 1e6,
                      "wru": wru, "log_bytes": m.log_bytes / m.sessions,
                      "history_bytes": m.log_bytes_history / m.sessions,
                      "index_wru": index_wru, "transitions": billing.transitions(m),
                      "wru_price": a["dynamodb_write_request_unit_per_million"], "history": r.get("history")}
        print(f"{name:{width}} {unum:>11.2f} {by['lambda']:>9.2f} {by['dynamodb']:>8.2f} {by['s3']:>7.2f} "
              f"{by['logs']:>7.2f} {billing.total(std) * 1e6:>13.2f} {billing.total(exp) * 1e6:>13.2f} {n:>12.1f}"
              + (f"  NOT PRICED: {', '.join(unpriced)}" if unpriced else ""))
    history_table(rows)
    print(f"prices: {prices['_path']} ({prices['as_of']})")
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
