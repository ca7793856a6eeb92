"""A small Distributed Map on the AWS target (moto_server for DynamoDB and S3 with IAM
enforced, the local Lambda emulator running the built aws archives, as
tests/aws/test_asl_concurrency_aws.py): 12 items read from S3 by the function reaching the
Map, one Lambda child each, results written back by the ResultWriter. The calls the functions
make are checked against their rendered role policies (tests/aws/conftest.py `aws_calls`)."""

from __future__ import annotations

import json

import boto3

from unumctl_testing.apps import make_sfn_app

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
    _assert_roles_grant_the_reader_and_the_writer(root)
    item, _ = run_on_aws(root, {}, moto_env, tmp_path)
    assert item is not None and item["status"] == "SUCCEEDED", item
    manifest = json.loads(s3.get_object(Bucket="dm-aws-src", Key=item["v"]["ResultWriterDetails"]["Key"])["Body"].read())
    ok = json.loads(s3.get_object(Bucket="dm-aws-src", Key=manifest["ResultFiles"]["SUCCEEDED"][0]["Key"])["Body"].read())
    assert [json.loads(r["Output"]) for r in ok] == [{"n2": 2 * i} for i in range(12)]


def _assert_roles_grant_the_reader_and_the_writer(root) -> None:
    """The function reaching the Map holds the reader's s3:GetObject on the object and
    s3:ListBucket on the bucket; the join holds the writer's s3:PutObject under its Prefix,
    and nothing wider (runtime.asl.integrations.s3 iam_statements, runtime/aws/iam.py)."""
    from unumctl.pipeline import deployment
    from unumctl.pipeline import load as load_app
    from unumctl_testing.aws.iam import allowed, policy_document
    dep = deployment(load_app(root), "aws")
    fns = {fn.name: fn for fn in dep.functions}
    entry = policy_document(dep, fns[dep.entry], "t", "b", "us-east-1", "123456789012")
    assert allowed(entry, "s3:GetObject", "arn:aws:s3:::dm-aws-src/items.json")
    assert allowed(entry, "s3:ListBucket", "arn:aws:s3:::dm-aws-src")
    assert not allowed(entry, "s3:GetObject", "arn:aws:s3:::other/items.json")
    writers = [n for n, fn in fns.items()
               if allowed(policy_document(dep, fn, "t", "b", "us-east-1", "123456789012"),
                          "s3:PutObject", "arn:aws:s3:::dm-aws-src/out/run/manifest.json")]
    assert len(writers) == 1 and writers[0] != dep.entry, writers
