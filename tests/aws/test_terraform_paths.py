"""CLI friction on --cloud aws found in the trial (issue 10, item 4), without a real cloud:
a relative app path for `plan` (the Terraform CLI config path must be absolute), and
`invoke` on a deployment where nothing executes the functions (moto without Docker)."""

from __future__ import annotations

import io
import json
import os
import shutil
import uuid
import zipfile
from pathlib import Path

import boto3
import pytest

from unumctl.terraform import absolute_paths, write_mirror_cli_config

from unumctl_testing.apps import example_dirs


@pytest.fixture
def rel_app(tmp_path, monkeypatch):
    """iot-pipeline copied under tmp_path, with the working directory set so that its path
    is relative ("iot")."""
    src = next(p for p in example_dirs() if p.name == "iot-pipeline")
    shutil.copytree(src, tmp_path / "iot", ignore=shutil.ignore_patterns(".unum"))
    monkeypatch.chdir(tmp_path)
    return Path("iot")


def test_mirror_cli_config_path_is_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mirror").mkdir()
    cfg = write_mirror_cli_config(Path("rc"), Path("mirror"))
    assert cfg.is_absolute() and cfg == tmp_path / "rc"
    assert f'path    = "{tmp_path / "mirror"}"' in cfg.read_text()


def test_relative_tf_variables_made_absolute(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    env = absolute_paths({"TF_CLI_CONFIG_FILE": "a/rc", "X": "y"}, base={"TF_PLUGIN_CACHE_DIR": "cache"})
    assert env == {"TF_CLI_CONFIG_FILE": str(tmp_path / "a" / "rc"), "X": "y",
                   "TF_PLUGIN_CACHE_DIR": str(tmp_path / "cache")}
    assert absolute_paths({"TF_CLI_CONFIG_FILE": ""}, base={}) == {"TF_CLI_CONFIG_FILE": ""}


def test_plan_relative_app_path_runner_env(rel_app, monkeypatch):
    """The runner AwsTarget builds for a relative app path runs Terraform in an absolute
    directory with an absolute TF_CLI_CONFIG_FILE that exists."""
    from unumctl.pipeline import load as load_app
    from unumctl.targets import get_target
    from unumctl.terraform import find_provider_mirror

    if shutil.which("terraform") is None and not os.environ.get("UNUMCTL_TERRAFORM"):
        pytest.skip("terraform binary not on PATH")
    if find_provider_mirror("hashicorp/aws") is None:
        pytest.skip("hashicorp/aws provider filesystem mirror not found (set UNUMCTL_TF_PLUGIN_MIRROR)")
    monkeypatch.delenv("TF_CLI_CONFIG_FILE", raising=False)
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    target = get_target("aws", load_app(rel_app))
    runner = target._runner()
    cfg = Path(runner.env["TF_CLI_CONFIG_FILE"])
    assert cfg.is_absolute() and cfg.is_file() and runner.workdir.is_absolute()
    # what failed in the trial: `terraform init` in the rendered module with that config
    target.render()
    runner.init()
    assert (runner.workdir / ".terraform").is_dir()


def test_user_relative_tf_cli_config_file(rel_app, tmp_path, monkeypatch):
    from unumctl.pipeline import load as load_app
    from unumctl.targets import get_target

    if shutil.which("terraform") is None and not os.environ.get("UNUMCTL_TERRAFORM"):
        pytest.skip("terraform binary not on PATH")
    (tmp_path / "my.tfrc").write_text("")
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "my.tfrc")
    monkeypatch.setenv("AWS_REGION", "us-east-1")  # the working directory is the region's
    runner = get_target("aws", load_app(rel_app))._runner()
    assert runner.env["TF_CLI_CONFIG_FILE"] == str(tmp_path / "my.tfrc")


# ---------------------------------------------------------------- invoke when nothing executes
def _moto_function(name: str) -> None:
    iam = boto3.client("iam")
    role = iam.create_role(RoleName=f"r-{uuid.uuid4().hex[:8]}", AssumeRolePolicyDocument=json.dumps({
        "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                "Principal": {"Service": "lambda.amazonaws.com"}}]}))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("app.py", "def handler(e, c):\n    return e\n")
    boto3.client("lambda").create_function(FunctionName=name, Runtime="python3.11", Handler="app.handler",
                                           Role=role["Role"]["Arn"], Code={"ZipFile": buf.getvalue()})


def test_invoke_when_nothing_executes_says_what_is_missing(rel_app, unum_table, monkeypatch):
    from unumctl.aws.target import AwsTarget
    from unumctl.pipeline import load as load_app
    from unumctl.targets import TargetError

    entry = f"iot-pipeline-Aggregate-{uuid.uuid4().hex[:6]}"
    _moto_function(entry)
    out = {"entry_function": entry, "table": unum_table, "bucket": unum_table,
           "functions": {"Aggregate": {"name": entry}}}
    monkeypatch.setattr(AwsTarget, "outputs", lambda self: out)
    target = AwsTarget(load_app(rel_app))
    with pytest.raises(TargetError) as info:
        target.invoke([{"t": 1}], True, 1.0, "run-1")
    msg = str(info.value)
    assert "\n" not in msg
    assert "nothing ran in 1 s" in msg and f"Invoke of {entry}" in msg
    assert f"no function wrote to table {unum_table}" in msg and "nothing executes the functions" in msg
    assert "unumctl result iot run-1 --cloud aws" in msg


def test_no_result_message_when_something_ran(unum_table):
    from runtime.aws.datastore import DynamoDBDatastore
    from runtime.session import START_RECORD
    from unumctl.aws.diagnose import no_result_message

    ds = DynamoDBDatastore(unum_table, boto3.client("dynamodb"))
    out = {"entry_function": "app-F", "table": unum_table}
    ds.put("s0", START_RECORD, {"sent": True}, 2e9)  # the starter's record: no function ran
    assert "nothing ran in 5 s" in no_result_message(ds, "s0", out, 5, "app")
    ds.put("s1", "ckpt/F", {"v": 1}, 2e9)
    assert "wrote 1 item(s) (it ran, and may still be running: raise --timeout)" in \
        no_result_message(ds, "s1", out, 5, "app")
    ds.put("s2", "failure/G", {"error": "E"}, 2e9)
    assert "Lambda gave up on G" in no_result_message(ds, "s2", out, 5, "app")
