"""The suite's egress guard (tests/egress_guard.py, tests/egress/sitecustomize.py) catches a
request that leaves 127.0.0.1: in the pytest process, in a subprocess given its own
environment (as the tests that run `unumctl` do), and in a test that swallows the error,
which is then reported failed."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap

import pytest

from unumctl_testing.apps import ROOT

PUBLIC = ("203.0.113.7", 443)  # TEST-NET-3 (RFC 5737): never routed
LAMBDA = "lambda.us-east-1.amazonaws.com"
# a real-AWS request made on purpose, its failure swallowed (as code under test might)
REAL_AWS_CALL = textwrap.dedent("""
    import boto3
    from botocore.config import Config
    c = boto3.client("lambda", region_name="us-east-1", aws_access_key_id="AKIAEXAMPLEGUARD000",
                     aws_secret_access_key="guard-test", config=Config(retries={"max_attempts": 1},
                                                                       connect_timeout=2))
    try:
        c.invoke(FunctionName="victim")
    except Exception as exc:
        print("swallowed", type(exc).__name__)
""")


def test_connect_beyond_loopback_is_refused_and_recorded(egress_attempts):
    with socket.socket() as s, pytest.raises(OSError, match="test egress guard"):
        s.connect(PUBLIC)
    with pytest.raises(OSError, match="test egress guard"):
        socket.getaddrinfo(LAMBDA, 443)
    seen = egress_attempts()
    assert [a["call"] for a in seen] == ["connect", "getaddrinfo"], seen
    assert "203.0.113.7" in seen[0]["target"] and LAMBDA in seen[1]["target"]


def test_loopback_passes():
    with socket.socket() as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(1)
        with socket.create_connection(("localhost", srv.getsockname()[1]), timeout=5):
            pass
        with socket.socket() as c:
            assert c.connect_ex(("127.0.0.1", srv.getsockname()[1])) == 0


def test_a_subprocess_with_its_own_environment_is_guarded(egress_attempts):
    """A subprocess whose env names only the repository on PYTHONPATH (tests/unumctl/serve/test_serve.py
    does so) still loads the guard: its swallowed real-AWS request is recorded."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(ROOT), "HOME": os.environ.get("HOME", "/")}
    out = subprocess.run([sys.executable, "-c", REAL_AWS_CALL], env=env, capture_output=True, text=True,
                         timeout=60)
    assert "swallowed" in out.stdout, out.stderr
    seen = egress_attempts()
    assert seen and all(a["pid"] != os.getpid() for a in seen), seen
    assert any(LAMBDA in a["target"] for a in seen), seen


def test_a_test_that_reaches_real_aws_is_reported_failed(tmp_path):
    """An injected bug: a test whose code calls the public Lambda endpoint and swallows the
    error passes without the guard; with it (`-p tests.egress_guard`) it is reported failed,
    naming the endpoint."""
    (tmp_path / "test_injected.py").write_text(
        "import subprocess, sys\n"
        f"CALL = {REAL_AWS_CALL!r}\n"
        "def test_in_process():\n"
        "    exec(compile(CALL, 'call', 'exec'), {})\n"
        "def test_in_a_worker():\n"
        "    subprocess.run([sys.executable, '-c', CALL], check=True)\n"
        "def test_quiet():\n"
        "    assert True\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "UNUM_EGRESS_LOG": ""}  # '': the guard left out

    def run(*extra):
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir",
                               str(tmp_path), *extra, str(tmp_path / "test_injected.py")],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    without = run()
    assert "3 passed" in without.stdout, without.stdout + without.stderr
    guarded = run("-p", "tests.egress_guard")
    assert "2 failed, 1 passed" in guarded.stdout, guarded.stdout + guarded.stderr
    assert "a request left 127.0.0.1 during the test" in guarded.stdout and LAMBDA in guarded.stdout
