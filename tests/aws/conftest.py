"""Fixtures for the AWS target tests: moto_server on a free 127.0.0.1 port, AWS environment
variables pointing boto3 at it (dummy credentials "testing"), a Terraform CLI config that
installs providers from the filesystem mirror only.

Each fixture skips with a reason naming the missing component (moto_server, terraform, the
hashicorp/aws provider mirror) only when that component is absent.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from pathlib import Path

import pytest

REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_moto_server() -> str | None:
    local = Path(sys.executable).with_name("moto_server")
    return str(local) if local.exists() else shutil.which("moto_server")


@contextlib.contextmanager
def moto_server():
    """Run moto_server (requests serialized: moto_serialized.py) on a free 127.0.0.1 port (stopped by its pid on exit); yields its
    base URL. Raises FileNotFoundError when it is not installed, RuntimeError when it does
    not answer within 30 s."""
    exe = find_moto_server()
    if exe is None:
        raise FileNotFoundError("moto_server not installed (pip install 'moto[server]')")
    port = free_port()
    # moto_server's app with one request at a time (moto_serialized.py: moto loses
    # concurrent counter updates, which stalls fan-ins), by the interpreter moto_server uses
    proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("moto_serialized.py")),
                             "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(url + "/moto-api/", timeout=1)
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto_server did not start on {url}") from None
                time.sleep(0.1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="session")
def moto_url():
    """moto_server for the test session (skips when it is not installed)."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    with moto_server() as url:
        yield url


def aws_env(moto: str, lambda_url: str | None = None) -> dict[str, str]:
    """Environment for boto3/Terraform against moto (and the local Invoke server)."""
    env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_SESSION_TOKEN": "testing", "AWS_DEFAULT_REGION": REGION, "AWS_REGION": REGION,
           "AWS_ENDPOINT_URL": moto, "AWS_EC2_METADATA_DISABLED": "true"}
    if lambda_url:
        env["AWS_ENDPOINT_URL_LAMBDA"] = lambda_url
    return env


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
