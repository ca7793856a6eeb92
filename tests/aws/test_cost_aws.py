"""`unumctl cost` on moto: the call counter of the emulated Lambda (unumctl/aws/emulate/
lambda_worker.py) on a known sequence of DynamoDB and S3 calls, priced by
unumctl/cost/billing.py; a small app measured end to end (unumctl/cost/measure.py); and
the CLI's --json report. Skips when moto_server is not installed."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from unumctl.cost import billing
from unumctl.cost.measurement import Measurement
from unumctl.cost.prices import load_prices

from unumctl_testing.apps import make_app
from unumctl_testing.aws.deployment import sign_as_role
from .conftest import aws_env

ROOT = Path(__file__).resolve().parents[2]

COUNTED_CALLS = """
import sys, boto3
from unumctl.aws.emulate.lambda_worker import _count_calls
_count_calls(sys.argv[1])
table = sys.argv[2]
ddb = boto3.client("dynamodb")
s = lambda v: {"S": v}
key = lambda n: {"session": s("s1"), "name": s(n)}
ddb.put_item(TableName=table, Item={**key("big"), "v": s("x" * 1500)})          # 2 WRU
ddb.put_item(TableName=table, Item={**key("huge"), "v": s("y" * 5000)})         # 5 WRU
ddb.put_item(TableName=table, Item={**key("small"), "v": s("z")})               # 1 WRU
ddb.batch_get_item(RequestItems={table: {"Keys": [key("huge"), key("small"), key("absent")],
                                         "ConsistentRead": True}})              # 2 + 1 + 1 RRU
ddb.get_item(TableName=table, Key=key("absent"), ConsistentRead=True)           # 1 RRU
ddb.transact_write_items(TransactItems=[                                        # (1 + 1) x 2 WRU
    {"Put": {"TableName": table, "Item": {**key("t1"), "v": s("a")}}},
    {"Put": {"TableName": table, "Item": {**key("t2"), "v": s("b")}}}])
ddb.query(TableName=table, KeyConditionExpression="#s = :s", ExpressionAttributeNames={"#s": "session"},
          ExpressionAttributeValues={":s": s("s1")}, ConsistentRead=True)       # ~6.6 KB: 2 RRU
