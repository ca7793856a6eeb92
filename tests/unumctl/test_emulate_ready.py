"""unumctl/emulate/ready.py: the readiness wait of the emulators (moto_server for the AWS
tests and `unumctl emulate aws`, the local target's embedded moto_server). A server that is
slow to start because the machine is loaded uses little CPU while it waits for a core; the
wait lets it answer however long that takes, and still gives up on a server that exits,
burns CPU without answering, or hangs past the wall limit."""

from __future__ import annotations

import os
import subprocess
import sys
import urllib.request

import pytest

from unumctl.aws.emulate.moto_local import free_port
from unumctl.emulate.ready import NotReady, cpu_seconds, wait_ready

# a server that starts answering only after SLOW_S s of sleep: a start delayed by a loaded
# machine (a process waiting for a core uses no CPU)
SLOW_S = 1.5
SLOW_SERVER = """
import http.server, sys, time
time.sleep(float(sys.argv[2]))
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.SimpleHTTPRequestHandler).serve_forever()
"""


def _probe(url: str):
    def answers() -> bool:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return True
        except OSError:
            return False
    return answers


def _start(code: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, cwd=os.path.dirname(__file__))


def test_a_slow_start_that_uses_little_cpu_is_waited_for_past_the_cpu_budget():
    port = free_port()
    proc = _start(SLOW_SERVER, str(port), str(SLOW_S))
    try:
        waited = wait_ready(proc, _probe(f"http://127.0.0.1:{port}/"), cpu_budget=SLOW_S / 3)
    finally:
        proc.kill()
        proc.wait()
    # a wall-clock timeout of the same size (the fixed 30 s the waits had) would have failed it
    assert waited > SLOW_S / 3 and waited >= SLOW_S, waited


def test_a_server_that_burns_cpu_without_answering_fails_after_its_budget():
    proc = _start("while True: pass")
    try:
        with pytest.raises(NotReady, match=r"did not answer after using \d+ s of CPU"):
            wait_ready(proc, lambda: False, cpu_budget=0.3)
        assert cpu_seconds(proc.pid) > 0.3
    finally:
        proc.kill()
        proc.wait()


def test_a_server_that_exits_fails_at_once_with_its_status():
    proc = _start("import sys; sys.exit(3)")
    with pytest.raises(NotReady, match="^exited with status 3$"):
        wait_ready(proc, lambda: False, cpu_budget=60)
    proc.wait()


def test_a_server_that_hangs_without_cpu_fails_at_the_wall_limit():
    proc = _start("import time; time.sleep(60)")
    now = [0.0]

    def sleep(s: float) -> None:
        now[0] += s

    try:
        with pytest.raises(NotReady, match="^did not answer within 5 s$"):
            wait_ready(proc, lambda: False, cpu_budget=30, wall_limit=5, clock=lambda: now[0], sleep=sleep)
    finally:
        proc.kill()
        proc.wait()
    assert 5 < now[0] < 5.5


def test_cpu_seconds_counts_this_process_and_is_none_for_no_process():
    before = cpu_seconds(os.getpid())
    assert before is not None
    sum(i * i for i in range(2_000_000))
    after = cpu_seconds(os.getpid())
    assert after is not None and after > before
    assert cpu_seconds(2 ** 22 + 12345) is None
