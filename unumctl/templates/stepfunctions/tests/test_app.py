"""Runs the app on the local target with input.json and checks expected_output.json.

Run it with: python -m pytest tests   (pytest is not part of unumctl: pip install pytest)

It runs the `unumctl` command on PATH (as a pipx or venv install provides it), else
`python -m unumctl` with the Python running pytest; it fails, saying so, when neither exists.
"""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

APP = Path(__file__).resolve().parent.parent


def unumctl_command():
    """The command that runs unumctl: the one on PATH, else this Python's `-m unumctl`."""
    found = shutil.which("unumctl")
    if found:
        return [found]
    if importlib.util.find_spec("unumctl") is not None:
        return [sys.executable, "-m", "unumctl"]
    raise AssertionError("no unumctl: neither an `unumctl` command on PATH nor the unumctl package in "
                         f"{sys.executable}; put the directory holding `unumctl` on PATH (pipx: ~/.local/bin)")


def test_invoke_gives_the_expected_output():
    run = subprocess.run([*unumctl_command(), "invoke", str(APP), "--data", str(APP / "input.json")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == json.loads((APP / "expected_output.json").read_text())
