"""`unumctl ... --cloud aws` errors the user can fix are one line with the next step:
missing credentials, missing terraform binary, invoke before apply, a failed apply."""

from __future__ import annotations

import shutil

import boto3
import pytest
from typer.testing import CliRunner

from unumctl.cli import app as cli

from unumctl_testing.apps import example_dirs
from .conftest import aws_env


@pytest.fixture
def app_dir(tmp_path):
    src = next(p for p in example_dirs() if p.name == "iot-pipeline")
    dst = tmp_path / "iot"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".unum"))
    return dst


def run(args, env):
    result = CliRunner().invoke(cli, args, env=env)
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("unumctl:")]
    return result.exit_code, lines


NO_CREDS = {"AWS_ACCESS_KEY_ID": None, "AWS_SECRET_ACCESS_KEY": None, "AWS_SESSION_TOKEN": None,
            "AWS_PROFILE": None, "AWS_CONFIG_FILE": "/nonexistent/config",
            "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/credentials",
            "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONTAINER_CREDENTIALS_FULL_URI": None,
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": None, "AWS_WEB_IDENTITY_TOKEN_FILE": None}


def test_missing_credentials_is_one_line(app_dir):
    code, lines = run(["--region", "us-east-1", "plan", str(app_dir), "--cloud", "aws"], NO_CREDS)
    assert code == 2 and len(lines) == 1
    assert "no AWS credentials found" in lines[0] and "aws configure" in lines[0]


def test_missing_region_is_one_line(app_dir):
    env = {**NO_CREDS, "AWS_REGION": None, "AWS_DEFAULT_REGION": None}
    code, lines = run(["plan", str(app_dir), "--cloud", "aws"], env)
    assert code == 2 and len(lines) == 1 and "clouds.aws.region" in lines[0]


def test_missing_terraform_is_one_line(app_dir, tmp_path):
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
           "PATH": str(tmp_path), "UNUMCTL_TERRAFORM": None}
    code, lines = run(["plan", str(app_dir), "--cloud", "aws"], env)
    assert code == 2 and len(lines) == 1 and "terraform binary not found" in lines[0]


def test_invoke_before_apply_is_one_line(app_dir):
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}
    code, lines = run(["invoke", str(app_dir), "--cloud", "aws", "--data", str(app_dir / "input.json")], env)
    assert code == 2 and len(lines) == 1
    assert "not deployed on aws yet; run: unumctl apply" in lines[0]


@pytest.mark.aws_long
def test_failed_apply_is_one_line(app_dir, tf_cli_config, moto_without_iam):
    moto_url = moto_without_iam
    env = {**aws_env(moto_url), "TF_CLI_CONFIG_FILE": str(tf_cli_config)}
    ddb = boto3.client("dynamodb", endpoint_url=moto_url, region_name="us-east-1",
                       aws_access_key_id="testing", aws_secret_access_key="testing")
    ddb.create_table(TableName="unum-iot-pipeline", BillingMode="PAY_PER_REQUEST",  # a conflict
                     AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}])
    try:
        code, lines = run(["apply", str(app_dir), "--cloud", "aws", "--yes"], env)
        assert code == 2 and len(lines) == 1, lines
        assert "terraform apply failed" in lines[0] and "re-run: unumctl apply" in lines[0]
    finally:
        CliRunner().invoke(cli, ["destroy", str(app_dir), "--cloud", "aws", "--yes"], env=env)
        ddb.delete_table(TableName="unum-iot-pipeline")