ddb.delete_item(TableName=table, Key=key("small"))                              # 1 WRU
boto3.client("s3").list_objects_v2(Bucket=table)
"""


def test_counter_and_billing_of_known_calls(moto_url, unum_table, tmp_path):
    out = tmp_path / "counts"
    out.mkdir()
    env = {**aws_env(moto_url), "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", COUNTED_CALLS, str(out), unum_table], env=env, check=True, timeout=120)
    (counts,) = [json.loads(p.read_text()) for p in out.glob("*.json")]
    ops = {k: v for k, v in counts.items() if not isinstance(v, list)}
    assert ops["dynamodb:PutItem"] == 3 and ops["dynamodb:BatchGetItem#items"] == 3
    assert ops["dynamodb:TransactWriteItems#items"] == 2 and ops["s3:ListObjectsV2"] == 1
    m = Measurement.from_json({"app": "t", "cloud": "aws", "sessions": 1, "executions": [], "memory_mb": {},
                               "operations": ops, "session_ms": [1.0],
                               "item_bytes": {k: v for k, v in counts.items() if isinstance(v, list)}})
    lines, unpriced = billing.unum_lines(m, load_prices())
    assert unpriced == []
    units = {x.item.split(" ")[0]: x.quantity for x in lines if x.group == "dynamodb"}
    assert units == {"PutItem": 8, "BatchGetItem": 4, "GetItem": 1, "TransactWriteItems": 4, "Query": 2,
                     "DeleteItem": 1}
    assert [x.quantity for x in lines if x.group == "s3"] == [1]


CHAIN = {
    "A": ({"Start": True, "Next": {"Name": "B"}}, "def handler(event, context):\n    return event + 1\n"),
    "B": ({"Next": {"Name": "C"}}, "def handler(event, context):\n    return event * 2\n"),
    "C": ({}, "def handler(event, context):\n    return {'n': event}\n"),
}


@pytest.fixture
def chain_app(tmp_path):
    import yaml

    root = make_app(tmp_path / "chain", "cost-chain", CHAIN)
    manifest = yaml.safe_load((root / "unumctl.yaml").read_text())
    manifest["functions"]["B"]["memory"] = 256
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    (root / "input.json").write_text("3")
    return root


def test_measure_small_chain(moto_url, chain_app):
    from unumctl.aws.measure import measure_aws

    m = Measurement.from_json(measure_aws(chain_app, 3, sessions=2, sign_as=sign_as_role))
    assert sorted(f for f, _ in m.executions) == ["A", "A", "B", "B", "C", "C"]
    assert m.memory_mb["B"] == 256 and m.memory_mb["A"] == 128
    assert billing.transitions(m) == 3 and len(m.session_ms) == 2
    # every function commits a checkpoint: at least one DynamoDB write per transition, and
    # every item written or read was sized by the counter
    writes = sum(m.operations.get(f"dynamodb:{op}#items", 0)
                 for op in ("PutItem", "UpdateItem", "TransactWriteItems", "BatchWriteItem"))
    assert writes >= 6
    for op, n in m.operations.items():
        if op.startswith("dynamodb:") and op.endswith("#items") and op != "dynamodb:DeleteItem#items":
            assert len(m.item_bytes[op.replace("#items", "#bytes")]) == n, op
    lines, unpriced = billing.unum_lines(m, load_prices())
    assert unpriced == []
    req = [x for x in lines if x.group == "lambda" and x.item == "requests"][0]
    assert req.quantity == 3
    gb = [x for x in lines if x.group == "lambda" and x.unit == "GB-second"][0]
    ms = {f: sum(t for g, t in m.executions if g == f) for f in "ABC"}
    assert gb.quantity >= (ms["A"] * 128 + ms["B"] * 256 + ms["C"] * 128) / 1000 / 1024 / 2 > 0
    assert m.log_bytes > 0  # START / END / REPORT lines at least


def test_cli_json_report(moto_url, chain_app, monkeypatch):
    # the CLI's measured run signs with moto's dummy credentials, not the harness's roles:
    # no call of it is checked against a rendered policy (tests/aws/conftest.py aws_calls)
    monkeypatch.delenv("UNUM_RECORD_CALLS", raising=False)
    p = subprocess.run([sys.executable, "-m", "unumctl.cli", "cost", str(chain_app), "--cloud", "aws", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    r = json.loads(p.stdout)
    assert r["app"] == "cost-chain" and r["cloud"] == "aws" and r["sessions"] == 1 and r["transitions"] == 3
    for key in ("unum", "stepfunctions_standard", "stepfunctions_express"):
        assert r[key]["per_execution"] > 0 and r[key]["per_million"] == pytest.approx(r[key]["per_execution"] * 1e6)
        assert {tuple(sorted(x)) for x in r[key]["lines"]} == {
            ("group", "item", "quantity", "unit", "unit_price", "usd")}
    assert r["stepfunctions_standard"]["transitions"] == 3
    assert r["assumptions"]["memory_mb"] == {"A": 128, "B": 256, "C": 128}
    assert r["prices"]["file"].endswith("unumctl/cost/prices.json") and r["prices"]["as_of"]
    assert r["unpriced"] == []
    assert r["plan"] == {"file": None, "in_force": False, "fuse": [], "batch": {}, "memory": {}}
    text = subprocess.run([sys.executable, "-m", "unumctl.cli", "cost", str(chain_app)], capture_output=True,
                          text=True, cwd=ROOT, timeout=300)
    assert text.returncode == 0 and "Step Functions Express" in text.stdout, textwrap.shorten(text.stderr, 500)
    assert text.stdout.splitlines()[0] == "no plan in force: the workflow as written"


BIG_CHAIN = {
    # B's value is ~48 KB of hex digits (about 24 KB compressed): above the 10 KB a value may
    # take in a DynamoDB item, so a checkpoint of it is a blob in S3
    "A": ({"Start": True, "Next": {"Name": "B"}}, "def handler(event, context):\n    return event + 1\n"),
    "B": ({"Next": {"Name": "C"}}, "import random\n\ndef handler(event, context):\n"
                                   "    return '%x' % random.Random(event).getrandbits(192000)\n"),
    "C": ({}, "def handler(event, context):\n    return {'n': len(event)}\n"),
}


def test_at_least_once_measurement_writes_no_checkpoint(moto_url, tmp_path):
    """`unumctl cost --mode at-least-once` (harness at_least_once, runtime.checkpoint false):
    the functions write no checkpoint and no blob of one; the session's only writes are its
    `result` and the history's session record (one UpdateItem each, to the same item:
    runtime/aws/datastore.py layout; B creates the result, A records the start); reads are
    one per function (`result`). Exactly-once would write A's and B's checkpoints and B's blob
    (its value is above 10 KB compressed). (Without the engine's inline value for a function with no checkpoint, B
    still wrote its value's blob: s3:PutObject 1.)"""
    from unumctl.aws.measure import measure_aws

    root = make_app(tmp_path / "big", "cost-big", BIG_CHAIN)
    (root / "input.json").write_text("3")
    alo = measure_aws(root, 3, sessions=1, warmup=False, at_least_once=True, sign_as=sign_as_role)["operations"]
    assert "dynamodb:PutItem" not in alo and alo.get("dynamodb:UpdateItem#items") == 2, alo
    assert alo.get("s3:PutObject", 0) == 0, alo
    assert alo.get("dynamodb:BatchGetItem#items") == 3 and "dynamodb:TransactWriteItems" not in alo
    # B's value would be a blob if it were checkpointed (exactly-once, tests above)
    import random
    import zlib
    value = json.dumps("%x" % random.Random(4).getrandbits(192000)).encode()
    assert len(zlib.compress(value)) > 10 * 1024


def test_window_measurement_runs_and_bills_the_consumer_sessions(moto_url):
    """examples/window-campaigns (Ingest -> Window campaigns, ByTime -> Count): after the
    measured sessions the harness ticks the consumer as EventBridge Scheduler would, so the
    window's consumer session (win-campaigns-0) runs and its Count execution, calls and log
    lines are counted with the producers'. (Before: only the Ingest executions were
    measured, and no scheduler invocation was billed.)"""
    from unumctl.aws.measure import measure_aws

    app = ROOT / "examples" / "window-campaigns"
    value = json.loads((app / "input.json").read_text())
    raw = measure_aws(app, value, sessions=2, warmup=False, sign_as=sign_as_role)
    m = Measurement.from_json(raw)
    assert sorted(f for f, _ in m.executions) == ["Count", "Ingest", "Ingest"]
    assert m.consumer_sessions == ["win-campaigns-0"] and m.window_ticks == [("campaigns", 60.0)]
    # the consumer reads its 2 slots (one item each) beside the producers' reads, and
    # creates its session's `result`: more items than the 2 producer sessions alone read
    assert m.operations["dynamodb:BatchGetItem#items"] > 2 * 5
    lines, unpriced = billing.unum_lines(m, load_prices())
    assert unpriced == []
    req = [x for x in lines if x.group == "lambda" and x.item == "requests"][0]
    assert req.quantity == 1.5  # (2 Ingest + 1 Count) / 2 objects
    [tick] = [x for x in lines if x.group == "scheduler"]
    assert tick.quantity == 0.5 and tick.unit_price == load_prices()["aws"]["eventbridge_scheduler_per_million_invocations"] / 1e6
