"""Fixtures for the AWS target tests: moto_server on a free 127.0.0.1 port, AWS environment
variables pointing boto3 at it (dummy credentials "testing"), a Terraform CLI config that
installs providers from the filesystem mirror only.

Each fixture skips with a reason naming the missing component (moto_server, terraform, the
hashicorp/aws provider mirror) only when that component is absent.
"""

from __future__ import annotations

import os
import shutil
import uuid

import pytest

# moto_server and its environment live with the harness (shared with bench/ and `unumctl cost`)
from unumctl.emulate.aws.moto_local import REGION, aws_env, find_moto_server, free_port, moto_server  # noqa: E402,F401


@pytest.fixture(scope="session")
def moto_url():
    """moto_server for the test session (skips when it is not installed)."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    with moto_server() as url:
        yield url


@pytest.fixture
def moto_env(moto_url, monkeypatch):
    """This process's AWS environment points at moto_server (dummy credentials)."""
    for k in ("AWS_PROFILE", "AWS_ENDPOINT_URL_LAMBDA"):
        monkeypatch.delenv(k, raising=False)
    for k, v in aws_env(moto_url).items():
        monkeypatch.setenv(k, v)
    return moto_url


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
