"""examples/window-campaigns on the AWS path: DynamoDB and S3 from moto_server with IAM
enforcement, Lambda Invoke served by the local emulator running each function's BUILT aws
archive through its Lambda handler with its role's permissions (tests/aws/README.md). The
ByTime window's timer on AWS is an EventBridge Scheduler schedule (docs/ir.md), which moto
does not run: the test invokes the consumer asynchronously with the schedule's own rendered
input, as the scheduler does, and the window fires with every view event counted once."""

from __future__ import annotations

import json
import time
import uuid

import boto3

from runtime.aws.datastore import DynamoDBDatastore
from runtime.triggers import window
from unumctl.pipeline import deployment
from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs

from unumctl_testing.apps import ROOT
from .conftest import aws_env
from .test_examples_aws import wait_result

EVENTS = [{"event_id": f"e-{i:03d}", "user_id": "u", "ad_id": f"ad-{(i * 13) % 100:03d}",
           "event_type": ("view", "click")[i % 3 == 1], "event_time": 1700000000 + i} for i in range(24)]


def test_campaign_window_on_aws_adapter(moto_env, tmp_path):
    app = load_app(ROOT / "examples" / "window-campaigns")
    dep = deployment(app, "aws")
    assert [(t.name, t.consumer, t.seconds) for t in dep.timers] == [("campaigns", "Count", 60.0)]
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    ds = DynamoDBDatastore(table)
    with LocalLambda(local_specs(dep, table, bucket, tmp_path / "bundles"), aws_env(moto_env)) as emu:
        client = boto3.client("lambda", endpoint_url=emu.url)

        def send(fn: str, payload: dict) -> None:
            assert client.invoke(FunctionName=dep.function(fn).name, InvocationType="Event",
                                 Payload=json.dumps(payload))["StatusCode"] == 202

        def tick() -> None:  # what the rendered aws_scheduler_schedule sends
            send("Count", json.loads(dep.timers[0].input))

        for i, ev in enumerate(EVENTS[:12]):
            send("Ingest", {"Session": f"ev-{i}", "Data": {"Source": "http", "Value": ev}})
        for i in range(12):
            assert wait_result(ds, f"ev-{i}", 90, emu)["status"] == "SUCCEEDED"
        tick()
        first = wait_result(ds, window.window_session("campaigns", 0), 90, emu)
        for i, ev in enumerate(EVENTS[12:], 12):
            send("Ingest", {"Session": f"ev-{i}", "Data": {"Source": "http", "Value": ev}})
        for i in range(12, 24):
            wait_result(ds, f"ev-{i}", 90, emu)
        tick()
        tick()  # a second tick on an empty open window fires nothing
        second = wait_result(ds, window.window_session("campaigns", 1), 90, emu)
        emu.wait_idle(60)
        time.sleep(0.2)
    assert first["status"] == second["status"] == "SUCCEEDED"
    views = [e["event_id"] for e in EVENTS if e["event_type"] == "view"]
    assert sorted(first["v"]["event_ids"]) == sorted(views[:8])  # the views among the first 12
    assert sorted(first["v"]["event_ids"] + second["v"]["event_ids"]) == sorted(views)
    assert ds.get(window.window_session("campaigns", 2), "result") is None
