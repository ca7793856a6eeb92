"""runtime.asl.machine.lambda_cause: the Cause of a Lambda function error as Lambda reports
a Python exception, its stackTrace holding the user's frames only."""

from __future__ import annotations

import json
import os

import runtime
from runtime.asl.machine import lambda_cause

RUNTIME = os.path.dirname(os.path.abspath(runtime.__file__))
ENGINE = f'  File "{RUNTIME}/engine.py", line 280, in _call_user\n    return fn(event, ctx)\n'
USER = '  File "/home/me/app/functions/validate/app.py", line 9, in handler\n    raise Flaky("x")\n'


def test_the_runtimes_frames_are_left_out():
    doc = json.loads(lambda_cause("Flaky", "timed out", [ENGINE, USER]))
    assert doc["stackTrace"] == [USER.rstrip("\n")]
    assert (doc["errorType"], doc["errorMessage"]) == ("Flaky", "timed out") and doc["requestId"]


def test_a_trace_of_runtime_frames_only_is_kept():
    doc = json.loads(lambda_cause("States.Runtime", "bad", [ENGINE]))
    assert doc["stackTrace"] == [ENGINE.rstrip("\n")]
