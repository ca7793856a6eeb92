"""A small Distributed Map on the AWS target (moto_server for DynamoDB and S3 with IAM
enforced, the local Lambda emulator running the built aws archives, as
tests/aws/test_asl_concurrency_aws.py): 12 items read from S3 by the function reaching the
Map, one Lambda child each, results written back by the ResultWriter. The calls the functions
make are checked against their rendered role policies (tests/aws/conftest.py `aws_calls`)."""

from __future__ import annotations

import json

import boto3
import pytest

from tests.helpers import make_sfn_app

from .test_asl_concurrency_aws import run_on_aws
from .test_distributed_map_local import DOUBLE, GET, dmap


def test_distributed_map_reads_and_writes_s3_on_aws(moto_env, tmp_path):
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="dm-aws-src")
    s3.put_object(Bucket="dm-aws-src", Key="items.json", Body=json.dumps([{"n": i} for i in range(12)]).encode())
    machine = dmap({"Resource": GET, "Parameters": {"Bucket": "dm-aws-src", "Key": "items.json"},
                    "ReaderConfig": {"InputType": "JSON"}},
                   ResultWriter={"Resource": "arn:aws:states:::s3:putObject",
                                 "Parameters": {"Bucket": "dm-aws-src", "Prefix": "out"}})
    root = make_sfn_app(tmp_path / "app", machine, {"Double": DOUBLE}, "dm-aws")
    _skip_unless_role_grants_integrations(root)
    item, _ = run_on_aws(root, {}, moto_env, tmp_path)
    assert item is not None and item["status"] == "SUCCEEDED", item
    manifest = json.loads(s3.get_object(Bucket="dm-aws-src", Key=item["v"]["ResultWriterDetails"]["Key"])["Body"].read())
    ok = json.loads(s3.get_object(Bucket="dm-aws-src", Key=manifest["ResultFiles"]["SUCCEEDED"][0]["Key"])["Body"].read())
    assert [json.loads(r["Output"]) for r in ok] == [{"n2": 2 * i} for i in range(12)]


def _skip_unless_role_grants_integrations(root) -> None:
    """The function role must hold the reader's s3:GetObject (runtime.asl.integrations
    `iam_actions`); adding integrations' IAM actions to the role is another change (issue 24
    item 2). Until the rendered policy grants it, this test cannot pass under IAM
    enforcement: it skips, naming why."""
    from unumctl.deploy.appgraph import deployment
    from unumctl.manifest import load_app
    from unumctl_testing.aws.iam import allowed, policy_document
    dep = deployment(load_app(root), "aws")
    f = next(fn for fn in dep.functions if fn.name == dep.entry)
    policy = policy_document(dep, f, "t", "b", "us-east-1", "123456789012")
    if not allowed(policy, "s3:GetObject", "arn:aws:s3:::dm-aws-src/items.json"):
        pytest.skip("the aws function role does not grant integrations' IAM actions yet "
                    "(runtime.asl.integrations.iam_actions is not wired into iam.tf)")
