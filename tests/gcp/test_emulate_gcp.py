"""`unumctl emulate gcp` as a user runs it (docs/gcp.md "Rehearse on emulators"): the command
starts the Firestore and Pub/Sub emulators and the GCS stand-in, serves an example's built
bundles on them, prints and writes the environment; `unumctl invoke --cloud gcp` with that
environment returns the example's expected output; SIGTERM stops everything. A missing
component is one line naming it and how to install it."""

from __future__ import annotations

import json
import os
import signal
import subprocess

import pytest
from typer.testing import CliRunner

from unumctl.cli import app as cli

from unumctl_testing.emulate_cli import UNUMCTL, start_emulate, stop_emulate
from unumctl_testing.apps import copy_example, example_dirs


def _components():
    for mod in ("google.cloud.firestore", "google.cloud.pubsub_v1", "google.cloud.storage",
                "functions_framework"):
        pytest.importorskip(mod, reason=f"{mod} not installed (pip install -e '.[gcp]')")
    from unumctl.gcp.emulate.emulators import EmulatorMissing, firestore_command, pubsub_command, storage_command

    try:
        firestore_command("127.0.0.1", 1), pubsub_command("127.0.0.1", 1), storage_command("127.0.0.1", 1, None)
    except EmulatorMissing as exc:
        pytest.skip(str(exc))


def test_emulate_gcp_serves_an_app_that_invoke_runs(tmp_path):
    _components()
    app_dir = copy_example(next(p for p in example_dirs() if p.name == "wordcount"), tmp_path / "wordcount")
    env_file = tmp_path / "emu.env"
    proc, env = start_emulate(["gcp", str(app_dir)], env_file, timeout=180)
    try:
        assert env["FIRESTORE_EMULATOR_HOST"].startswith("127.0.0.1:")
        assert env["PUBSUB_EMULATOR_HOST"].startswith("127.0.0.1:")
        assert env["GOOGLE_CLOUD_PROJECT"] == "unum-emulated" and env["UNUM_BUCKET"]
        run_env = {**{k: v for k, v in os.environ.items() if "EMULATOR_HOST" not in k}, **env}
        inv = subprocess.run([UNUMCTL, "invoke", str(app_dir), "--cloud", "gcp", "--data",
                              str(app_dir / "input.json"), "--timeout", "150"], env=run_env,
                             capture_output=True, text=True, timeout=200)
        assert inv.returncode == 0, inv.stderr[-3000:]
        assert json.loads(inv.stdout) == json.loads((app_dir / "expected_output.json").read_text())
        # the functions' output is where `unumctl logs --cloud gcp` reads it
        assert any((app_dir / ".unum" / "gcp" / "emulator-logs").glob("wordcount-*.log"))
    except BaseException:
        proc.kill()
        raise
    stop_emulate(proc, signal.SIGTERM, env_file)


def test_emulate_gcp_missing_java_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("google.cloud.firestore", reason="google-cloud-firestore not installed")
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no gcloud
    monkeypatch.setenv("CLOUDSDK_ROOT_DIR", str(tmp_path))
    res = CliRunner().invoke(cli, ["emulate", "gcp"])
    assert res.exit_code == 2, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "java not found on PATH" in lines[0] and "apt-get install" in lines[0], res.stderr


def test_an_emulator_that_answers_without_http1_is_stopped_and_given_up(tmp_path, monkeypatch):
    """A port that answers with something other than HTTP/1 (the Pub/Sub emulator whose main
    thread died on a BindException keeps only its gRPC server, seen in a CI run on
    2026-11-26: every GCP test then errored and the emulator was left running) is given up
    as an exited emulator after GARBLED_S, with its process group stopped, so that
    `Emulators.start` tries another port. The stand-in is a 127.0.0.1 socket server that
    answers any request with an HTTP/2-style error line."""
    import sys

    from unumctl.gcp.emulate import emulators

    monkeypatch.setattr(emulators, "GARBLED_S", 0.5)
    port = emulators.free_port()
    server = ("import socket\n"
              "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
              f"s.bind(('127.0.0.1', {port})); s.listen()\n"
              "while True:\n"
              "    c, _ = s.accept(); c.recv(1024)\n"
              "    c.sendall(b'\\x00\\x00\\x12\\x04 Unexpected HTTP/1.x request: GET /\\n'); c.close()\n")
    with pytest.raises(emulators.EmulatorExited, match="answers without HTTP/1"):
        emulators.start_process("fake", [sys.executable, "-c", server], "127.0.0.1", port, tmp_path, timeout=30)
    with pytest.raises(OSError):  # the fake's process group was stopped: nothing listens there
        import socket
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
