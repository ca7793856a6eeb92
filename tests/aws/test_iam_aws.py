"""IAM of the deployed runtime under moto's IAM enforcement (unumctl_testing/aws/iam.py).

The functions are the BUILT aws archives run by the local Lambda emulator, each signing with
the credentials of its execution role's twin (policy rendered from runtime/aws/iam.py, as
terraform/modules/aws-unum-function/iam.tf renders it); DynamoDB and S3 are moto_server's
with enforcement on. Every AWS call of the functions is recorded with botocore's hooks
(lambda_worker._record_calls) and checked against the calling function's rendered policy
(tests/aws/conftest.py `aws_calls`, after every test of tests/aws).

Here: a 40-branch Map + fan-in (members 17..40 take the transaction + GetItem path of
DynamoDBDatastore.set_add) with one large branch value (S3) under `gc: eager` completes
with no AccessDenied and no failed or retried invocation, and calls every action the
rendered policies grant (except the Lambda service's own: log delivery, the SQS
destination, KMS); a missing blob is missing whether S3 answers 404 or 403; the checker
itself catches an ungranted call and a granted action nobody calls.
"""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore
from runtime.aws.iam import INVOKE, PERMISSIONS, role_permissions
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.aws import iam as test_iam
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from unumctl_testing.apps import make_app
from .conftest import ACCOUNT, REGION, aws_env
from .test_examples_aws import wait_result

BRANCHES = 40
WORK = """
import hashlib

def handler(event, context):
    # one branch returns a value above the datastore's inline limit (10 KB, even
    # compressed): it goes to S3
    pad = "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(800))
    return {"i": event, "pad": pad} if event == 7 else {"i": event}
"""
JOIN = """
def handler(event, context):
    return {"n": len(event), "sum": sum(e["i"] for e in event), "big": len(event[7]["pad"])}
"""
FINISH = """
def handler(event, context):
    return event
"""


def fan_in_app(root):
    return make_app(root, "iam-fanin", {
        "Split": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}},
                  "def handler(event, context):\n    return event\n"),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, WORK),
        "Join": ({"Next": {"Name": "Finish"}}, JOIN),
        "Finish": ({}, FINISH),
    }, runtime={"gc": "eager"})


def test_40_branch_fan_in_under_iam_enforcement(moto_env, tmp_path, aws_calls):
    app = load_app(fan_in_app(tmp_path / "app"))
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    assert all(s.env["AWS_ACCESS_KEY_ID"] != aws_env(moto_env)["AWS_ACCESS_KEY_ID"] for s in specs.values())
    sid = str(uuid.uuid4())
    with LocalLambda(specs, aws_env(moto_env), concurrency=4) as emu:
        resp = boto3.client("lambda", endpoint_url=emu.url).invoke(
            FunctionName=dep.entry, InvocationType="Event",
            Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": list(range(BRANCHES))}}))
        assert resp["StatusCode"] == 202
        item = wait_result(DynamoDBDatastore(table), sid, 120, emu)
        emu.wait_idle(60)
        stats = dict(emu.stats)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"n": BRANCHES, "sum": sum(range(BRANCHES)), "big": 800 * 64}
    calls = test_iam.read_calls(aws_calls)
    assert calls, "no AWS call recorded"
    assert not test_iam.denied(calls), test_iam.denied(calls)[:5]
    # no failed attempt, so nothing retried by Lambda nor sent to the error handler
    assert stats.get("failed_attempts", 0) == 0 and stats.get("retries", 0) == 0, stats
    assert stats.get("on_failure", 0) == 0 and stats.get(f"invoke:{dep.error_handler.name}", 0) == 0, stats
    assert stats.get("runs:" + dep.function("Work").name) == BRANCHES, stats
    ops = {c["op"] for c in calls}
    assert {"dynamodb:TransactWriteItems", "dynamodb:GetItem", "s3:PutObject", "s3:GetObject"} <= ops, ops
    policies = test_iam.read_policies(aws_calls)
    assert {k.split("/")[0] for k in policies} == {f.name for f in dep.all_functions}
    assert test_iam.check_calls(calls, policies, REGION, ACCOUNT) == []
    assert test_iam.never_called(calls, policies) == [], "granted but never called"


