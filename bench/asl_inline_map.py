"""A Step Functions Map whose iterator holds only Pass/Choice/Succeed states, on the local
target: it runs inline in one function (docs/stepfunctions.md "Map and Parallel"), so a
1,000-item Map is one invocation. Issue 9 asks for under 50 ms on local.

    python bench/asl_inline_map.py [--items 1000] [--sessions 10] [--json]

Prints the median and best end-to-end session latency (warm: one session first starts the
worker; from start_session until the result item exists, polled every 0.5 ms), the wall
and CPU time of the inline evaluation alone (runtime.asl.machine in-process, median of 10),
the invocation count per session and the load average (the numbers are only meaningful on
an idle machine). Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from runtime.asl.machine import Machine  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402

MACHINE = {"StartAt": "Each", "States": {
    "Each": {"Type": "Map", "ItemsPath": "$.items",
             "ItemProcessor": {"StartAt": "Shape", "States": {
                 "Shape": {"Type": "Pass", "Parameters": {"n.$": "$.n", "tag": "x"}, "Next": "Big?"},
                 "Big?": {"Type": "Choice", "Choices": [
                     {"Variable": "$.n", "NumericGreaterThan": 500, "Next": "Big"}], "Default": "Small"},
                 "Big": {"Type": "Pass", "Result": "big", "ResultPath": "$.size", "End": True},
                 "Small": {"Type": "Pass", "Result": "small", "ResultPath": "$.size", "Next": "Ok"},
                 "Ok": {"Type": "Succeed"}}},
             "ResultPath": "$.out", "OutputPath": "$.out", "End": True}}}


def make(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "statemachine.json").write_text(json.dumps(MACHINE))
    (root / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": "inline-map", "workflow": {"stepfunctions": "statemachine.json"},
        "functions": {}}))
    return root


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=1000)
    ap.add_argument("--sessions", type=int, default=10)
    ap.add_argument("--json", action="store_true", help="also print the numbers as one JSON line")
    args = ap.parse_args()
    value = {"items": [{"n": i} for i in range(args.items)]}
    expected = [{"n": i, "tag": "x", "size": "big" if i > 500 else "small"} for i in range(args.items)]

    m = Machine(MACHINE, {}, time.time, time.sleep)
    inproc, cpu = [], []
    for _ in range(10):
        t0, c0 = time.perf_counter(), time.thread_time()
        out = m.run_inline("", "Each", value, lambda r, e: None)
        inproc.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    assert out == expected

    with tempfile.TemporaryDirectory() as tmp:
        app = load_app(make(Path(tmp) / "app"))
        with LocalRunner(app, state=Path(tmp) / "state", quiet=True) as r:
            r.run(value, timeout=60)  # warm the worker
            r.platform.wait_idle()
            before = r.platform.stats["deliveries"]
            lat = []
            for _ in range(args.sessions):
                t0 = time.perf_counter()
                sid = r.start(value)
                while (item := r.platform.result(sid)) is None:  # tight poll: no back-off steps
                    time.sleep(0.0005)
                lat.append(time.perf_counter() - t0)
                assert item["status"] == "SUCCEEDED" and item["v"] == expected, item
            r.platform.wait_idle()
            per = (r.platform.stats["deliveries"] - before) / args.sessions
    print(f"{args.items}-item Pass/Choice/Succeed Map on local: session median {statistics.median(lat) * 1000:.1f} ms, "
          f"best {min(lat) * 1000:.1f} ms ({args.sessions} sessions, {per:.0f} invocation(s) per session); "
          f"inline evaluation alone median {statistics.median(inproc) * 1000:.1f} ms wall, "
          f"{statistics.median(cpu) * 1000:.1f} ms CPU; load average {os.getloadavg()[0]:.1f}")
    if args.json:
        print(json.dumps({"items": args.items, "sessions": args.sessions,
                          "session_median_ms": round(statistics.median(lat) * 1000, 2),
                          "session_best_ms": round(min(lat) * 1000, 2), "invocations_per_session": per,
                          "inline_median_ms": round(statistics.median(inproc) * 1000, 2),
                          "inline_cpu_median_ms": round(statistics.median(cpu) * 1000, 2),
                          "loadavg": [round(x, 2) for x in os.getloadavg()]}))


if __name__ == "__main__":
    main()
