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
    print(f"{'example':16} {'Unum $/1M':>11} {'(lambda':>9} {'ddb':>8} {'s3)':>7} {'SFN Std $/1M':>13} {'SFN transitions':>16}")
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
        unum = (lam + ddb + s3) * 1e6
        transitions = requests + 1
        sfn = (lam + transitions * prices["stepfunctions_standard_per_thousand_transitions"] / 1e3) * 1e6
        print(f"{name:16} {unum:>11.2f} {lam * 1e6:>9.2f} {ddb * 1e6:>8.2f} {s3 * 1e6:>7.2f} {sfn:>13.2f} {transitions:>16.1f}")
    print(f"prices: bench/prices.json ({json.loads((ROOT / 'bench' / 'prices.json').read_text())['as_of']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