def test_missing_blob_is_missing_on_404_and_403(moto_env, tmp_path):
    """S3 answers NoSuchKey (404) for a missing key to a caller holding s3:ListBucket and
    AccessDenied (403) to one without it (S3 API reference, GetObject, "Permissions"):
    both are a missing blob (KeyError). moto answers 404 whatever the policy, so the 403 is
    moto's real AccessDenied for a key the role may not read."""
    app = load_app(fan_in_app(tmp_path / "app"))
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    env = specs[dep.function("Work").name].env
    s3 = boto3.client("s3", aws_access_key_id=env["AWS_ACCESS_KEY_ID"],
                      aws_secret_access_key=env["AWS_SECRET_ACCESS_KEY"], aws_session_token=env["AWS_SESSION_TOKEN"])
    granted = S3BlobStore(bucket, dep.blobs.prefix, s3)
    granted.put("s1", "present", b"1")
    assert granted.get("s1", "present") == b"1"
    with pytest.raises(KeyError):
        granted.get("s1", "absent")                         # 404 NoSuchKey
    outside = S3BlobStore(bucket, "elsewhere/", s3)
    with pytest.raises(s3.exceptions.ClientError) as denied:  # the role may not write there
        outside.put("s1", "x", b"1")
    assert denied.value.response["Error"]["Code"] == "AccessDenied"
    with pytest.raises(KeyError):
        outside.get("s1", "absent")                         # 403 AccessDenied


def test_rendered_policy_grants_list_bucket_without_a_prefix_condition():
    """A GetObject request carries no s3:prefix key, so a ListBucket grant conditioned on it
    would not apply and a missing blob would be a 403: the table grants ListBucket on the
    bucket itself, and iam.tf renders no condition."""
    perms = role_permissions()
    assert perms["ListBlobs"] == ["s3:ListBucket"]
    assert "dynamodb:GetItem" in perms["Datastore"]
    from pathlib import Path
    tf = (Path(__file__).resolve().parents[2] / "terraform/modules/aws-unum-function/iam.tf").read_text()
    assert "condition" not in tf and "s3:prefix" not in tf


def test_checker_catches_an_ungranted_call_and_an_unused_grant():
    """The checks on injected faults: a call outside its role's resources, an operation no
    adapter may make, and a granted action no call needed."""
    fn = "app-F"
    arn = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:"
    policy = {"Statement": [
        {"Sid": INVOKE, "Effect": "Allow", "Action": ["lambda:InvokeFunction"], "Resource": [arn + "app-G"]},
        {"Sid": "Datastore", "Effect": "Allow", "Action": ["dynamodb:GetItem", "dynamodb:Scan"],
         "Resource": [f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/t"]}]}
    policies = {f"{fn}/K1": policy}
    ok = [{"function": fn, "key": "K1", "op": "lambda:Invoke", "params": {"function": "app-G"}},
          {"function": fn, "key": "K1", "op": "dynamodb:GetItem", "params": {"table": "t"}}]
    assert test_iam.check_calls(ok, policies, REGION, ACCOUNT) == []
    bad = ok + [{"function": fn, "key": "K1", "op": "lambda:Invoke", "params": {"function": "app-H"}},
                {"function": fn, "key": "K1", "op": "dynamodb:GetItem", "params": {"table": "other"}},
                {"function": fn, "key": "K1", "op": "dynamodb:Scan", "params": {"table": "t"}},
                {"function": fn, "key": "K2", "op": "dynamodb:GetItem", "params": {"table": "t"}}]
    problems = test_iam.check_calls(bad, policies, REGION, ACCOUNT)
    assert len(problems) == 4 and any("app-H" in p for p in problems) and \
        any("table/other" in p for p in problems) and any("not in runtime/aws/iam.py" in p for p in problems) \
        and any("without a recorded policy" in p for p in problems)
    assert test_iam.never_called(ok, policies) == ["dynamodb:Scan"]
    # a qualified Invoke (a session pinned to its version) needs the qualified ARN: `app-G` alone
    # does not grant `app-G:3`; `app-G:*` does (unumctl/aws/policies.py invoke_names)
    pinned = [{"function": fn, "key": "K1", "op": "lambda:Invoke", "params": {"function": "app-G:3"}}]
    assert any("app-G:3" in p for p in test_iam.check_calls(pinned, policies, REGION, ACCOUNT))
    policy["Statement"][0]["Resource"].append(arn + "app-G:*")
    assert test_iam.check_calls(pinned, policies, REGION, ACCOUNT) == []
    assert {p.operation for p in PERMISSIONS if p.resource == "Datastore"} >= {"dynamodb:GetItem"}
