"""`unumctl emulate aws` (docs/aws.md "Rehearse on emulators"): the command as a user runs it
(environment printed and written, moto over HTTPS, the Lambda endpoint forwarding to moto,
stopped by a signal with nothing left running), the product code it runs
(unumctl.aws.emulate.run.emulate) running functions created on moto through its Lambda
endpoint, as Terraform creates them, with the app's TLS-only bucket policy in place, and the
whole rehearsal (emulate, apply, invoke) as an `aws_long` test (`make test-aws-all`)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from runtime.aws.invoker import LambdaInvoker
from unumctl.aws.target import AwsTarget
from unumctl.cli import app as cli
from unumctl.pipeline import deployment
from unumctl.aws.emulate.moto_local import find_moto_server
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests

from unumctl_testing.emulate_cli import UNUMCTL, start_emulate, stop_emulate
from unumctl_testing.apps import copy_example, example_dirs, make_app

TLS_ONLY = {"Sid": "DenyInsecureTransport", "Effect": "Deny", "Principal": "*", "Action": "s3:*",
            "Condition": {"Bool": {"aws:SecureTransport": "false"}}}


@pytest.fixture(autouse=True)
def _no_policy_check(aws_calls, monkeypatch):
    """emulate runs functions created through moto's own Lambda API under their real roles,
    with moto's IAM enforcement off (as a user's rehearsal runs): conftest.aws_calls's check
    against the twin roles' recorded policies (tests/aws/test_iam_aws.py) does not apply."""
    monkeypatch.delenv("UNUM_RECORD_CALLS", raising=False)


@pytest.fixture
def needs_moto():
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'unumctl[emulate]')")
    if not (os.environ.get("UNUMCTL_TERRAFORM") or shutil.which("terraform")):
        pytest.skip("terraform binary not on PATH (unumctl emulate aws requires it)")


def test_emulate_aws_command_prints_env_forwards_and_stops_cleanly(needs_moto, tmp_path):
    env_file = tmp_path / "emu.env"
    proc, env = start_emulate(["aws"], env_file)
    try:
        assert env_file.stat().st_mode & 0o777 == 0o600
        assert env["AWS_ENDPOINT_URL"].startswith("https://127.0.0.1:")
        assert env["AWS_ENDPOINT_URL_LAMBDA"].startswith("http://127.0.0.1:")
        assert Path(env["AWS_CA_BUNDLE"]).is_file() and env["AWS_REGION"] == "us-east-1"
        kw = dict(region_name="us-east-1", aws_access_key_id="testing", aws_secret_access_key="testing",
                  verify=env["AWS_CA_BUNDLE"])
        ddb = boto3.client("dynamodb", endpoint_url=env["AWS_ENDPOINT_URL"], **kw)
        assert ddb.list_tables()["TableNames"] == []  # moto answers over HTTPS, trusted by the bundle
        # a control-plane request to the Lambda endpoint is moto's answer (forwarded)
        lam = boto3.client("lambda", endpoint_url=env["AWS_ENDPOINT_URL_LAMBDA"], **kw)
        with pytest.raises(lam.exceptions.ResourceNotFoundException):
            lam.get_function(FunctionName="nothing-here")
        assert lam.list_functions()["Functions"] == []
    except BaseException:
        proc.kill()
        raise
    stop_emulate(proc, signal.SIGINT, env_file)


def test_emulate_aws_missing_terraform_is_one_line(needs_moto, monkeypatch, tmp_path):
    monkeypatch.delenv("UNUMCTL_TERRAFORM", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))  # no terraform (moto_server is found beside python)
    res = CliRunner().invoke(cli, ["emulate", "aws"])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "terraform not found on PATH" in lines[0] and \
        "developer.hashicorp.com/terraform/install" in lines[0], res.stderr


SIZE = """
def handler(event, context):
    return {"n": len(event), "head": event[:3]}
"""


