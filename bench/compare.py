"""Compare a `make bench` result with the committed baseline: the regression guard.

    python bench/compare.py [RESULT] [--baseline bench/baseline.json] [--tolerance 0.5]

RESULT (default bench/results/latest.json) and the baseline are bench/run_all.py's JSON.
Every metric is lower-is-better (a time over the floor of a chain transition measured in
the same run, or a datastore operation count: run_all.metrics). Prints one line per metric
of the baseline: baseline, now, now / baseline, and `REGRESSION` when now exceeds baseline
x (1 + tolerance); a metric missing from RESULT is `MISSING`. Also prints both runs' load
average, since the timed ratios move with the machine's load.

The default tolerance, 0.5 (50 %), is what the timed ratios vary by between runs on the
shared 2-core machine the baseline was taken on at loads 2-8; counts do not vary, so any
increase of a count past it is a real one (pass a smaller --tolerance to see smaller ones).

Exit status: 0 when no metric regressed or is missing, 1 otherwise, 2 for an unreadable
file. Not part of `make test` (timings are never asserted in tests): run it by hand after
`make bench`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BASELINE = HERE / "baseline.json"
RESULT = HERE / "results" / "latest.json"
TOLERANCE = 0.5


def _load(path: Path) -> dict[str, Any]:
    """bench/run_all.py's JSON at `path`; ValueError (one line) when unreadable or not one."""
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: cannot read a bench result ({exc}); write one with: make bench") from None
    if not isinstance(data, dict) or not isinstance(data.get("metrics"), dict):
        raise ValueError(f"{path}: no \"metrics\" object: not bench/run_all.py's JSON")
    return data


def compare(baseline: dict[str, Any], result: dict[str, Any], tolerance: float) -> tuple[list[str], int]:
    """(the lines to print, how many metrics regressed or are missing) of `result` against
    `baseline` (both run_all.py's JSON) at `tolerance` (0.5: 50 % above the baseline)."""
    lines = [f"baseline {baseline.get('at', '?')} load {baseline.get('machine', {}).get('loadavg_start')}"
             f" -> {baseline.get('machine', {}).get('loadavg_end')}; now {result.get('at', '?')} load "
             f"{result.get('machine', {}).get('loadavg_start')} -> {result.get('machine', {}).get('loadavg_end')}; "
             f"tolerance {tolerance:.0%}",
             f"{'metric':64} {'baseline':>10} {'now':>10} {'now/base':>9}"]
    bad = 0
    now = result["metrics"]
    for name, base in sorted(baseline["metrics"].items()):
        if name not in now:
            lines.append(f"{name:64} {base:>10g} {'-':>10} {'-':>9}  MISSING")
            bad += 1
            continue
        value = now[name]
        ratio = value / base if base else (1.0 if value == base else float("inf"))
        worse = value > base * (1 + tolerance) if base else value > base
        bad += worse
        lines.append(f"{name:64} {base:>10g} {value:>10g} {ratio:>9.2f}" + ("  REGRESSION" if worse else ""))
    extra = sorted(set(now) - set(baseline["metrics"]))
    if extra:
        lines.append(f"not in the baseline (not compared): {', '.join(extra)}")
    lines.append(f"{bad} regressed or missing of {len(baseline['metrics'])}" if bad
                 else f"no regression in {len(baseline['metrics'])} metrics")
    return lines, bad


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("result", nargs="?", type=Path, default=RESULT, help="bench result (default: %(default)s)")
    ap.add_argument("--baseline", type=Path, default=BASELINE, help="default: %(default)s")
    ap.add_argument("--tolerance", type=float, default=TOLERANCE,
                    help="a metric regresses above baseline x (1 + this) (default: %(default)s)")
    args = ap.parse_args(argv)
    if args.tolerance < 0:
        print(f"compare.py: --tolerance {args.tolerance}: must be >= 0", file=sys.stderr)
        return 2
    try:
        baseline, result = _load(args.baseline), _load(args.result)
    except ValueError as exc:
        print(f"compare.py: {exc}", file=sys.stderr)
        return 2
    lines, bad = compare(baseline, result, args.tolerance)
    print("\n".join(lines))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
