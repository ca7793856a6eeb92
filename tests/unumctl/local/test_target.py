"""`unumctl invoke/resume/result` on the local target when things go wrong: a killed invoke is
finished by `resume` (or by invoking again with the same --session and input), a --session
reused with another input is refused, stop signals leave no worker process and no temporary
directory, and unsafe session ids are refused before they reach a path."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from runtime.local.datastore import FileBlobStore

from unumctl_testing.apps import ROOT, make_app
from tests.unumctl.test_cli import cli, one_error

SLOW = """
import os, time
def handler(event, context):
    marker = event["marker"]
    if not os.path.exists(marker):  # the first execution records its pid and never returns
        open(marker, "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
    return event["n"] * 10
"""


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "app", "slow-app", {
        "First": ({"Start": True, "Next": {"Name": "Slow"}},
                  "def handler(e, c):\n    return {**e, 'n': e['n'] + 1}\n"),
        "Slow": ({}, SLOW)})


@pytest.fixture
def short_tmp():
    """A short TMPDIR for the child (the platform's AF_UNIX socket path must stay short)."""
    d = tempfile.mkdtemp(prefix="ut-", dir="/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


def cli_tmp(tmpdir: Path, *args: str) -> tuple[int, str, list[str]]:
    """`cli` with TMPDIR set (so the platform's start sweeps that directory)."""
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120, env={**os.environ, "TMPDIR": str(tmpdir)})
    return proc.returncode, proc.stdout, [ln for ln in proc.stderr.splitlines() if ln.strip()]


def write_input(tmp_path: Path, n: int, name: str = "in.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps({"n": n, "marker": str(tmp_path / "slow.pid")}))
    return p


def start_invoke(app: Path, data: Path, session: str, tmpdir: Path) -> subprocess.Popen:
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    return subprocess.Popen([sys.executable, "-m", "unumctl.cli", "invoke", str(app), "--data", str(data),
                             "--session", session], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def wait_for(path: Path, proc: subprocess.Popen) -> int:
    """Wait until the slow function has started (its pid is in `path`)."""
    for _ in range(1200):
        if path.exists() and path.read_text():
            return int(path.read_text())
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    raise AssertionError("the slow function never started")


def children(pid: int) -> list[int]:
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2:].split()[1]) == pid:
                out.append(int(d.name))
    return out


def gone(pid: int) -> bool:
    """The process no longer runs (absent, or a zombie nobody reaped yet)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2] == "Z"


def wait_gone(pids: list[int]) -> bool:
    for _ in range(200):
        if all(gone(p) for p in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("how", ["resume", "invoke-again"])
def test_killed_invoke_is_finished_by_resume_or_the_same_session(app, tmp_path, short_tmp, how):
    data = write_input(tmp_path, 4)
    proc = start_invoke(app, data, "run-42", short_tmp)
    slow_pid = wait_for(tmp_path / "slow.pid", proc)
    workers = children(proc.pid)
    assert slow_pid in workers
    proc.send_signal(signal.SIGKILL)
    proc.communicate()
    assert wait_gone(workers), "workers outlived the killed invoke"
    if how == "resume":
        code, out, err = cli_tmp(short_tmp, "resume", str(app), "run-42")
    else:
        code, out, err = cli_tmp(short_tmp, "invoke", str(app), "--data", str(data), "--session", "run-42")
    assert code == 0 and json.loads(out) == 50, err
    assert not list(short_tmp.iterdir())  # the killed invoke's socket directory was swept
    # finished: the same session and input returns the result again; another input is refused
    code, out, _ = cli("invoke", str(app), "--data", str(data), "--session", "run-42")
    assert code == 0 and json.loads(out) == 50
    code, out, err = cli("invoke", str(app), "--data", str(write_input(tmp_path, 5, "other.json")),
                         "--session", "run-42")
    msg = one_error(err)
    assert code == 2 and out == ""
    assert msg.startswith("unumctl: --session: session run-42 already exists with a different input")
    assert "ExecutionAlreadyExists" in msg


def test_resume_of_an_unknown_session_names_the_fix(app, tmp_path):
    code, _, err = cli("resume", str(app), "no-such-run")
    assert code == 2 and "SESSION: no session no-such-run" in one_error(err)
    assert "--session no-such-run" in one_error(err)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_stop_signal_stops_workers_and_removes_temp_files(app, tmp_path, short_tmp, sig):
    proc = start_invoke(app, write_input(tmp_path, 1), "sig-1", short_tmp)
    wait_for(tmp_path / "slow.pid", proc)
    workers = children(proc.pid)
    assert workers and list(short_tmp.glob("unum-local-*"))
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig
    assert f"unumctl: stopped by {signal.Signals(sig).name}; resume: unumctl resume" in err
    assert wait_gone(workers), [p for p in workers if not gone(p)]
    assert not list(short_tmp.iterdir())


# ---- safe identifiers: each of these damaged files before session ids were checked


def test_absolute_session_is_refused_and_the_directory_survives(app, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    code, out, err = cli("invoke", str(app), "--data", str(write_input(tmp_path, 1)), "--session", str(victim))
    msg = one_error(err)
    assert code == 2 and out == ""
    assert msg.startswith("unumctl: --session: session id ") and "is not valid" in msg
    assert (victim / "keep.txt").read_text() == "precious"


def test_traversal_session_is_refused_and_ir_survives(app, tmp_path):
    before = sorted(p.name for p in (app / "ir").iterdir())
    code, _, err = cli("invoke", str(app), "--data", str(write_input(tmp_path, 1)), "--session", "../../../ir")
    assert code == 2 and "--session:" in one_error(err)
    assert sorted(p.name for p in (app / "ir").iterdir()) == before


def test_no_wait_with_a_traversal_session_writes_no_log(app, tmp_path):
    code, _, err = cli("invoke", str(app), "--data", str(write_input(tmp_path, 1)), "--no-wait",
                       "--session", "../../evil")
    assert code == 2 and "--session:" in one_error(err)
    assert not (app / "evil.log").exists() and not list(app.rglob("*.log"))


@pytest.mark.parametrize("command", ["result", "resume"])
def test_session_argument_is_checked(app, command):
    code, _, err = cli(command, str(app), "../ir")
    msg = one_error(err)
    assert code == 2 and msg.startswith("unumctl: SESSION: session id '../ir' is not valid")


def test_blob_store_never_leaves_its_root(tmp_path):
    root = tmp_path / "blobs"
    store = FileBlobStore(root)
    assert store.put("s-1", "payload/F-UnumIndex-0.1", b"x") == "payload/F-UnumIndex-0.1"
    assert store.get("s-1", "payload/F-UnumIndex-0.1") == b"x"
    outside = tmp_path / "outside"
    for key in ["../outside", "a/../../../outside", str(outside), "a//b", "./a", ""]:
        with pytest.raises(ValueError, match="blob store: key"):
            store.put("s-1", key, b"bad")
    for session in ["../x", str(tmp_path / "elsewhere"), "", "a/b"]:
        with pytest.raises(ValueError, match="blob store: session id"):
            store.put(session, "k", b"bad")
        with pytest.raises(ValueError, match="blob store: session id"):
            store.sweep(session)
    assert not outside.exists() and not (tmp_path / "elsewhere").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["blobs"]
