"""The rendered AWS Terraform, checked with the real terraform binary and hashicorp/aws
provider (filesystem mirror): fmt and validate for every example; the full
plan/apply/second-plan/destroy cycle against moto_server for one example in CI (all
examples with `pytest --aws-all-examples`, see tests/aws/README.md); least-privilege IAM on
the rendered policies; deterministic archives."""

from __future__ import annotations

import json
import os
import re
import shutil

import boto3
import pytest

from unumctl.pipeline import deployment
from unumctl.aws import names as aws_names
from unumctl.aws.settings import AWS_LAMBDA_RUNTIME
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import load as load_app
from unumctl.targets import TargetError
from unumctl.terraform import TerraformRunner
from unumctl_testing.aws.iam import policy_document

from unumctl_testing.apps import copy_example as _copy, example_dirs
from .conftest import aws_env

CYCLE_DEFAULT = ("text-processing",)


def copy_example(example, tmp_path):
    return _copy(example, tmp_path / example.name)


@pytest.fixture
def tf_env(tf_cli_config, monkeypatch):
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tf_cli_config))
    for k, v in {"AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "testing",
                 "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    return tf_cli_config


def test_rendered_terraform_fmt_and_validate(tmp_path, tf_env):
    """Every example's rendered root is formatted as `terraform fmt` writes it and valid. The
    roots are validated together, each called as a module with its own terraform.tfvars.json
    as arguments from one root (`main.tf.json`): one init and one validate instead of one
    per example (12 of each took 100 s of CI). The diagnostics name the module's files."""
    calls = {}
    for example in example_dirs():
        target = AwsTarget(load_app(copy_example(example, tmp_path)))
        target.render()
        runner = TerraformRunner(target.workdir, {"TF_CLI_CONFIG_FILE": str(tf_env)})
        assert runner.fmt_check() == [], example.name
        args = json.loads((target.workdir / "terraform.tfvars.json").read_text())
        calls[example.name] = {"source": os.path.relpath(target.workdir, tmp_path / "all"), **args}
    (tmp_path / "all").mkdir()
    (tmp_path / "all" / "main.tf.json").write_text(json.dumps({"module": calls}, indent=1))
    runner = TerraformRunner(tmp_path / "all", {"TF_CLI_CONFIG_FILE": str(tf_env)})
    runner.init()
    assert runner.validate()["valid"]


def assert_least_privilege(statements, app, bucket, stage="dev"):
    """No wildcard actions; no wildcard resources except those AWS cannot name in advance:
    log streams inside the function's own log group, objects under the app's blob prefix, the
    published versions of a successor (`function:NAME:*`, docs/versions.md "On AWS"), and,
    for an integration Task's nested execution, the executions of the state machine it names
    (their names are chosen at run time). Names are those of `stage` of `app`."""
    table = aws_names.table(app, stage)
    app = aws_names.app_stage(app, stage)  # the start of every function name of the stage
    assert statements
    for st in statements:
        actions = st["Action"] if isinstance(st["Action"], list) else [st["Action"]]
        resources = st["Resource"] if isinstance(st["Resource"], list) else [st["Resource"]]
        assert all("*" not in a for a in actions), st
        for r in resources:
            assert r != "*" and r.count("*") <= 1, st
            if "*" in r:
                assert (r.endswith(":log-stream:*") and f":log-group:/aws/lambda/{app}_" in r) or \
                    (st.get("Sid") == "InvokeSuccessors" and r.endswith(f":function:{app}_*")) or \
                    (st.get("Sid") == "InvokeSuccessors" and re.fullmatch(  # a function's versions
                        rf"arn:aws:lambda:[a-z0-9-]+:\d{{12}}:function:{re.escape(app)}_[A-Za-z0-9_-]+:\*", r)) or \
                    r == f"arn:aws:s3:::{bucket}/s/*" or \
                    (st.get("Sid", "").startswith("Integration") and re.fullmatch(
                        r"arn:aws:states:[a-z0-9-]+:\d{12}:execution:[A-Za-z0-9_-]+:\*", r)), st
        if st.get("Sid") == "InvokeSuccessors":
            assert all(f":function:{app}_" in r for r in resources), st
        if st.get("Sid") == "Datastore":
            assert resources == [f"arn:aws:dynamodb:us-east-1:123456789012:table/{table}"], st


def _statements(doc):
    """Sid -> (sorted actions, sorted resources, condition) of a policy document."""
    def listed(v):
        return sorted(v if isinstance(v, list) else [v])
    return {st.get("Sid"): (listed(st["Action"]), listed(st["Resource"]), st.get("Condition"))
            for st in doc["Statement"]}


def _cycle(example, tmp_path, moto_url, monkeypatch):
    app_dir = copy_example(example, tmp_path)
    for k, v in aws_env(moto_url).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_LAMBDA", raising=False)
    target = AwsTarget(load_app(app_dir))
    # the shared moto may hold log groups of this app's functions: other tests' emulated Lambda
    # created them on a first invocation, as Lambda does; here Terraform must create them
    logs = boto3.client("logs", endpoint_url=moto_url)
    for g in logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{target.app.name}-dev_")["logGroups"]:
        logs.delete_log_group(logGroupName=g["logGroupName"])
    with pytest.raises(TargetError, match="not deployed on aws yet; run: unumctl apply"):
        target.invoke({"x": 1}, False, 1)
    streamed: list[str] = []
    monkeypatch.setattr("unumctl.terraform._to_stderr", streamed.append)
    first = target.plan()
    assert first["add"] > 0 and first["change"] == first["destroy"] == 0
    assert any(ln.startswith("Plan: ") for ln in streamed)  # Terraform's own lines, as they came
    dep = deployment(target.app, "aws")
    planned = first["resources"]
    assert len(planned["add"]) == first["add"] and planned["change"] == planned["destroy"] == []
    for f in dep.functions + [dep.error_handler]:  # one Lambda per function, by its address
        module = "error_handler" if f.is_error_handler else f"fn_{f.unum_name}"
        assert f"module.{module}.aws_lambda_function.this" in planned["add"], planned["add"]
    assert "module.datastore.aws_dynamodb_table.this" in planned["add"]
    streamed.clear()
    applied = target.apply(yes=True)
    assert any("Creation complete" in ln for ln in streamed)  # apply's progress was streamed
    out = applied["outputs"]
    assert out["entry_function"] == dep.entry and out["table"] == dep.table
    ddb, lam, s3, iam = (boto3.client(s) for s in ("dynamodb", "lambda", "s3", "iam"))
    ttl = ddb.describe_time_to_live(TableName=out["table"])["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "ENABLED" and ttl["AttributeName"] == "expires_at"
    assert ddb.describe_table(TableName=out["table"])["Table"]["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
    assert s3.get_public_access_block(Bucket=out["bucket"])["PublicAccessBlockConfiguration"]["BlockPublicPolicy"]
    names = {f.name for f in dep.functions} | {dep.error_handler.name}
    assert {v["name"] for v in out["functions"].values()} | {out["error_handler"]} == names
    eh_arn = lam.get_function(FunctionName=out["error_handler"])["Configuration"]["FunctionArn"]
    for f in dep.functions:
        cfg = lam.get_function(FunctionName=f.name)["Configuration"]
        assert cfg["Runtime"] == AWS_LAMBDA_RUNTIME and cfg["Handler"] == "unum_entry.lambda_handler"
        assert cfg["Environment"]["Variables"]["UNUM_TABLE"] == out["table"]
        eic = lam.get_function_event_invoke_config(FunctionName=f.name)
        assert eic["MaximumRetryAttempts"] == dep.params.max_retry_attempts
        assert eic["DestinationConfig"]["OnFailure"]["Destination"] == eh_arn
    # the error handler's own failures go to the app's SQS queue, which its role may send to
    queue_arn = boto3.client("sqs").get_queue_attributes(
        QueueUrl=out["failure_queue"], AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    eic = lam.get_function_event_invoke_config(FunctionName=out["error_handler"])
    assert eic["DestinationConfig"]["OnFailure"]["Destination"] == queue_arn
    doc = iam.get_role_policy(RoleName=dep.error_handler.role.name, PolicyName="unum")["PolicyDocument"]
    doc = json.loads(doc) if isinstance(doc, str) else doc
    send = next(st for st in doc["Statement"] if st.get("Sid") == "OnFailureQueue")
    assert send["Action"] in ("sqs:SendMessage", ["sqs:SendMessage"]) and send["Resource"] in (queue_arn, [queue_arn])
    # TLS only: the bucket policy denies every request made without it
    policy = json.loads(s3.get_bucket_policy(Bucket=out["bucket"])["Policy"])
    deny = [st for st in policy["Statement"] if st["Effect"] == "Deny"]
    assert deny and deny[0]["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    for f in dep.functions + [dep.error_handler]:
        doc = iam.get_role_policy(RoleName=f.role.name, PolicyName="unum")["PolicyDocument"]
        doc = json.loads(doc) if isinstance(doc, str) else doc
        assert_least_privilege(doc["Statement"], dep.app, out["bucket"])
        # the applied policy is the one the emulated runs sign with (runtime/aws/iam.py's table
        # through iam.tf, and unumctl_testing/aws/iam.py): same statements, actions, resources
        rendered = policy_document(dep, f, out["table"], out["bucket"], "us-east-1", "123456789012", queue_arn)
        assert _statements(doc) == _statements(rendered), f.name
        invokes = next(st for st in doc["Statement"] if st.get("Sid") == "InvokeSuccessors")["Resource"]
        invokes = invokes if isinstance(invokes, list) else [invokes]
        expected = [n + q for n in [dep.function(s).name for s in f.invokes] +
                    ([] if f.is_error_handler else [dep.error_handler.name])
                    for q in ("", ":*")]  # each unqualified and all its versions (unumctl/aws/policies.py)
        if f.is_error_handler:  # any function of the app, by its name pattern (unumctl/aws/policies.py)
            expected = [aws_names.function_pattern(dep.app, dep.stage)]
        assert sorted(r.split(":function:")[1] for r in invokes) == sorted(expected)
    second = target.plan()
    assert not second["changes"], f"second plan is not empty: {second}"
    assert second["resources"] == {"add": [], "change": [], "destroy": [], "replace": []}
    streamed.clear()
    destroyed = target.destroy(yes=True)["destroyed"]
    assert sorted(destroyed) == planned["add"]  # everything created, by address
    assert any("Destruction complete" in ln for ln in streamed)
    assert out["table"] not in ddb.list_tables()["TableNames"]
    assert not [f for f in lam.list_functions().get("Functions", []) if f["FunctionName"] in names]
    assert out["bucket"] not in [b["Name"] for b in s3.list_buckets()["Buckets"]]


@pytest.mark.parametrize("example", [
    pytest.param(p, marks=() if p.name in CYCLE_DEFAULT else pytest.mark.aws_long) for p in example_dirs()],
    ids=lambda p: p.name)
def test_plan_apply_replan_destroy_on_moto(example, tmp_path, tf_env, moto_without_iam, monkeypatch):
    moto_url = moto_without_iam
    _cycle(example, tmp_path, moto_url, monkeypatch)


def test_rebuild_keeps_archive_hashes(tmp_path):
    app = load_app(copy_example(next(p for p in example_dirs() if p.name == "wordcount"), tmp_path))
    first = deployment(app, "aws")
    shutil.rmtree(app.root / ".unum")
    second = deployment(app, "aws")
    assert [(f.name, f.zip_sha256) for f in first.functions + [first.error_handler]] == \
        [(f.name, f.zip_sha256) for f in second.functions + [second.error_handler]]
    names = {n for n in __import__("zipfile").ZipFile(first.functions[0].zip_path).namelist()}
    assert "unum_entry.py" in names and any(n.startswith("simpleeval") for n in names)
    assert not any(n.startswith("runtime/local/") for n in names)


@pytest.mark.aws_long  # a full apply on moto: about 2 minutes (make test-aws-all)
def test_integration_statements_applied_on_moto(tmp_path, tf_env, moto_without_iam, monkeypatch):
    """A Step Functions app whose Tasks call DynamoDB, SNS, SQS, EventBridge and Step
    Functions: the role Terraform applies holds their statements (iam.tf fills in the
    partition, region and account of the ARN templates) exactly as the policy the
    IAM-enforced runs sign with (unumctl_testing/aws/iam.py policy_document), with no `*`
    resource (every resource is static here), through a full plan/apply/replan/destroy."""
    from tests.aws.test_integrations_iam_aws import machine
    from unumctl_testing.apps import make_sfn_app
    m = machine("orders", "arn:aws:sns:us-east-1:123456789012:done",
                "https://sqs.us-east-1.amazonaws.com/123456789012/work")
    m["States"].pop("Depth")  # aws-sdk: a `*` resource, which this test's least-privilege check refuses
    m["States"]["Announce"]["Next"] = "Send"
    m["States"]["Send"].pop("End")
    m["States"]["Send"]["Next"] = "Events"
    m["States"]["Events"] = {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents", "Next": "Child",
                             "Parameters": {"Entries": [{"Source": "unum", "DetailType": "done", "Detail": {},
                                                         "EventBusName": "orders-bus"}]}}
    m["States"]["Child"] = {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution", "End": True,
                            "Parameters": {"StateMachineArn": "arn:aws:states:us-east-1:123456789012:stateMachine:child"}}
    app_dir = make_sfn_app(tmp_path / "src" / "integ-tf", m, {"Echo": "def handler(e, c):\n    return e\n"},
                           "integ-tf")
    dep = deployment(load_app(app_dir), "aws")
    assert len(dep.function("Echo").role.integrations) == 7  # StartExecution, DescribeExecution apart
    _cycle(app_dir, tmp_path, moto_without_iam, monkeypatch)
