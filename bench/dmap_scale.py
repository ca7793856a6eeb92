"""Distributed Map at scale on the local target (issue 24 item 4: "100,000 items on local").

    python bench/dmap_scale.py [--items 100000] [--batch 0] [--workers N]

Builds a Step Functions app whose Distributed Map reads `--items` JSON items from S3 (the
local platform's embedded moto, started with the platform), runs a Lambda Task per child
(`--batch B` > 0 adds an ItemBatcher with MaxItemsPerBatch B, so each child gets B items)
and writes the results with a ResultWriter; checks the SUCCEEDED file holds every item's
output, and prints the wall time of the session and the peak resident memory of this
process and of its children (the workers and moto), from getrusage. Not a test: numbers are
reported, never asserted (docs/stepfunctions.md "Distributed Map" quotes a run).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

HANDLER = ("def handler(event, context):\n"
           "    if 'Items' in event:\n"
           "        return [{'n2': i['n'] * 2} for i in event['Items']]\n"
           "    return {'n2': event['n'] * 2}\n")


def machine(batch: int) -> dict:
    """The benchmark's state machine: Distributed Map `M` over s3://scale/items.json."""
    m = {"Type": "Map",
         "ItemReader": {"Resource": "arn:aws:states:::s3:getObject",
                        "Parameters": {"Bucket": "scale", "Key": "items.json"},
                        "ReaderConfig": {"InputType": "JSON"}},
         "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
                           "StartAt": "Work", "States": {"Work": {
                               "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Work",
                               "End": True}}},
         "ResultWriter": {"Resource": "arn:aws:states:::s3:putObject",
                          "Parameters": {"Bucket": "scale", "Prefix": "results"}},
         "End": True}
    if batch:
        m["ItemBatcher"] = {"MaxItemsPerBatch": batch}
    return {"StartAt": "M", "States": {"M": m}}


def main(argv: list[str] | None = None) -> int:
    """Run once; prints the numbers and a JSON summary line; exit 1 if the output is wrong."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--items", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=0, help="MaxItemsPerBatch (0: no ItemBatcher)")
    ap.add_argument("--timeout", type=float, default=7200.0)
    ap.add_argument("--verbose", action="store_true", help="show the workers' output")
    args = ap.parse_args(argv)
    import boto3

    from unumctl_testing.apps import make_sfn_app
    from unumctl.local import LocalRunner
    from unumctl.pipeline import load as load_app

    for k in ("AWS_ENDPOINT_URL", "UNUM_AWS_ENDPOINT"):
        os.environ.pop(k, None)
    os.environ.update({"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                       "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"})
    with tempfile.TemporaryDirectory() as tmp:
        root = make_sfn_app(Path(tmp) / "app", machine(args.batch), {"Work": HANDLER}, "dmap-scale")
        state = Path(tmp) / "state"
        with LocalRunner(load_app(root), state=state, quiet=not args.verbose) as r:
            url = (state / "aws-endpoint").read_text().strip()
            s3 = boto3.client("s3", endpoint_url=url)
            s3.create_bucket(Bucket="scale")
            s3.put_object(Bucket="scale", Key="items.json",
                          Body=json.dumps([{"n": i} for i in range(args.items)]).encode())
            t0 = time.monotonic()
            item = r.run({}, timeout=args.timeout)
            wall = time.monotonic() - t0
            if item.get("status") != "SUCCEEDED":
                print(f"session ended {item.get('status')}: {item}", file=sys.stderr)
                return 1
            manifest = json.loads(s3.get_object(Bucket="scale", Key=item["v"]["ResultWriterDetails"]["Key"])["Body"].read())
            ok = json.loads(s3.get_object(Bucket="scale", Key=manifest["ResultFiles"]["SUCCEEDED"][0]["Key"])["Body"].read())
            outs = [json.loads(x["Output"]) for x in ok]
            flat = [o for out in outs for o in out] if args.batch else outs
            if flat != [{"n2": 2 * i} for i in range(args.items)]:
                print("wrong results in SUCCEEDED_0.json", file=sys.stderr)
                return 1
    self_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    child_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    children = len(ok)
    print(f"{args.items} items, {children} child executions (batch {args.batch or 'none'}): "
          f"session {wall:.1f} s, {args.items / wall:.0f} items/s; peak RSS this process "
          f"{self_kb / 1024:.0f} MiB, largest child process {child_kb / 1024:.0f} MiB")
    print(json.dumps({"items": args.items, "children": children, "batch": args.batch,
                      "wall_s": round(wall, 2), "peak_rss_self_mib": round(self_kb / 1024),
                      "peak_rss_child_mib": round(child_kb / 1024)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
