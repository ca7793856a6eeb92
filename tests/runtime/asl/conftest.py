"""Fixtures of the ASL runtime tests: `moto` (moto's emulator in this process) and `walk`
(one Task walked in place by Machine.walk)."""

from __future__ import annotations

import pytest

from runtime.asl.integrations import sdk
from runtime.asl.machine import Machine


@pytest.fixture
def moto(monkeypatch):
    """moto in this process (Batch without docker), boto3's own configuration, fresh clients."""
    from moto import mock_aws
    for k in ("UNUM_AWS_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_PROFILE", "UNUM_AWS_CREDENTIALS"):
        monkeypatch.delenv(k, raising=False)
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(k, v)
    sdk.forget_clients()
    with mock_aws(config={"batch": {"use_docker": False}}):
        yield
    sdk.forget_clients()


def walk(resource: str, params: dict, timeout: int | None = None):
    """Walk Task `Job` (Resource `resource`, Parameters `params`, ResultPath $.out) in place
    up to the Lambda Task after it: (the Task's result, the sleeps it took)."""
    sleeps: list[float] = []
    task = {"Type": "Task", "Resource": resource, "Parameters": params, "ResultPath": "$.out", "Next": "Echo"}
    if timeout is not None:
        task["TimeoutSeconds"] = timeout
    definition = {"StartAt": "Job", "States": {"Job": task, "Echo": {"Type": "Task", "Resource": "Echo", "End": True}}}
    m = Machine(definition, {"StateMachine": {"Name": "m"}}, clock=lambda: 0.0, sleep=sleeps.append)
    stop = m.walk("", "Job", {"in": 1})
    assert (stop.kind, stop.name) == ("Task", "Echo")
    return stop.value["out"], sleeps
