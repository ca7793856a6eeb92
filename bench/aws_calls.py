"""Count DynamoDB, S3 and Lambda API calls per transition on the AWS adapter.

Runs every example (or those named) N sessions each on the AWS path used by the tests:
DynamoDB and S3 from moto_server (started here on a free 127.0.0.1 port), Lambda Invoke
served by unumctl.aws.local_lambda running the built aws archives. Calls are counted inside
each emulated Lambda execution environment by a botocore `before-call` event hook
(unumctl/aws/lambda_worker.py, enabled by UNUM_COUNT_CALLS). A transition is one function
execution (Lambda request) of the workflow.

    .venv/bin/python bench/aws_calls.py [--sessions 3] [example ...]

Writes bench/results/aws_calls.json (read by bench/aws_cost.py) and prints a table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.aws.conftest import aws_env, find_moto_server, moto_server  # noqa: E402
from tests.helpers import example_dirs, expected_of, matches_expected  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("examples", nargs="*")
    ap.add_argument("--sessions", type=int, default=3)
    args = ap.parse_args()
    if find_moto_server() is None:
        print("moto_server not installed (pip install 'moto[server]')", file=sys.stderr)
        return 2
    with moto_server() as url:
        os.environ.update(aws_env(url))
        results = {ex.name: run(ex, url, args.sessions) for ex in example_dirs()
                   if not args.examples or ex.name in args.examples}
    out = ROOT / "bench" / "results" / "aws_calls.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2, sort_keys=True))
    print(f"{'example':16} {'trans/sess':>10}  calls per transition by operation")
    for name, r in results.items():
        per = ", ".join(f"{op} {n / r['transitions']:.2f}" for op, n in sorted(r["calls"].items())
                        if "#" not in op)
        print(f"{name:16} {r['transitions_per_session']:>10.1f}  {per}")
    print(f"wrote {out}")
    return 0


def run(example: Path, moto_url: str, sessions: int) -> dict:
    from runtime.aws.datastore import DynamoDBDatastore
    from unumctl.aws.local_lambda import LocalLambda
    from unumctl.aws.model import build_deployment
    from unumctl.aws.target import create_datastore_for_tests, local_specs
    from unumctl.manifest import load_app

    import boto3

    app = load_app(example)
    dep = build_deployment(app)
    table = bucket = f"unum-bench-{uuid.uuid4().hex[:8]}"
    create_datastore_for_tests(table, bucket)
    value = json.loads((example / "input.json").read_text())
    with tempfile.TemporaryDirectory() as tmp:
        counts_dir = Path(tmp) / "counts"
        counts_dir.mkdir()
        env = {**aws_env(moto_url), "UNUM_COUNT_CALLS": str(counts_dir)}
        specs = local_specs(dep, table, bucket, Path(tmp) / "bundles")
        ds = DynamoDBDatastore(table)
        with LocalLambda(specs, env) as emu:
            lam = boto3.client("lambda", endpoint_url=emu.url)
            for _ in range(sessions):  # one at a time: per-session numbers are exact
                sid = str(uuid.uuid4())
                lam.invoke(FunctionName=dep.entry, InvocationType="Event",
                           Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": value}}))
                deadline = time.monotonic() + 120
                while (item := ds.get(sid, "result")) is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert item and item["status"] == "SUCCEEDED" and matches_expected(item["v"], expected_of(example)), item
                emu.wait_idle(60)
            stats = dict(emu.stats)
        calls: Counter[str] = Counter()
        for f in counts_dir.glob("*.json"):
            calls.update(json.loads(f.read_text()))
    transitions = sum(v for k, v in stats.items() if k.startswith("runs:"))
    gb_s = sum(stats[f"ms:{f.name}"] / 1000 * f.memory / 1024
               for f in dep.functions + [dep.error_handler] if f"ms:{f.name}" in stats)
    return {"sessions": sessions, "transitions": transitions,
            "transitions_per_session": transitions / sessions,
            "calls": dict(calls), "lambda_gb_seconds": gb_s,
            "memory_mb": {f.unum_name: f.memory for f in dep.functions}}


if __name__ == "__main__":
    sys.exit(main())
