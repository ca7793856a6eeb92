"""Executions on `unumctl serve` pinned to the version they started on (docs/versions.md):
50 executions held mid-way on one serve, serve restarted with a version of the app that
renames a function, adds a step and widens a fan-in, 50 more started there, the gate
released: every execution's output is its own version's, and the old version's bundles are
collected once its executions have drained. The real Service and SfnApi behind the real
werkzeug server (tests/unumctl/serve/test_sfn_api.py `served`), driven with boto3."""

from __future__ import annotations

import json
import time

import pytest

from runtime.local.queue import DurableQueue
from unumctl.deploy.statepath import local_dir
from unumctl.local.versions import VERSIONS
from unumctl.pipeline import load as load_app

from tests.unumctl.local.test_versions import _wait_for, expected, write_version
from tests.unumctl.serve.test_sfn_api import served

N = 50


def _output(sfn, arn: str, timeout: float = 300) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return {"status": d["status"], "output": json.loads(d["output"]) if d.get("output") else d}
        if time.monotonic() > deadline:
            raise AssertionError(f"{arn} still RUNNING after {timeout} s")
        time.sleep(0.2)


def deploy_under_traffic_on_serve(tmp_path, n: int) -> tuple[list[str], bool]:
    """`n` executions held on a serve of version 1, serve restarted on version 2, `n` more,
    the gate released: (the executions whose output is not their version's, whether version
    1's bundles were collected once they drained)."""
    root = write_version(tmp_path / "app", 1)
    held, barrier = tmp_path / "held", tmp_path / "barrier"
    held.mkdir()
    machine = "arn:aws:states:us-east-1:000000000000:stateMachine:pinned"

    def data(i: int) -> str:
        return json.dumps({"n": i, "held": str(held), "barrier": str(barrier)})
    old, new = {}, {}
    with served([root], tmp_path / "serve") as (_, sfn):
        for i in range(n):
            old[i] = sfn.start_execution(stateMachineArn=machine, name=f"old-{i}", input=data(i))["executionArn"]
        _wait_for(lambda: len(list(held.iterdir())) >= n, 180, f"{n} executions held at the gate")
    versions = local_dir(load_app(root)) / VERSIONS
    v1 = {p.name for p in versions.iterdir()}
    write_version(root, 2)  # serve restarted on the new code: the next registration is a new version
    with served([root], tmp_path / "serve") as (_, sfn):
        for i in range(n):
            new[i] = sfn.start_execution(stateMachineArn=machine, name=f"new-{i}", input=data(i))["executionArn"]
        barrier.touch()
        got_old = {i: _output(sfn, arn) for i, arn in old.items()}
        got_new = {i: _output(sfn, arn) for i, arn in new.items()}
        wrong = [f"old-{i}: {g}" for i, g in got_old.items() if g != {"status": "SUCCEEDED", "output": expected(1, i)}]
        wrong += [f"new-{i}: {g}" for i, g in got_new.items() if g != {"status": "SUCCEEDED", "output": expected(2, i)}]
        try:
            _wait_for(lambda: not any((versions / v).exists() for v in v1), 30, "the old version to be collected")
        except AssertionError:
            pass
        collected = len(list(versions.iterdir())) == 1
    return wrong, collected


@pytest.mark.slow
def test_serve_executions_finish_on_the_version_they_started_on(tmp_path):
    wrong, collected = deploy_under_traffic_on_serve(tmp_path, N)
    assert wrong == []
    assert collected, "the old version's bundles were not collected after its executions drained"


@pytest.mark.slow
def test_the_serve_check_catches_executions_run_on_the_current_version(tmp_path, monkeypatch):
    """Injected bug: the session's pin is ignored (every invocation runs on the current
    version's bundles): the old executions end with version 2's output."""
    monkeypatch.setattr(DurableQueue, "pin", lambda self, session, version: None)
    wrong, _ = deploy_under_traffic_on_serve(tmp_path, 3)
    assert sorted(w.split(":")[0] for w in wrong) == ["old-0", "old-1", "old-2"]
