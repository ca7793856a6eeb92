"""The client example (examples/client/start_many.py, only unumctl.client) on the emulated
aws target: 100 sessions of the loop-counter example started with idempotency keys, 20
starts sent again, 100 results; the app's DynamoDB table then holds exactly 100 sessions
(see below) and the entry function was invoked exactly
100 times (a start sent again finds its start record: runtime.session.claim_start).
Under aws's default `runtime.gc: none` the items stay until DynamoDB TTL removes them, so the
table is read through the layout (DynamoDBDatastore.key_of): 100 sessions, each with one
result (in the session index) and one start record.
DynamoDB and S3 are moto_server's (IAM enforced); the functions are the BUILT aws archives
run by the local Lambda Invoke emulator; only the Terraform outputs are given directly."""

from __future__ import annotations

import importlib.util
import shutil
import uuid
from pathlib import Path

import pytest

from runtime.aws.datastore import DynamoDBDatastore
from runtime.payload import RESULT_KEY
from runtime.session import START_RECORD
from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.aws.target import AwsTarget
from unumctl.client import Client
from unumctl.pipeline import load as load_app
from unumctl.pipeline import deployment
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs

from .conftest import aws_env

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_example_starts_100_sessions_resends_20_and_gets_100_results_on_aws(moto_env, tmp_path,
                                                                                monkeypatch):
    spec = importlib.util.spec_from_file_location("start_many", ROOT / "examples" / "client" / "start_many.py")
    assert spec is not None and spec.loader is not None
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    src = tmp_path / "loop-counter"
    shutil.copytree(ROOT / "examples" / "loop-counter", src, ignore=shutil.ignore_patterns(".unum"))
    app = load_app(src)
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    with LocalLambda(local_specs(dep, table, bucket, tmp_path / "bundles"), aws_env(moto_env),
                     concurrency=4) as emu:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", emu.url)
        target = AwsTarget(app)
        monkeypatch.setattr(target, "outputs", lambda: {"entry_function": dep.entry, "table": table,
                                                         "bucket": bucket})
        with Client.of_target(target) as client:
            summary = example.run(client, 100, 20, timeout=300)
        client_ids = {Client.session_for(f"order-{i}") for i in range(100)}
        emu.wait_idle(120)
        entry_invokes = emu.stats[f"invoke:{dep.entry}"]
    assert summary == {"started": 100, "resent": 20, "results": 100, "distinct_sessions": 100}
    assert entry_invokes == 100, "a start sent again invoked the entry again"
    ddb = target.client("dynamodb")
    keys = [DynamoDBDatastore.key_of(it) for page in ddb.get_paginator("scan").paginate(TableName=table)
            for it in page["Items"]]
    assert {k[0] for k in keys if k is not None} == client_ids  # 100 sessions, all of the keys
    assert {k[0] for k in keys if k is not None and k[1] == RESULT_KEY} == client_ids
    starts = [k[0] for k in keys if k is not None and k[1] == START_RECORD]
    assert sorted(starts) == sorted(client_ids)  # one start record each (kept until TTL: gc none)
