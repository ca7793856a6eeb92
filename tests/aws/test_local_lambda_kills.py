"""The local Lambda emulator's seeded kills (unumctl/aws/emulate/local_lambda.py, `kill` of
runtime/faults.py) land only in the request they were drawn for.

A kill is a timer armed when a request is sent to its worker and cancelled when the answer
is read; `Timer.cancel` does not stop a callback already under way, so a timer that fires
as the request ends could SIGKILL the worker after its answer, and the worker's next
request (not drawn for a kill, perhaps an event's last attempt, whose failure goes to the
on-failure destination and fails the session) died in its place. Here the timer fires at
the moment it is cancelled (`LateTimer`), the one schedule that shows it.
"""

from __future__ import annotations

import shutil
import threading

from runtime.faults import FaultSpec
from unumctl_testing.apps import ROOT
from unumctl.aws.emulate.local_lambda import LocalFunctionSpec, LocalLambda


class LateTimer(threading.Timer):
    """A timer whose callback runs as it is cancelled (as one already firing would)."""

    def cancel(self) -> None:
        if not self.finished.is_set():
            self.function(*self.args, **self.kwargs)
        super().cancel()


def test_a_kill_never_lands_in_the_workers_next_request(tmp_path, monkeypatch):
    """Fails without the fix: the worker was killed after its first answer (a second cold
    start for the second request, or the second request crashed)."""
    bundle = tmp_path / "echo"
    shutil.copytree(ROOT / "runtime", bundle / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "echo.py").write_text("def handler(event, context):\n    return event\n")
    monkeypatch.setattr(threading, "Timer", LateTimer)
    # every request but an event's last attempt is drawn for a kill, due in hours: only the
    # late firing at the request's end can kill
    faults = FaultSpec.parse("seed=1,kill=1,max_kill_ms=36000000")
    with LocalLambda({"echo": LocalFunctionSpec(bundle, "echo.handler", {})}, {}, concurrency=1,
                     faults=faults) as emu:
        for n in range(3):
            emu.invoke("echo", {"n": n})
            emu.wait_idle(60)
        stats = dict(emu.stats)
    assert stats.get("crashes", 0) == 0 and stats["executions"] == 3 and stats["cold_starts"] == 1, stats
    assert stats["kills_armed"] == 3 and stats.get("kills_missed") == 3, stats
