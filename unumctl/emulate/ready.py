"""Waiting for an emulator process to answer: a readiness wait bounded by the work the
process did, not by the wall clock.

A server started on a loaded machine (two cores shared by many jobs) can take minutes of
wall-clock time to import its framework while using a few seconds of CPU: a fixed wall-clock
timeout then reports a healthy server as "did not start". `wait_ready` polls the server's
probe until it answers and gives up only when the process exited, when it used more than
`cpu_budget` seconds of CPU (user + system, its own and its waited-for children's, from
/proc/<pid>/stat: proc(5)) without answering (it is busy but broken), or when `wall_limit`
seconds passed (a backstop for a process that hangs without using CPU). Where /proc is
missing the CPU budget is applied to the wall clock, as before.
"""

from __future__ import annotations

import os
import subprocess
import time
from typing import Callable

__all__ = ["NotReady", "cpu_seconds", "wait_ready"]

POLL_S = 0.1  # between two probes


class NotReady(RuntimeError):
    """The process exited, or used its CPU budget or the wall limit without answering;
    the message says which (one line, without the caller's context)."""


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, with its waited-for children) process `pid` has used,
    from fields 14-17 of /proc/<pid>/stat (proc(5)); None when that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read().decode(errors="replace")
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()  # after "pid (comm)": field 3 onwards
    try:
        ticks = sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    except (ValueError, IndexError):
        return None
    return ticks / os.sysconf("SC_CLK_TCK")


def wait_ready(proc: subprocess.Popen, probe: Callable[[], bool], cpu_budget: float = 30.0,
               wall_limit: float = 600.0, clock: Callable[[], float] = time.monotonic,
               sleep: Callable[[float], None] = time.sleep) -> float:
    """Poll `probe()` (True: the server answers) every POLL_S s until it answers; returns
    the wall-clock seconds waited. Raises NotReady when `proc` exited ("exited with status
    N"), when it used `cpu_budget` s of CPU without answering, or after `wall_limit` s.
    `clock` and `sleep` are the wall clock (seconds) and the pause between probes."""
    start = clock()
    while True:
        if probe():
            return clock() - start
        code = proc.poll()
        if code is not None:
            raise NotReady(f"exited with status {code}")
        waited = clock() - start
        used = cpu_seconds(proc.pid)
        if used is None:  # no /proc: the budget is wall-clock seconds
            used = waited
        if used > cpu_budget:
            raise NotReady(f"did not answer after using {used:.0f} s of CPU ({waited:.0f} s waited)")
        if waited > wall_limit:
            raise NotReady(f"did not answer within {wall_limit:.0f} s")
        sleep(POLL_S)
