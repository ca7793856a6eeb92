"""Runs the app on the local target with input.json and checks expected_output.json.

Run it with: python -m pytest tests
"""

import json
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent


def test_invoke_gives_the_expected_output():
    run = subprocess.run([sys.executable, "-m", "unumctl", "invoke", str(APP), "--data", str(APP / "input.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == json.loads((APP / "expected_output.json").read_text())
