"""Drive an emulated run of an app for `unumctl cost` and `unumctl tune --emulated`.

Design: the measured run is product code (measure.py: moto_server and the emulated Lambda
of unumctl/aws/emulate/, or the Google emulators of unumctl/gcp/emulate/), run as a separate
program, the way the CLI runs `terraform`: `python -m unumctl.cost.measure APP --cloud C
--sessions N --input F`, which prints one measurement (measurement.py) on stdout. A child
process keeps the emulators' environment (endpoint variables, dummy credentials, which
measure.py sets in os.environ) and anything the emulators print out of the CLI's own
process. The product keeps everything that turns a measurement into a bill (billing.py,
stepfunctions.py, prices.json). The test harnesses (unumctl_testing/) are never imported
nor run (tests/repo/test_layering.py).

The emulators are an optional dependency: `pip install 'unumctl[emulate]'` (moto[server],
functions-framework, the GCS stand-in) plus, for gcp, the Google Cloud SDK's Firestore and
Pub/Sub emulators. When one is missing the command fails with one line naming it and the
install command (measure.py exits 3).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from .measurement import Measurement, MeasurementError

__all__ = ["EmulationError", "MEASURE", "run_emulated"]

MEASURE = "unumctl.cost.measure"  # the measured run, as a module to run (python -m)


class EmulationError(ValueError):
    """The emulated run could not be made or failed (one line: why, and the fix)."""


def run_emulated(app_dir: Path, cloud: str, sessions: int, input_path: Path,
                 timeout_per_session: float = 150.0, at_least_once: bool = False,
                 use_plan: bool = True) -> Measurement:
    """Run the app's input `sessions` times on the emulated `cloud` ("aws" or "gcp") in a child
    process and return its measurement. `at_least_once`: the app with `runtime.checkpoint:
    false` (measure.py `--mode at-least-once`); `use_plan` False: measure.py `--no-plan`. Raises
    EmulationError (a missing emulator: names the install command; a session that failed or
    timed out; unreadable output)."""
    cmd = [sys.executable, "-m", MEASURE, str(app_dir), "--cloud", cloud, "--sessions", str(sessions),
           "--input", str(input_path), "--mode", "at-least-once" if at_least_once else "exactly-once"]
    if not use_plan:
        cmd.append("--no-plan")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_per_session * sessions + 120)
    except subprocess.TimeoutExpired:
        raise EmulationError(f"the emulated {cloud} run did not finish within "
                             f"{timeout_per_session * sessions + 120:.0f} s") from None
    last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
    if proc.returncode == 3:
        raise EmulationError(f"unumctl cost --cloud {cloud}: {last}")
    if proc.returncode != 0:
        raise EmulationError(f"the emulated {cloud} run failed (exit {proc.returncode}): {last}")
    try:
        return Measurement.from_json(json.loads(proc.stdout))
    except (json.JSONDecodeError, MeasurementError) as exc:
        raise EmulationError(f"the emulated {cloud} run printed no measurement: {exc}") from None
