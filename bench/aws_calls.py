"""Count DynamoDB, S3 and Lambda API calls per transition on the AWS adapter.

Runs every example (or those named) N sessions each on the AWS path used by the tests:
DynamoDB and S3 from moto_server (started here on a free 127.0.0.1 port), Lambda Invoke
served by unumctl_testing.aws.local_lambda running the built aws archives. Calls are counted inside
each emulated Lambda execution environment by a botocore `before-call` event hook
(unumctl_testing/aws/lambda_worker.py, enabled by UNUM_COUNT_CALLS). A transition is one function
execution (Lambda request) of the workflow.

    .venv/bin/python bench/aws_calls.py [--sessions 3] [--history full|session-only|off] [example ...]

Also records what the functions' log streams would ingest into CloudWatch Logs (the emulator
sends every line to moto's CloudWatch Logs as Lambda does; bytes counted as PutLogEvents
counts them, message + 26 per event: unumctl_testing/aws/local_logs.py), all lines and the
history's event lines apart. `--history LEVEL` runs a copy of each example with
`runtime.history: LEVEL` (default: as the example's manifest says, i.e. full) and stores it
under "<example> (history LEVEL)".

Writes (merges into) bench/results/aws_calls.json (read by bench/aws_cost.py) and prints a
table.
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
from runtime.session import entry_payload  # noqa: E402


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
    with moto_server() as url:
        os.environ.update(aws_env(url))
        results = {(ex.name if args.history is None else f"{ex.name} (history {args.history})"):
                   run(ex, url, args.sessions, args.history) for ex in example_dirs()
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


def run(example: Path, moto_url: str, sessions: int, history: str | None = None) -> dict:
    from runtime.aws.datastore import DynamoDBDatastore
    from unumctl_testing.aws.local_lambda import LocalLambda
    from unumctl.deploy.appgraph import deployment
    from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
    from unumctl.manifest import load_app

    import boto3

    import yaml

    from tests.helpers import copy_example

    tmp_app = None
    if history is not None:  # a copy of the example with runtime.history: LEVEL
        tmp_app = tempfile.TemporaryDirectory()
        example_copy = copy_example(example, Path(tmp_app.name) / example.name)
        mpath = example_copy / "unumctl.yaml"
        manifest = yaml.safe_load(mpath.read_text())
        manifest.setdefault("runtime", {})["history"] = history
        mpath.write_text(yaml.safe_dump(manifest, sort_keys=False))
        app = load_app(example_copy)
    else:
        app = load_app(example)
    dep = deployment(app, "aws")
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
                           Payload=json.dumps(entry_payload(sid, value)))
                deadline = time.monotonic() + 120
                while (item := ds.get(sid, "result")) is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert item and item["status"] == "SUCCEEDED" and matches_expected(item["v"], expected_of(example)), item
                emu.wait_idle(60)
            emu.wait_idle(60)
            stats = dict(emu.stats)
        stats.update({k: v for k, v in emu.stats.items() if k.startswith("log_")})  # after the last flush
        calls: Counter[str] = Counter()
        for f in counts_dir.glob("*.json"):
            calls.update(json.loads(f.read_text()))
    transitions = sum(v for k, v in stats.items() if k.startswith("runs:"))
    gb_s = sum(stats[f"ms:{f.name}"] / 1000 * f.memory / 1024
               for f in dep.functions + [dep.error_handler] if f"ms:{f.name}" in stats)
    if tmp_app is not None:
        tmp_app.cleanup()
    return {"sessions": sessions, "transitions": transitions, "history": app.manifest.runtime.history,
            "log_events": stats.get("log_events", 0), "log_bytes": stats.get("log_bytes", 0),
            "log_events_history": stats.get("log_events:unum", 0),
            "log_bytes_history": stats.get("log_bytes:unum", 0),
            "transitions_per_session": transitions / sessions,
            "calls": dict(calls), "lambda_gb_seconds": gb_s,
            "memory_mb": {f.unum_name: f.memory for f in dep.functions}}


if __name__ == "__main__":
    sys.exit(main())
