"""Count DynamoDB, S3 and Lambda API calls per transition on the AWS adapter.

Runs every example (or those named) N sessions each on the AWS path used by the tests, through
the measured run `unumctl cost` uses (unumctl/aws/measure.py `measure_aws`): DynamoDB and S3
from moto_server (on a free 127.0.0.1 port), Lambda Invoke served by
unumctl.aws.emulate.local_lambda running the built aws archives. Calls are counted inside each
emulated Lambda execution environment by botocore hooks (unumctl/aws/emulate/lambda_worker.py,
enabled by UNUM_COUNT_CALLS), with the size of each DynamoDB item written or read. A
transition is one function execution (Lambda request) of the workflow. Warm-up sessions run
first and are not counted (steady state, `measure_aws`; docs/cost.md).

    .venv/bin/python bench/aws_calls.py [--sessions 3] [--history full|session-only|off] [example ...]

Also records what the functions' log streams would ingest into CloudWatch Logs (the emulator
sends every line to moto's CloudWatch Logs as Lambda does; bytes counted as PutLogEvents
counts them, message + 26 per event: unumctl/aws/emulate/local_logs.py), all lines and the
history's event lines apart. `--history LEVEL` runs a copy of each example with
`runtime.history: LEVEL` (default: as the example's manifest says, i.e. full) and stores it
under "<example> (history LEVEL)".

Writes (merges into) bench/results/aws_calls.json (read by bench/aws_cost.py) and prints a
table.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.aws.emulate.moto_local import find_moto_server  # noqa: E402
from unumctl_testing.apps import example_dirs, expected_of, matches_expected  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*")
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--history", choices=("full", "session-only", "off"), default=None,
                    help="run with this runtime.history (stored as '<example> (history LEVEL)')")
    args = ap.parse_args()
    if find_moto_server() is None:
        print("moto_server not installed (pip install 'moto[server]')", file=sys.stderr)
        return 2
    results = {(ex.name if args.history is None else f"{ex.name} (history {args.history})"):
               run(ex, None, args.sessions, args.history) for ex in example_dirs()
               if not args.examples or ex.name in args.examples}
    out = ROOT / "bench" / "results" / "aws_calls.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    merged = json.loads(out.read_text()) if out.exists() else {}
    merged.update(results)
    out.write_text(json.dumps(merged, indent=2, sort_keys=True))
    print(f"{'example':16} {'trans/sess':>10}  calls per transition by operation")
    for name, r in results.items():
        per = ", ".join(f"{op} {n / r['transitions']:.2f}" for op, n in sorted(r["calls"].items())
                        if "#" not in op)
        print(f"{name:16} {r['transitions_per_session']:>10.1f}  {per}")
        print(f"{'':16} {'':>10}  log bytes per session {r['log_bytes'] / r['sessions']:.0f} "
              f"(history event lines {r['log_bytes_history'] / r['sessions']:.0f})")
    print(f"wrote {out}")
    return 0


def run(example: Path, moto_url: str | None, sessions: int, history: str | None = None) -> dict:
    """Measure `example` (a copy with runtime.history = `history` when given) with the shared
    measured run (unumctl/cost/measure.py, also behind `unumctl cost`): the measurement plus the
    per-transition fields this report prints. `moto_url` is unused (the harness starts its own
    moto_server)."""
    from unumctl.aws.measure import measure_aws

    with tempfile.TemporaryDirectory() as tmp:
        app_dir = example
        if history is not None:  # a copy of the example with runtime.history: LEVEL
            import yaml

            from unumctl_testing.apps import copy_example
            app_dir = copy_example(example, Path(tmp) / example.name)
            mpath = app_dir / "unumctl.yaml"
            manifest = yaml.safe_load(mpath.read_text())
            manifest.setdefault("runtime", {})["history"] = history
            mpath.write_text(yaml.safe_dump(manifest, sort_keys=False))
        expected = expected_of(example)

        def check(item: dict) -> None:
            assert matches_expected(item["v"], expected), item

        m = measure_aws(app_dir, json.loads((example / "input.json").read_text()), sessions, check=check)
    from unumctl.pipeline import load as load_app
    transitions = len(m["executions"])
    return {**m, "transitions": transitions, "transitions_per_session": transitions / sessions,
            "calls": m["operations"], "history": history or load_app(example).manifest.runtime.history}


if __name__ == "__main__":
    sys.exit(main())
