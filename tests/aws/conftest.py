"""Fixtures for the AWS target tests: moto_server on a free 127.0.0.1 port with IAM
enforcement on, AWS environment variables pointing boto3 at it (the keys of an admin user
made before enforcement), a Terraform CLI config that installs providers from the filesystem
mirror only.

IAM (unumctl_testing/aws/iam.py): the emulated Lambda's functions sign as their execution
roles (deployment.local_specs); every AWS call they make is recorded (UNUM_RECORD_CALLS, set
for each test by `aws_calls`) and, after the test, checked against the function's rendered
policy: a call the policy does not grant fails the test (at teardown). Terraform's
plan/apply/destroy runs with enforcement off (`moto_without_iam`): the bucket's TLS-only
statement denies every S3 call over moto's plain HTTP.

Each fixture skips with a reason naming the missing component (moto_server, terraform, the
hashicorp/aws provider mirror) only when that component is absent.
"""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

# moto_server and its environment live with the harness (shared with bench/ and `unumctl cost`)
from unumctl_testing.aws import iam as test_iam
from unumctl.aws.emulate.moto_local import REGION, find_moto_server, free_port, moto_server  # noqa: E402,F401
from unumctl.aws.emulate.moto_local import aws_env as _aws_env

_ADMIN: dict[str, dict[str, str]] = {}  # moto URL -> the admin user's keys (enforcing moto)
ACCOUNT = "123456789012"  # moto's default account


def aws_env(moto: str, lambda_url: str | None = None) -> dict[str, str]:
    """Environment for boto3/Terraform against moto (and the local Invoke server): the admin
    user's keys on the enforcing moto of this session, else dummy credentials."""
    env = _aws_env(moto, lambda_url)
    if moto in _ADMIN:
        env.pop("AWS_SESSION_TOKEN", None)
        env.update(_ADMIN[moto])
    return env


@pytest.fixture(scope="session")
def moto_url():
    """moto_server for the test session, IAM enforcement on (skips when it is not installed)."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    with moto_server() as url:
        _ADMIN[url] = test_iam.enforce(url, REGION)
        try:
            yield url
        finally:
            _ADMIN.pop(url, None)


@pytest.fixture
def moto_env(moto_url, monkeypatch):
    """This process's AWS environment points at moto_server (the admin user's keys)."""
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL_LAMBDA", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(k, raising=False)
    for k, v in aws_env(moto_url).items():
        monkeypatch.setenv(k, v)
    return moto_url


@pytest.fixture
def moto_without_iam(moto_url):
    """IAM enforcement off for one test (Terraform's cycle: the bucket's TLS-only statement
    denies S3 over plain HTTP), on again afterwards."""
    test_iam.set_enforcement(moto_url, False)
    try:
        yield moto_url
    finally:
        test_iam.set_enforcement(moto_url, True)


@pytest.fixture
def no_aws_endpoint(monkeypatch):
    """No AWS endpoint anywhere (so the local platform starts its embedded moto_server) and
    dummy credentials; skips when moto_server is not installed."""
    from unumctl.aws.emulate.moto_local import find_moto_server
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    for k in ("AWS_ENDPOINT_URL", "UNUM_AWS_ENDPOINT", "SFN_MOCK_CONFIG", "UNUM_SFN_MOCK_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)


@pytest.fixture(autouse=True)
def aws_calls(tmp_path_factory, monkeypatch):
    """Records every AWS call of the emulated functions during the test (UNUM_RECORD_CALLS)
    and fails the test when one is not granted by its function's rendered policy. Yields
    the record directory (unumctl_testing/aws/iam.py read_calls / read_policies)."""
    out = tmp_path_factory.mktemp("aws-calls")
    monkeypatch.setenv("UNUM_RECORD_CALLS", str(out))
    yield out
    calls = test_iam.read_calls(out)
    if calls:
        problems = test_iam.check_calls(calls, test_iam.read_policies(out), REGION, ACCOUNT)
        assert not problems, "AWS calls not granted by the rendered policy:\n" + "\n".join(problems)


@pytest.fixture
def unum_table(moto_env):
    """A fresh table and bucket on moto with the layout Terraform creates."""
    from unumctl_testing.aws.deployment import create_datastore_for_tests

    name = f"unum-test-{uuid.uuid4().hex[:8]}"
    create_datastore_for_tests(name, name)
    return name


@pytest.fixture(scope="session")
def tf_cli_config(tmp_path_factory):
    """TF_CLI_CONFIG_FILE content using the filesystem mirror; skips when terraform or the
    hashicorp/aws provider mirror is missing."""
    from unumctl.terraform import find_provider_mirror, write_mirror_cli_config

    if shutil.which("terraform") is None and not os.environ.get("UNUMCTL_TERRAFORM"):
        pytest.skip("terraform binary not on PATH")
    mirror = find_provider_mirror("hashicorp/aws")
    if mirror is None:
        pytest.skip("hashicorp/aws provider filesystem mirror not found (set UNUMCTL_TF_PLUGIN_MIRROR)")
    d = tmp_path_factory.mktemp("tfcli")
    cache = d / "plugin-cache"
    cache.mkdir()
    cfg = write_mirror_cli_config(d / "terraformrc", mirror)
    cfg.write_text(cfg.read_text() + f'plugin_cache_dir = "{cache}"\n')
    return cfg
