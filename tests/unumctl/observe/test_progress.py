"""`unumctl invoke --wait` while it waits (issue 10, item 3): the session id comes first on
stderr, stdout holds only the result, and a live line of invocations done / running / failed
is drawn on stderr only when stderr is a terminal (a real pseudo-terminal here)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import time

from unumctl.observe.progress import counts, line

from unumctl_testing.apps import ROOT
from tests.unumctl.observe.test_history import hist_app

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
LINE = re.compile(r"invocations: (\d+) done, (\d+) running, (\d+) failed")


def _env():
    return dict(os.environ, PYTHONPATH=str(ROOT), TERM="xterm", COLUMNS="120", NO_COLOR="1")


def _invoke_cmd(app, data, session):
    return [sys.executable, "-m", "unumctl.cli", "invoke", str(app), "--data", str(data), "--session", session]


def test_counts_from_events():
    ev = [{"kind": "ran", "instance": "Start", "invoked": 3},
          {"kind": "ran", "instance": "Work-0", "invoked": 1},
          {"kind": "failed", "instance": "Work-1"},
          {"kind": "crashed", "instance": "Work-2"},
          {"kind": "dropped", "instance": "Work-0"},
          {"kind": "adopted", "instance": "Work-0", "invoked": 1}]
    assert counts(ev) == {"done": 2, "running": 2, "failed": 1}  # 1 + 3 + 1 started
    assert counts([]) == {"done": 0, "running": 1, "failed": 0}
    assert line(None, 1.25) == "waiting for the session's history (1.2 s)"
    assert line({"done": 3, "running": 1, "failed": 0}, 2.0) == "invocations: 3 done, 1 running, 0 failed (2.0 s)"
    # a failure later retried to success is done, not failed
    assert counts([{"kind": "failed", "instance": "A"}, {"kind": "ran", "instance": "A"}]) == \
        {"done": 1, "running": 0, "failed": 0}


def test_no_terminal_session_id_then_result_only(tmp_path):
    app = hist_app(tmp_path / "app")
    (tmp_path / "in.json").write_text('["a", "b", "c"]')
    res = subprocess.run(_invoke_cmd(app, tmp_path / "in.json", "p-1"), capture_output=True, text=True,
                         env=_env(), timeout=120)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout) == "ABC"  # stdout: the result and nothing else
    lines = res.stderr.splitlines()
    assert lines[0] == "session p-1", lines  # first, before the functions' own output
    assert not [ln for ln in lines if "invocations:" in ln or "\x1b" in ln]  # no live line without a tty


def test_progress_line_on_a_terminal(tmp_path):
    app = hist_app(tmp_path / "app")
    (tmp_path / "in.json").write_text('["a", "b", "c", "d"]')
    master, slave = pty.openpty()
    proc = subprocess.Popen(_invoke_cmd(app, tmp_path / "in.json", "p-2"), stdout=subprocess.PIPE,
                            stderr=slave, stdin=subprocess.DEVNULL, env=_env())
    os.close(slave)
    raw = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 1)
        if not ready:
            if proc.poll() is not None:
                break
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        raw += chunk
    out = proc.stdout.read()
    proc.wait(30)
    os.close(master)
    assert proc.returncode == 0, raw
    assert json.loads(out) == "ABCD"
    text = ANSI.sub("", raw.decode("utf-8", "replace"))
    assert text.startswith("session p-2\r\n"), text[:200]
    seen = [tuple(int(x) for x in m.groups()) for m in LINE.finditer(text)]
    assert seen, text
    # the final line: Start, 4 Work branches and Join done, nothing running or failed
    assert seen[-1] == (6, 0, 0), seen
