"""One-line errors with the next step: missing project, emulator not running, invoke
before apply (on the Pub/Sub emulator: the entry topic does not exist)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from unumctl.cli import app as cli

EX = Path(__file__).resolve().parents[2] / "examples" / "iot-pipeline"
DATA = str(EX / "input.json")


def _invoke(*extra):
    return CliRunner().invoke(cli, ["invoke", str(EX), "--cloud", "gcp", "--data", DATA, *extra])


def _one_line_error(res) -> str:
    lines = [ln for ln in res.output.splitlines() if ln.startswith("unumctl:")]
    assert res.exit_code == 2 and len(lines) == 1, res.output
    return lines[0]


def test_missing_project(monkeypatch):
    pytest.importorskip("google.cloud.pubsub_v1", reason="google-cloud-pubsub not installed")
    for var in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("PUBSUB_EMULATOR_HOST", raising=False)
    monkeypatch.delenv("FIRESTORE_EMULATOR_HOST", raising=False)
    line = _one_line_error(_invoke())
    assert "no GCP project" in line and "GOOGLE_CLOUD_PROJECT" in line


def test_emulator_not_running(monkeypatch):
    from unumctl.gcp.emulate.emulators import free_port

    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", f"127.0.0.1:{free_port()}")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "unum-test")
    line = _one_line_error(_invoke())
    assert "no emulator answers" in line and "gcloud" in line


def test_invoke_before_apply(emulators, tmp_path):
    from unumctl_testing.apps import make_app

    root = make_app(tmp_path / "app", "never-applied", {
        "Only": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    res = CliRunner().invoke(cli, ["invoke", str(root), "--cloud", "gcp", "--data", DATA, "--no-wait"])
    line = _one_line_error(res)
    assert "does not exist" in line and "unumctl apply" in line


def test_destroy_before_apply():
    line = _one_line_error(CliRunner().invoke(cli, ["destroy", str(EX), "--cloud", "gcp", "--yes"]))
    assert "nothing to destroy" in line
