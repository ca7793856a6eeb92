"""Task timeouts and callbacks on the AWS adapter (moto DynamoDB + the local Lambda Invoke
emulator running the built aws archives, runtime/aws unpatched): the in-function timer turns
an overrun into States.Timeout for the Task's Catch, and a callback Task waits with no
function running until runtime.asl.callback.CallbackClient on the deployed ports (DynamoDB
conditional put + async Invoke, as `unumctl send-task-success --cloud aws`) resumes it."""

from __future__ import annotations

import json
import time
import uuid

import boto3
import pytest

from runtime.asl.callback import CallbackClient, CallbackError
from runtime.aws.datastore import DynamoDBDatastore
from runtime.aws.invoker import LambdaInvoker
from unumctl.aws import names
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from tests.runtime.asl.test_timeouts_and_callbacks import SLEEPY, TOKEN_WRITER, callback_machine, sfn_app, timeout_machine, wait_file
from .conftest import aws_env
from .test_examples_aws import wait_result


def deploy(app_dir, moto_url, tmp_path):
    app = load_app(app_dir)
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    return app, dep, table, specs, aws_env(moto_url)


def start(emu, dep, value) -> str:
    sid = str(uuid.uuid4())
    client = boto3.client("lambda", endpoint_url=emu.url)
    resp = client.invoke(FunctionName=dep.entry, InvocationType="Event",
                         Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": value}}))
    assert resp["StatusCode"] == 202
    return sid


def test_task_timeout_in_function_timer_on_aws(moto_env, tmp_path):
    app_dir = sfn_app(tmp_path / "app", timeout_machine(), {"Sleepy": SLEEPY}, name="to-aws")
    app, dep, table, specs, env = deploy(app_dir, moto_env, tmp_path)
    assert app.manifest.functions["Work"].timeout == 60  # max(60, TimeoutSeconds + 10)
    log = tmp_path / "attempts.log"
    with LocalLambda(specs, env) as emu:
        sid = start(emu, dep, {"log": str(log), "slow_attempts": [0], "sleep": 4})
        item = wait_result(DynamoDBDatastore(table), sid, 60)
        emu.wait_idle(60)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["err"]["Error"] == "States.Timeout"


def test_callback_on_aws_resumed_through_the_deployed_ports(moto_env, tmp_path):
    app_dir = sfn_app(tmp_path / "app", callback_machine(), {"Waiter": TOKEN_WRITER}, name="cb-aws")
    app, dep, table, specs, env = deploy(app_dir, moto_env, tmp_path)
    tf = tmp_path / "token"
    ds = DynamoDBDatastore(table)
    with LocalLambda(specs, env) as emu:
        sid = start(emu, dep, {"token_file": str(tf), "x": 4})
        token = wait_file(tf)
        time.sleep(1)
        assert ds.get(sid, "result") is None  # waiting, no function running
        client = CallbackClient(ds, LambdaInvoker(names.function_prefix("cb-aws", "dev"), boto3.client("lambda", endpoint_url=emu.url)),
                                app="cb-aws")
        client.send_task_success(token, {"paid": True})
        item = wait_result(ds, sid, 60)
        with pytest.raises(CallbackError) as e:
            client.send_task_success(token, {"paid": True})
        emu.wait_idle(60)
    assert e.value.code == "TaskTimedOut"
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"got": {"paid": True}, "x": 4}
