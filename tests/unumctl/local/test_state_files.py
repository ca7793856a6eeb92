"""The local target's state files (docs/local.md "State files"): `.unum/` is created 0700
and `unum.db` 0600; a symbolic link or a file that is not a SQLite database at `unum.db`
is refused with one line naming the file and the fix, and once the file is fixed the same
command succeeds (nothing left behind blocks the retry). Driven through the CLI, as a user
would."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

from unumctl_testing.apps import ROOT, make_app

CODE = "def handler(event, context):\n    return {'got': event}\n"


def _app(tmp_path: Path) -> Path:
    app = make_app(tmp_path / "app", "state-files", {"A": ({"Start": True}, CODE)})
    (tmp_path / "in.json").write_text(json.dumps({"x": 1}))
    return app


def invoke(tmp_path: Path, app: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(app), "--data",
                           str(tmp_path / "in.json")], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=lambda: os.umask(0o022))


def error_line(r: subprocess.CompletedProcess) -> str:
    """The one error line of a refused invoke (after its `session ID` progress line)."""
    lines = [x for x in r.stderr.splitlines() if not x.startswith("session ")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def mode(p: Path) -> int:
    return stat.S_IMODE(os.lstat(p).st_mode)


def test_state_directory_is_0700_and_database_0600(tmp_path):
    app = _app(tmp_path)
    r = invoke(tmp_path, app)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"got": {"x": 1}}
    assert mode(app / ".unum") == 0o700
    db = app / ".unum" / "local" / "dev" / "unum.db"  # the default stage's state
    assert mode(db) == 0o600
    for side in ("-wal", "-shm", "-wlock"):
        p = Path(str(db) + side)
        if p.exists():
            assert mode(p) == 0o600, side


def test_a_symlinked_database_is_refused_in_one_line_and_the_retry_works(tmp_path):
    app = _app(tmp_path)
    local = app / ".unum" / "local" / "dev"
    local.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.db"
    (local / "unum.db").symlink_to(elsewhere)
    r = invoke(tmp_path, app)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = error_line(r)
    assert line == (f"unumctl: {local / 'unum.db'} is a symbolic link: unumctl keeps the local state only in "
                    f"files it creates itself; remove the link (rm {local / 'unum.db'}) and run again")
    assert not elsewhere.exists()  # nothing was written through the link
    (local / "unum.db").unlink()
    r = invoke(tmp_path, app)
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"x": 1}}, r.stderr


def test_a_corrupt_database_is_refused_in_one_line_and_the_retry_works(tmp_path):
    app = _app(tmp_path)
    local = app / ".unum" / "local" / "dev"
    local.mkdir(parents=True)
    db = local / "unum.db"
    db.write_bytes(b"this is not a database\n" * 200)
    r = invoke(tmp_path, app)
    assert r.returncode == 2, (r.returncode, r.stderr)
    line = error_line(r)
    assert line.startswith(f"unumctl: {db}: not a usable SQLite database (") and \
        line.endswith(f"move it away (mv {db} {db}.bad) and run again: the local target then starts with "
                      "empty state"), line
    db.rename(str(db) + ".bad")
    r = invoke(tmp_path, app)
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"x": 1}}, r.stderr
