"""Handlers that misbehave in ways a plain `except Exception` misses: `sys.exit()`,
`raise KeyboardInterrupt`, a return value nested 100,000 deep, an exception whose
`__str__` raises. Each fails its invocation cleanly: a recorded failure with a clear error
(the shared engine, runtime/engine.py, so every target), reported by `unumctl invoke` in one
line with exit 1 and no traceback from unumctl's or the runtime's code; IR Retry and ASL
Catch see it like any error."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from unumctl_testing.apps import ROOT, make_app, make_sfn_app, sfn_task
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

HANDLERS = {
    "exit": ("import sys\n\ndef handler(event, context):\n    sys.exit(3)\n",
             "SystemExit", "the function called sys.exit() with 3"),
    "interrupt": ("def handler(event, context):\n    raise KeyboardInterrupt\n",
                  "KeyboardInterrupt", "the function raised KeyboardInterrupt"),
    "deep": ("def handler(event, context):\n    x = []\n    for _ in range(100_000):\n        x = [x]\n    return x\n",
             "TypeError", "W returned a value nested too deep to encode as JSON"),
    "bad-str": (textwrap.dedent("""\
        class Odd(Exception):
            def __str__(self):
                raise RuntimeError("no message for you")


        def handler(event, context):
            raise Odd()
        """), "Odd", "(the Odd's message cannot be read: its __str__ raised RuntimeError)"),
    "bad-str-exit": (textwrap.dedent("""\
        class Odd(Exception):
            def __str__(self):
                raise SystemExit(1)


        def handler(event, context):
            raise Odd()
        """), "Odd", "(the Odd's message cannot be read: its __str__ raised SystemExit)"),
}


@pytest.mark.parametrize("kind", list(HANDLERS))
def test_misbehaving_handler_fails_its_invocation_cleanly_on_local(tmp_path, kind):
    code, error, cause = HANDLERS[kind]
    app = make_app(tmp_path / "app", "robust", {"W": ({"Start": True}, code)})
    data = tmp_path / "in.json"
    data.write_text("{}")
    r = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(app), "--data", str(data),
                        "--session", "s1"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr and "RetriesExhausted" not in r.stderr, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("unumctl:")]  # not the function's own log
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"unumctl: session s1 failed in W: {error}: {cause}"), lines[0]
    d = subprocess.run([sys.executable, "-m", "unumctl.cli", "describe", str(app), "s1", "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT)})
    desc = json.loads(d.stdout)
    assert desc["status"] == "FAILED" and desc["error"] == error, desc


def test_asl_catch_sees_a_handler_exit_like_any_error(tmp_path):
    """Through the Step Functions wrapper on the same engine: the Task's Catch gets the
    error, and the session succeeds with the catcher's output."""
    machine = {"StartAt": "Work", "States": {
        "Work": sfn_task("Work", None, Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Done"}]),
        "Done": {"Type": "Pass", "End": True}}}
    app = make_sfn_app(tmp_path / "app", machine, {"Work": HANDLERS["exit"][0]}, name="robust-sfn")
    with LocalRunner(load_app(app), state=tmp_path / "state", quiet=True) as runner:
        item = runner.run({"k": 1}, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["k"] == 1 and item["v"]["err"]["Error"] == "SystemExit", item
    assert "the function called sys.exit() with 3" in item["v"]["err"]["Cause"]


def test_a_too_deep_result_through_the_step_functions_wrapper_is_a_task_error(tmp_path):
    """The ASL wrapper walks a Task's result (ResultPath...): a result too deep to encode is the
    Task's error (Catch sees it), not a RecursionError crash of the instance."""
    machine = {"StartAt": "Work", "States": {
        "Work": sfn_task("Work", "Done", ResultPath="$.r",
                         Catch=[{"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Done"}]),
        "Done": {"Type": "Pass", "End": True}}}
    app = make_sfn_app(tmp_path / "app", machine, {"Work": HANDLERS["deep"][0]}, name="deep-sfn")
    with LocalRunner(load_app(app), state=tmp_path / "state", quiet=True) as runner:
        item = runner.run({"k": 1}, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["err"]["Error"] == "TypeError" and "nested too deep to encode as JSON" in item["v"]["err"]["Cause"]
