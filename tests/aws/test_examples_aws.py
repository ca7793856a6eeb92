"""Every example runs end to end on the AWS adapter: DynamoDB and S3 from moto_server, Lambda
Invoke served on 127.0.0.1 by the local emulator, which runs each function's BUILT aws
archive through its Lambda handler (runtime/aws is not mocked or patched). Results equal
the expected outputs, and afterwards the table holds only the sessions' result items (under
`runtime.gc: safe`), or (under `none`, the AWS default) what it holds expires with the session
(DynamoDB TTL on `expires_at`)."""

from __future__ import annotations

import json
import time
import uuid

import boto3
import pytest

from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore
from runtime.session import read_result
from runtime.engine import Options
from runtime.faults import FaultSpec
from runtime.triggers.window import NEVER as WINDOW_NEVER
from runtime.triggers.window import store_session
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from unumctl_testing.apps import cloud_example_params, example_dirs, expected_of, matches_expected
from .conftest import aws_env

STORE_PREFIX = store_session("")  # the window stores' sessions, winstore-<name>


def wait_result(ds: DynamoDBDatastore, session: str, timeout: float = 90, emu: LocalLambda | None = None) -> dict:
    """The session's result item. Gives up after `timeout` s without a result; with `emu`,
    `timeout` s without progress (no execution started or ended in the emulator), so a slow
    run on a loaded machine (cold starts of every worker: each imports boto3) is not
    mistaken for a hang."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        item = ds.get(session, "result")
        if item is not None:
            return item
        if emu is not None:
            now = (emu.stats.get("executions", 0), sum(v for k, v in emu.stats.items() if k.startswith("runs:")),
                   emu.stats.get("cold_starts", 0))
            if now != seen:
                seen, deadline = now, time.monotonic() + timeout
        time.sleep(0.05)
    state = f" without progress; in flight: {emu._inflight}; emulator stats: {dict(emu.stats)}" if emu else ""
    raise TimeoutError(f"session {session}: no result after {timeout} s{state}")


def run_example(example, moto_url, tmp_path, faults=None, sessions=1, app=None):
    app = app or load_app(example)  # `app`: e.g. with a plan applied (tests/aws/test_fusion_aws.py)
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    env = aws_env(moto_url)
    value = json.loads((example / "input.json").read_text())
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    ds = DynamoDBDatastore(table)
    with LocalLambda(specs, env, faults=faults) as emu:
        client = boto3.client("lambda", endpoint_url=emu.url)
        sids = []
        for _ in range(sessions):
            sid = str(uuid.uuid4())
            resp = client.invoke(FunctionName=dep.entry, InvocationType="Event",
                                 Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": value}}))
            assert resp["StatusCode"] == 202
            sids.append(sid)
        items = [wait_result(ds, s, 90, emu) for s in sids]
        items = [read_result(ds, S3BlobStore(bucket), s) if "blob" in it else it for s, it in zip(sids, items)]
        emu.wait_idle(60)
        stats = dict(emu.stats)
    # what the sessions left, as (session, item name): a session-index record counts only
    # for the result it holds (runtime/aws/datastore.py layout)
    scanned = [(k, i) for i in ds.client.scan(TableName=table)["Items"] if (k := ds.key_of(i)) is not None]
    if app.runtime_options("aws")["gc"] == "none":  # nothing collected: everything else expires
        retention = Options.from_mapping(app.runtime_options("aws")).retention
        now = time.time()
        horizon = now + retention.session_timeout + retention.margin + 60
        # a window's store lives as long as what refers to it (runtime/triggers/window.py):
        # its items Retention.window_lifetime after the window opened, `cur` never expires
        window_horizon = now + retention.window_lifetime + 60

        def bound(k):
            if not k[0].startswith(STORE_PREFIX):
                return horizon
            return WINDOW_NEVER if k[1] == "cur" else window_horizon
        late = [(k[1], i.get("expires_at")) for k, i in scanned if k[1] != "result"
                and float(i.get("expires_at", {}).get("N", "inf")) > bound(k)]
        assert not late, late
        scanned = [(k, i) for k, i in scanned if k[1] == "result"]
    left = sorted(k for k, _ in scanned)
    return app, items, sids, left, stats


@pytest.mark.parametrize("example", cloud_example_params(pytest.mark.aws_long))
def test_example_runs_on_aws_adapter(example, moto_env, tmp_path):
    _, items, sids, left, _ = run_example(example, moto_env, tmp_path)
    assert items[0]["status"] == "SUCCEEDED", items[0]
    assert matches_expected(items[0]["v"], expected_of(example))
    assert left == [(sids[0], "result")]


@pytest.mark.campaign
@pytest.mark.parametrize("name", ["text-processing", "wordcount"])
def test_fault_campaign_on_aws_path(name, moto_env, tmp_path):
    """Duplicate deliveries and killed executions at the Invoke server: every session ends
    with the fault-free result and only result items remain."""
    example = next(p for p in example_dirs() if p.name == name)
    faults = FaultSpec.parse("seed=7,duplicate=0.2,kill=0.15,max_kill_ms=60")
    _, items, sids, left, stats = run_example(example, moto_env, tmp_path, faults, sessions=4)
    assert stats.get("duplicated", 0) > 0 and stats.get("crashes", 0) > 0, stats
    for item in items:
        assert item["status"] == "SUCCEEDED", item
        assert matches_expected(item["v"], expected_of(example))
    assert left == sorted((s, "result") for s in sids)