def test_emulated_lambda_runs_functions_created_on_moto(needs_moto, tmp_path, monkeypatch):
    """What Terraform does on apply, by hand through the emulator's endpoints: CreateFunction
    (the built zip) and PutFunctionEventInvokeConfig on the Lambda endpoint, the datastore
    and the TLS-only bucket policy on moto; then AwsTarget.invoke (as `unumctl invoke --cloud
    aws`) runs the entry function, and a value over Lambda's async payload limit crosses S3
    under that policy (moto over HTTPS; moto_serialized.py's condition workaround)."""
    from unumctl.aws.emulate.run import emulate as emulate_aws

    app = load_app(make_app(tmp_path / "app", "emu-aws", {"Size": ({"Start": True}, SIZE)}))
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    with emulate_aws(tmp_path / "emu") as env:
        for k in ("AWS_PROFILE",):
            monkeypatch.delenv(k, raising=False)
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        create_datastore_for_tests(table, bucket)
        s3 = boto3.client("s3")
        s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps({"Version": "2012-10-17", "Statement": [
            {**TLS_ONLY, "Resource": [f"arn:aws:s3:::{bucket}", f"arn:aws:s3:::{bucket}/*"]}]}))
        iam = boto3.client("iam")
        role = iam.create_role(RoleName="emu-aws-role", AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
        lam = boto3.client("lambda")  # AWS_ENDPOINT_URL_LAMBDA: the emulator's endpoint
        for f in dep.functions + [dep.error_handler]:
            lam.create_function(FunctionName=f.name, Runtime="python3.11", Role=role, Handler=f.handler,
                                Code={"ZipFile": Path(f.zip_path).read_bytes()}, Timeout=int(f.timeout),
                                Environment={"Variables": dep.environment(table, bucket, f.is_error_handler)})
            if not f.is_error_handler:
                lam.put_function_event_invoke_config(
                    FunctionName=f.name, MaximumRetryAttempts=dep.params.max_retry_attempts,
                    DestinationConfig={"OnFailure": {"Destination": f"arn:aws:lambda:us-east-1:123456789012:"
                                                                    f"function:{dep.error_handler.name}"}})
        target = AwsTarget(app)
        monkeypatch.setattr(target, "outputs", lambda: {"entry_function": dep.entry, "table": table,
                                                         "bucket": bucket})
        large = "abc" + "x" * LambdaInvoker.max_payload_bytes
        results = [target.invoke(value, True, 120) for value in ("abcd", large)]
        # a re-apply with new code (UpdateFunctionCode through the endpoint) runs from the next Invoke on
        v2 = load_app(make_app(tmp_path / "app2", "emu-aws", {"Size": ({"Start": True}, SIZE_V2)}))
        lam.update_function_code(FunctionName=dep.entry,
                                 ZipFile=Path(deployment(v2, "aws").function("Size").zip_path).read_bytes())
        updated = target.invoke("abcd", True, 120)
    for (session, item), value in zip(results, ("abcd", large)):
        assert item is not None and item["status"] == "SUCCEEDED", (session, item)
        assert item["v"] == {"n": len(value), "head": "abc"}
    assert updated[1] is not None and updated[1]["v"] == {"n": 4, "version": 2}, updated


def test_on_failure_destination_is_looked_up_when_first_needed(needs_moto, tmp_path):
    """A handler that raises (Lambda-level failure) is retried MaximumRetryAttempts times, then
    its destination record goes to the on-failure function, which was never invoked before
    and is looked up in moto then (before: KeyError in the emulator, record lost)."""
    import io
    import zipfile

    from unumctl.aws.emulate.lambda_front import MotoLambda
    from unumctl.aws.emulate.moto_local import aws_env, moto_server

    app = load_app(make_app(tmp_path / "app", "emu-fail", {"Size": ({"Start": True}, SIZE)}))
    base = Path(deployment(app, "aws").function("Size").zip_path).read_bytes()
    out = tmp_path / "record.json"

    def with_module(name: str, code: str) -> bytes:
        buf = io.BytesIO()
        with zipfile.ZipFile(io.BytesIO(base)) as src, zipfile.ZipFile(buf, "w") as dst:
            for item in src.infolist():
                dst.writestr(item, src.read(item))
            dst.writestr(f"{name}.py", code)
        return buf.getvalue()

    with moto_server() as url, MotoLambda(url, tmp_path / "emu") as front:
        kw = {k.lower(): v for k, v in aws_env(url).items() if k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
        iam = boto3.client("iam", endpoint_url=url, region_name="us-east-1", **kw)
        role = iam.create_role(RoleName="r", AssumeRolePolicyDocument="{}")["Role"]["Arn"]
        lam = boto3.client("lambda", endpoint_url=front.url, region_name="us-east-1", **kw)
        lam.create_function(FunctionName="rec", Runtime="python3.11", Role=role, Handler="rec.handler",
                            Code={"ZipFile": with_module("rec", f"import json\ndef handler(e, c):\n"
                                                                f"    open({str(out)!r}, 'w').write(json.dumps(e))\n")})
        lam.create_function(FunctionName="boom", Runtime="python3.11", Role=role, Handler="boom.handler",
                            Code={"ZipFile": with_module("boom", "def handler(e, c):\n    raise RuntimeError('boom')\n")})
        lam.put_function_event_invoke_config(FunctionName="boom", MaximumRetryAttempts=1, DestinationConfig={
            "OnFailure": {"Destination": "arn:aws:lambda:us-east-1:123456789012:function:rec"}})
        lam.invoke(FunctionName="boom", InvocationType="Event", Payload=b'{"x": 1}')
        deadline = time.monotonic() + 60
        while not out.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        front.wait_idle(30)
        stats = dict(front.stats)
    record = json.loads(out.read_text())
    assert record["requestContext"]["condition"] == "RetriesExhausted"
    assert record["requestContext"]["approximateInvokeCount"] == 2 and record["requestPayload"] == {"x": 1}
    assert stats["runs:boom"] == 2 and stats["runs:rec"] == 1, stats


SIZE_V2 = """
def handler(event, context):
    return {"n": len(event), "version": 2}
"""


@pytest.mark.aws_long
def test_rehearsal_emulate_apply_invoke(needs_moto, tf_cli_config, tmp_path):
    """docs/aws.md "Rehearse on emulators", step by step with the CLI (about 3 minutes: the
    apply of 37 resources on moto):

        .venv/bin/python -m pytest -q tests/aws/test_emulate_aws.py --aws-all-examples
    """
    example = next(p for p in example_dirs() if p.name == "wordcount")
    app_dir = copy_example(example, tmp_path / "wordcount")
    env_file = tmp_path / "emu.env"
    proc, env = start_emulate(["aws"], env_file)
    try:
        run_env = {**{k: v for k, v in os.environ.items() if not k.startswith("AWS_")}, **env,
                   "TF_CLI_CONFIG_FILE": str(tf_cli_config)}
        applied = subprocess.run([UNUMCTL, "apply", str(app_dir), "--cloud", "aws", "--yes"], env=run_env,
                                 capture_output=True, text=True, timeout=900)
        assert applied.returncode == 0, applied.stderr[-3000:]
        inv = subprocess.run([UNUMCTL, "invoke", str(app_dir), "--cloud", "aws", "--data",
                              str(app_dir / "input.json"), "--timeout", "300"], env=run_env,
                             capture_output=True, text=True, timeout=400)
        assert inv.returncode == 0, inv.stderr[-3000:]
        assert json.loads(inv.stdout) == json.loads((app_dir / "expected_output.json").read_text())
    except BaseException:
        proc.kill()
        raise
    stop_emulate(proc, signal.SIGTERM, env_file)
