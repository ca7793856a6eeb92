"""Lambda's deployment-package limits (unumctl/aws/archive_limits.py; issue 23 item 2): a
function whose archive is over the 50 MB direct-upload limit is uploaded through the app's
bucket (aws_s3_object + s3_bucket/s3_key) and applies on moto; one over the 250 MB unzipped
limit is a one-line error before Terraform runs. The apply on moto takes ~3 min and is
`aws_long` (make test-aws-all, or: pytest tests/aws/test_archive_limits_aws.py --aws-all-examples).

The big files are written in tmp: random bytes (they do not compress) for the 60 MB function;
zeros for the unzipped-limit one, so that its archive is small and only the unzipped size is
over (the check reads the sizes the zip records, whatever it compresses to).
"""

from __future__ import annotations

import os
import zipfile

import boto3
import pytest
from typer.testing import CliRunner

from unumctl.aws.archive_limits import LAMBDA_DIRECT_UPLOAD_MAX, LAMBDA_UNZIPPED_MAX, via_s3
from unumctl.aws.package import PackagingError
from unumctl.aws.target import AwsTarget
from unumctl.cli import app as cli
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app
from .conftest import aws_env

HANDLER = "def handler(event, context):\n    return event\n"


def _app(tmp_path, name):
    return make_app(tmp_path / name, name, {"Big": ({"Start": True}, HANDLER)})


def test_via_s3_and_the_unzipped_limit(tmp_path):
    small = tmp_path / "small.zip"
    with zipfile.ZipFile(small, "w") as zf:
        zf.writestr("app.py", HANDLER)
    assert via_s3("Small", small) is False
    big = tmp_path / "big.zip"
    with zipfile.ZipFile(big, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("blob.bin", os.urandom(LAMBDA_DIRECT_UPLOAD_MAX + 1))
    assert via_s3("Big", big) is True
    huge = tmp_path / "huge.zip"
    with zipfile.ZipFile(huge, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("data/zeros.bin", bytes(LAMBDA_UNZIPPED_MAX - 1000))
        zf.writestr("data/more.bin", bytes(2000))
        zf.writestr("app.py", HANDLER)
    with pytest.raises(PackagingError) as exc:
        via_s3("Huge", huge)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith("functions.Huge: the Lambda archive unzips to 250.0 MB")
    assert "biggest files: data/zeros.bin (250.0 MB), data/more.bin (0.0 MB), app.py" in msg


def test_over_the_unzipped_limit_is_one_line(tmp_path, tf_cli_config, moto_url):
    root = _app(tmp_path, "huge-app")
    with open(root / "functions" / "big" / "zeros.bin", "wb") as f:
        f.truncate(LAMBDA_UNZIPPED_MAX + 1)  # a sparse file: zeros, no disk blocks
    # moto's endpoints, so that even a regression reaching Terraform stays on 127.0.0.1
    env = {**aws_env(moto_url), "AWS_PROFILE": None, "TF_CLI_CONFIG_FILE": str(tf_cli_config)}
    result = CliRunner().invoke(cli, ["plan", str(root), "--cloud", "aws"], env=env)
    lines = [ln for ln in result.stderr.splitlines() if ln.startswith("unumctl:")]
    assert result.exit_code == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "functions.Big: the Lambda archive unzips to" in lines[0] and "zeros.bin (250.0 MB)" in lines[0]
    assert not list((root / ".unum" / "terraform").rglob("main.tf"))  # nothing rendered


@pytest.fixture
def big_target(tmp_path, tf_cli_config, moto_url, monkeypatch):
    """An app whose one function carries 60 MB of random bytes, on moto."""
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tf_cli_config))
    for k, v in aws_env(moto_url).items():
        monkeypatch.setenv(k, v)
    for k in ("AWS_ENDPOINT_URL_LAMBDA", "AWS_PROFILE"):
        monkeypatch.delenv(k, raising=False)
    root = _app(tmp_path, "big-app")
    (root / "functions" / "big" / "model.bin").write_bytes(os.urandom(60 * 1024 * 1024))
    return AwsTarget(load_app(root))


def _rendered_via_s3(target):
    """Build and render; check that Big (only) is uploaded through the app's bucket. Returns
    (Big's model, zip size). (The module's store_on_s3 branch passes `terraform validate` in
    its example, tests/aws/test_terraform_modules_aws.py.)"""
    big = next(f for f in target.render().functions if f.unum_name == "Big")
    size = big.zip_path.stat().st_size
    assert size > LAMBDA_DIRECT_UPLOAD_MAX
    main = (target.workdir / "main.tf").read_text()
    block = main[main.index('module "fn_Big"'):]
    block = block[:block.index("\n}\n")]
    assert "store_on_s3            = true" in block and "s3_bucket              = module.datastore.bucket_name" in block
    assert main.count("store_on_s3") == 1  # Big only: the error handler's archive is small
    return big, size


def test_60mb_function_renders_an_s3_upload(big_target):
    _rendered_via_s3(big_target)


@pytest.mark.aws_long  # ~3 min: 60 MB through moto_server (one request at a time) and back
def test_60mb_function_applies_on_moto(big_target, moto_without_iam):
    # IAM enforcement off, as for Terraform's other cycles on moto (tests/aws/conftest.py):
    # with it on, the provider's GetFunction wait after CreateFunction got a 403
    moto_url = moto_without_iam
    target = big_target
    try:
        big, size = _rendered_via_s3(target)
        plan = target.plan()
        assert "module.fn_Big.aws_s3_object.package[0]" in plan["resources"]["add"]
        assert "module.error_handler.aws_s3_object.package[0]" not in plan["resources"]["add"]
        # moto gap: a bucket policy Deny with a Condition denies every object PUT, since moto
        # evaluates the statement with no condition values (moto/iam/access_control.py
        # IAMPolicyStatement._check_conditions; moto/s3/responses.py put_object), so the
        # datastore's TLS-only policy (Deny when aws:SecureTransport is false) refuses
        # Terraform's upload. The function module and what it depends on are applied without
        # that policy; the upload and CreateFunction from S3 are what is checked here.
        runner = target._runner()
        runner._check("apply", *runner._cmd("apply", "-input=false", "-auto-approve", "-target=module.fn_Big"))
        s3 = boto3.client("s3", endpoint_url=moto_url)
        (bucket,) = [b["Name"] for b in s3.list_buckets()["Buckets"] if b["Name"].startswith("unum-big-app-")]
        objs = s3.list_objects_v2(Bucket=bucket, Prefix="packages/")["Contents"]
        assert [(o["Key"], o["Size"]) for o in objs] == [(f"packages/{big.name}/{big.zip_path.name}", size)]
        cfg = boto3.client("lambda", endpoint_url=moto_url).get_function(FunctionName=big.name)["Configuration"]
        assert cfg["CodeSize"] == size
    finally:
        target.destroy(yes=True)
