"""Running `unumctl emulate ...` as a user does, for the tests: start it in the background,
read the environment it writes, stop it with a signal and check that nothing is left."""

from __future__ import annotations

import signal  # noqa: F401  (callers pass signal.SIGINT / SIGTERM)
import subprocess
import sys
import time
from pathlib import Path

import pytest

UNUMCTL = str(Path(sys.executable).with_name("unumctl"))
def descendants(pid: int) -> set[int]:
    """Every process below `pid` (from /proc), at this moment."""
    children: dict[int, list[int]] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = set(), [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.add(c)
            todo.append(c)
    return out


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def start_emulate(args: list[str], env_file: Path, timeout: float = 120) -> tuple[subprocess.Popen, dict[str, str]]:
    """`unumctl emulate ...` in the background; the environment it wrote to `env_file`."""
    proc = subprocess.Popen([UNUMCTL, "emulate", *args, "--env-file", str(env_file)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout
    while not env_file.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            out, err = proc.communicate()
            pytest.fail(f"unumctl emulate {args} did not start: rc={proc.returncode} {err[-2000:]}")
        time.sleep(0.2)
    env = {}
    for line in env_file.read_text().splitlines():
        assert line.startswith("export "), line
        k, _, v = line[len("export "):].partition("=")
        env[k] = v.strip("'")
    return proc, env


def stop_emulate(proc: subprocess.Popen, sig: int, env_file: Path) -> str:
    """Send `sig`; assert a clean stop: exit 0 within 30 s, no process left, env file removed.
    Returns stderr."""
    below = descendants(proc.pid)
    assert below, "the emulator started no process"
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err[-2000:]
    assert "stopped; nothing left running" in err
    time.sleep(0.5)
    assert not [p for p in below if alive(p)], "left running"
    assert not env_file.exists()
    return err
