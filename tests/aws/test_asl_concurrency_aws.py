"""Map MaxConcurrency on the AWS target (moto_server for DynamoDB and S3, the local Lambda
emulator running the built aws archives, as tests/aws/test_examples_aws.py): a Map with
MaxConcurrency 2 over 20 items never has more than 2 items in flight, measured from the
stubs' own start/end times, with 5 Lambda processes available to the function."""

from __future__ import annotations

import json
import time
import uuid

import boto3

from runtime.engine import Options
from runtime.aws.datastore import DynamoDBDatastore
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from tests.runtime.asl.test_fanout import concurrency_machine, make_app, max_overlap, read_spans
from .conftest import aws_env


def run_on_aws(root, value, moto_url, tmp_path):
    app = load_app(root)
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    ds = DynamoDBDatastore(table)
    sid = str(uuid.uuid4())
    with LocalLambda(specs, aws_env(moto_url), concurrency=5) as emu:
        client = boto3.client("lambda", endpoint_url=emu.url)
        client.invoke(FunctionName=dep.entry, InvocationType="Event",
                      Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": value}}))
        deadline = time.monotonic() + 120
        item = None
        while item is None and time.monotonic() < deadline:
            item = ds.get(sid, "result")
            time.sleep(0.05)
        emu.wait_idle(60)
    # what the session leaves beyond its item lifetime (not the history's session index): under
    # gc none (the AWS default) nothing is collected, and everything but `result` must expire
    # with the session; under safe only `result` is left
    retention = Options.from_mapping(app.runtime_options("aws")).retention
    horizon = time.time() + retention.session_timeout + retention.margin + 60
    left = sorted(k[1] for i in ds.client.scan(TableName=table)["Items"] if (k := ds.key_of(i)) is not None
                  and (k[1] == "result" or float(i.get("expires_at", {}).get("N", "inf")) > horizon))
    return item, left


def test_max_concurrency_2_over_20_items_on_aws(moto_env, tmp_path):
    root = make_app(tmp_path / "app", concurrency_machine({"MaxConcurrency": 2}), ["Slow"], name="mc-aws")
    item, left = run_on_aws(root, {"items": list(range(20)), "dir": str(tmp_path)}, moto_env, tmp_path)
    assert item is not None and item["status"] == "SUCCEEDED", item
    assert item["v"] == [i * 10 for i in range(20)]
    spans = read_spans(tmp_path)
    assert sorted(s[0] for s in spans) == list(range(20))
    assert max_overlap([(t0, t1) for _, t0, t1 in spans]) <= 2
    assert left == ["result"]


def test_unlimited_map_overlaps_more_than_2_on_aws(moto_env, tmp_path):
    """The control: the same Map without MaxConcurrency runs more than 2 items at once,
    so the measure above can see concurrency on this target."""
    root = make_app(tmp_path / "app", concurrency_machine({}), ["Slow"], name="mc-aws")
    item, _ = run_on_aws(root, {"items": list(range(20)), "dir": str(tmp_path)}, moto_env, tmp_path)
    assert item is not None and item["status"] == "SUCCEEDED", item
    assert max_overlap([(t0, t1) for _, t0, t1 in read_spans(tmp_path)]) > 2


def test_sfn_branches_workload_on_aws(moto_env, tmp_path):
    """tools/campaign_apps/sfn-branches (Retry on a Parallel, a laned Map whose branches
    loop: invocation names with frame bases, `asl/item/` and `exit/` items) on the AWS
    target: the expected result, and only the result item is left."""
    from tools.fault_campaign import CAMPAIGN_APPS

    from unumctl_testing.apps import expected_of, matches_expected
    from .test_examples_aws import run_example
    example = CAMPAIGN_APPS / "sfn-branches"
    _, items, sids, left, _ = run_example(example, moto_env, tmp_path)
    assert items[0]["status"] == "SUCCEEDED", items[0]
    assert matches_expected(items[0]["v"], expected_of(example))
    assert left == [(sids[0], "result")]


def test_context_object_names_the_lambda_region_and_account(moto_env, tmp_path):
    """`$$.Execution.Id`, `$$.StateMachine.Id` and `$$.Execution.RoleArn` carry the region
    and account of the function's ARN (the Lambda context's `invoked_function_arn`,
    runtime/asl/arns.py), not a fixed us-east-1:000000000000."""
    from unumctl.aws.emulate.moto_local import REGION

    machine = {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Next": "S", "Parameters": {
            "id.$": "$$.Execution.Id", "machine.$": "$$.StateMachine.Id", "role.$": "$$.Execution.RoleArn"}},
        "S": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:000000000000:function:Submit", "End": True}}}
    root = make_app(tmp_path / "app", machine, ["Submit"], name="ctx-aws")
    item, _ = run_on_aws(root, {}, moto_env, tmp_path)
    assert item is not None and item["status"] == "SUCCEEDED", item
    prefix = f"arn:aws:states:{REGION}:123456789012"
    assert item["v"]["id"].startswith(f"{prefix}:execution:") and item["v"]["machine"].startswith(f"{prefix}:stateMachine:")
    assert item["v"]["role"] == "arn:aws:iam::123456789012:role/unum"
