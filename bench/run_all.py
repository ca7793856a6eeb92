"""Run the local benchmarks, print their numbers and write them as JSON (`make bench`).
Nothing is asserted here; bench/compare.py compares the JSON with bench/baseline.json.

    python bench/run_all.py [--out bench/results/latest.json]

1. datastore operations per transition (chain, Map fan-out + fan-in; gc safe/eager);
2. the floor of a chain transition on this machine (SQLite read, create, tombstone and a
   process round trip: bench/floor.py), then the 100-step chain of no-op functions:
   orchestration overhead per transition, beside it;
3. Map + fan-in of no-op functions with 100, 1,000 and 10,000 branches: seconds, cost per
   branch, peak memory of the local target;
4. a 1,000-item Step Functions Map of Pass/Choice/Succeed states (inline, one invocation);
5. shuffle groups at 100, 1,000 and 3,000 keys (bench/shuffle_scale.py).
The cloud benchmarks need their emulators and are run on their own: bench/aws_calls.py,
bench/aws_cost.py, bench/gcp_calls.py, bench/scale_aws.py (see docs).

The JSON (`--out`): {"at" (UTC, ISO 8601), "machine": {"cpus", "python", "platform",
"loadavg_start", "loadavg_end" (1, 5, 15 min, os.getloadavg)}, "metrics": {name: number},
"steps": [{"command", "exit", "output": [each JSON value the step printed]}]}. Every metric
is lower-is-better and machine-relative: a time is divided by the floor of a chain
transition measured in the same run (bench/floor.py), a datastore operation count is a
count (metrics()).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results" / "latest.json"

STEPS = [["datastore_ops.py", "--json"],
         ["floor.py", "--chain", "--steps", "100", "--sessions", "30", "--gc", "safe"],
         ["local_perf.py", "chain", "--steps", "100", "--sessions", "30", "--gc", "eager"],
         ["local_perf.py", "map", "--branches", "100,1000,10000"],
         ["asl_inline_map.py", "--items", "1000", "--sessions", "20", "--json"],
         ["shuffle_scale.py", "--json"]]


def json_values(text: str) -> list[Any]:
    """Every JSON object or array in `text` (one per line, or indented over several lines),
    in order; other text (a step's headings) is skipped."""
    dec, out, i = json.JSONDecoder(), [], 0
    while i < len(text):
        j = min((k for k in (text.find("{", i), text.find("[", i)) if k >= 0), default=-1)
        if j < 0:
            break
        try:
            value, i = dec.raw_decode(text, j)
            out.append(value)
        except json.JSONDecodeError:
            i = j + 1
    return out


def metrics(steps: list[dict[str, Any]]) -> dict[str, float]:
    """The named numbers compare.py checks, from the steps' JSON output (run order of STEPS):
    `<shape>.<operation>_per_transition` (datastore_ops), `chain_safe_over_floor` and
    `chain_eager_over_floor` (overhead per chain transition / the floor), `map_<n>_branch_over_floor`
    (wall ms per branch / the floor), `map_<n>_cpu_branch_over_floor`, `asl_map_1000_session_over_floor`
    (session median / the floor), `shuffle_<construction>_<keys>.ops_per_key`. A metric whose
    step printed nothing is left out (compare.py reports it missing)."""
    out: dict[str, float] = {}
    by = {" ".join(s["command"]): s["output"] for s in steps}
    for report in by.get(" ".join(STEPS[0]), []):
        for shape, row in report.items():
            for op, v in row["per_transition"].items():
                out[f"ops.{shape}.{op}_per_transition"] = v
    floor_rows = by.get(" ".join(STEPS[1]), [])
    floor = next((r["floor_us_per_transition"] for r in floor_rows if "sqlite_read_us" in r), None)
    if not floor:
        return out
    for r in floor_rows:
        if "overhead_over_floor" in r:
            out["chain_safe_over_floor"] = r["overhead_over_floor"]
    for r in by.get(" ".join(STEPS[2]), []):
        if "overhead_ms_per_transition" in r:
            out["chain_eager_over_floor"] = round(r["overhead_ms_per_transition"] * 1000 / floor, 3)
    for r in by.get(" ".join(STEPS[3]), []):
        out[f"map_{r['branches']}_branch_over_floor"] = round(r["ms_per_branch"] * 1000 / floor, 3)
        out[f"map_{r['branches']}_cpu_branch_over_floor"] = round(r["cpu_ms_per_branch"] * 1000 / floor, 3)
    for r in by.get(" ".join(STEPS[4]), []):
        out[f"asl_map_{r['items']}_session_over_floor"] = round(r["session_median_ms"] * 1000 / floor, 3)
    for report in by.get(" ".join(STEPS[5]), []):
        for r in report.get("in_process", []):
            out[f"shuffle.{r['construction']}.{r['keys']}_keys.ops_per_key"] = r["ops_per_key"]
        full = report.get("local_full_text")
        if full and full.get("wall_s"):
            out["shuffle_full_text_over_floor"] = round(full["wall_s"] * 1e6 / floor, 1)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON file to write (default: %(default)s)")
    args = ap.parse_args(argv)
    load0 = [round(x, 2) for x in os.getloadavg()]
    at = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    code, steps = 0, []
    for cmd in STEPS:
        print(f"$ python bench/{' '.join(cmd)}", flush=True)
        proc = subprocess.run([sys.executable, str(HERE / cmd[0]), *cmd[1:]], stdout=subprocess.PIPE, text=True)
        sys.stdout.write(proc.stdout)
        sys.stdout.flush()
        code |= proc.returncode
        steps.append({"command": cmd, "exit": proc.returncode, "output": json_values(proc.stdout)})
    result = {"at": at,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform(),
                          "loadavg_start": load0, "loadavg_end": [round(x, 2) for x in os.getloadavg()]},
              "metrics": metrics(steps), "steps": steps}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out} ({len(result['metrics'])} metrics; compare: python bench/compare.py {args.out})")
    return code


if __name__ == "__main__":
    sys.exit(main())
