"""AWS service integrations on the gcp target (issue 24 item 2): refused at validate/plan
naming the state unless `clouds.gcp.aws_credentials_secret` names a Secret Manager secret
holding the AWS access key pair; then the functions that run such Tasks (and only those) get
it as a secret environment variable (UNUM_AWS_CREDENTIALS, runtime.asl.integrations.sdk) and
read access to that secret only. The rendered Terraform is formatted and checked against the
google provider schema snapshot (unumctl/gcp/checks/tf_schema.py). The runtime side (the key
pair used for the calls) is tested on moto in tests/aws/test_integrations_iam_aws.py."""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from runtime.asl.integrations.sdk import ENV_AWS_CREDENTIALS
from unumctl.deploy.appgraph import build
from unumctl.pipeline import deployment
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_sfn_app

pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")
from unumctl.gcp.checks import tf_schema  # noqa: E402

ECHO = "def handler(event, context):\n    return event\n"
MACHINE = {"StartAt": "Echo", "States": {
    "Echo": {"Type": "Task", "Resource": "Echo", "Next": "Notify"},
    "Notify": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "Next": "Last",
               "Parameters": {"TopicArn": "arn:aws:sns:us-east-1:123456789012:done", "Message.$": "$"}},
    "Last": {"Type": "Task", "Resource": "Last", "End": True}}}


def app_with(tmp_path, secret=None):
    root = make_sfn_app(tmp_path / "app", MACHINE, {"Echo": ECHO, "Last": ECHO}, "gcp-aws")
    if secret is not None:
        m = yaml.safe_load((root / "unumctl.yaml").read_text())
        m["clouds"] = {"gcp": {"aws_credentials_secret": secret}}
        (root / "unumctl.yaml").write_text(yaml.safe_dump(m))
    return load_app(root)


def test_without_the_secret_the_integration_is_refused_naming_the_state(tmp_path):
    with pytest.raises(AppError) as e:
        build(app_with(tmp_path), "gcp", project="p")
    msg = str(e.value)
    assert "States.Notify.Resource: arn:aws:states:::sns:publish is an AWS service integration" in msg
    assert "clouds.gcp.aws_credentials_secret" in msg and "\n" not in msg


def test_with_the_secret_only_the_function_running_the_task_gets_it(tmp_path):
    dep = build(app_with(tmp_path, "aws-keys"), "gcp", project="p")
    assert {f.unum_name: f.secrets for f in dep.functions} == {
        "Echo": {ENV_AWS_CREDENTIALS: "aws-keys"}, "Last": {}}
    assert all(ENV_AWS_CREDENTIALS not in f.environment for f in dep.functions)  # never a plain variable


@pytest.mark.parametrize("bad", ["projects/p/secrets/x", "AKIA/abc+def==", "x" * 256, ""])
def test_a_bad_secret_id_is_one_line_naming_the_field(tmp_path, bad):
    with pytest.raises(AppError) as e:
        build(app_with(tmp_path, bad), "gcp", project="p")
    msg = str(e.value)
    assert "clouds.gcp.aws_credentials_secret" in msg and "Secret Manager secret id" in msg, msg
    assert "\n" not in msg


def test_rendered_secret_environment_matches_the_schema(tmp_path):
    """The rendered root passes the secret to the function running the Task only; the
    module renders it as a `secret_environment_variables` block of the function (latest
    version) and a conditioned secretAccessor grant; fmt-clean and schema-checked."""
    from unumctl.gcp.render import PROVIDER_VERSION, render
    app = app_with(tmp_path, "aws-keys")
    out, _ = render(app, deployment(app, "gcp", project="demo-project", region="europe-west1"))
    problems, seen = tf_schema.check_dir(out, tf_schema.load_schema(PROVIDER_VERSION))
    assert problems == []
    with open(out / "main.tf") as fh:
        doc = tf_schema.hcl2.load(fh)
    calls = {k.strip('"'): v for m in doc["module"] for k, v in m.items()}  # python-hcl2 keeps the quotes
    assert calls["fn_Echo"]["secret_environment"] == {ENV_AWS_CREDENTIALS: '"aws-keys"'}
    assert "secret_environment" not in calls["fn_Last"]
    module = (out / "modules/gcp-unum-function/main.tf").read_text()
    assert 'dynamic "secret_environment_variables"' in module and 'version    = "latest"' in module
    iam = (out / "modules/gcp-unum-function/iam.tf").read_text()
    assert '"roles/secretmanager.secretAccessor"' in iam and "for_each = local.own_account ? var.secret_environment : tomap({})" in iam
    if shutil.which("terraform"):
        fmt = subprocess.run(["terraform", "fmt", "-check", "-recursive", str(out)], capture_output=True, text=True)
        assert fmt.returncode == 0, fmt.stdout + fmt.stderr


def test_boto3_goes_only_into_the_bundles_of_functions_that_call_aws(tmp_path):
    """The integrations import boto3: with the secret set, the archive of the function that
    runs the Task requires it (runtime/gcp/requirements-aws.txt); the others do not."""
    import zipfile
    app = app_with(tmp_path, "aws-keys")
    dep = deployment(app, "gcp", project="p")
    reqs = {f.unum_name: zipfile.ZipFile(f.zip_path).read("requirements.txt").decode() for f in dep.functions}
    assert "boto3>=" in reqs["Echo"] and "boto3" not in reqs["Last"]
