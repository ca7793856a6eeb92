"""Runs the workflow in-process on the local target with input.json and checks
expected_output.json; each step is also an ordinary function.

Run it with: python -m pytest tests   (pytest is not part of unumctl: pip install pytest)
"""

import json
import sys
from pathlib import Path

from unumctl.local.inprocess import run

APP = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(APP / "workflow"))

import flow  # noqa: E402


def test_a_step_is_a_plain_function():
    assert flow.square(3) == 9


def test_the_workflow_gives_the_expected_output():
    item = run(APP, json.loads((APP / "input.json").read_text()))
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == json.loads((APP / "expected_output.json").read_text())
