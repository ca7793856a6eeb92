"""RedriveExecution on `unumctl serve` (runtime/redrive.py, unumctl/serve/service.py), driven
with boto3's `stepfunctions` client against the real Service and werkzeug server on 127.0.0.1
in this process: a Step Functions execution whose second Task fails is redriven and
succeeds, the first Task ran once, DescribeExecution gives redriveCount 1 and a redriveDate,
GetExecutionHistory has ExecutionRedriven; a SUCCEEDED execution is ExecutionNotRedrivable,
and a FAILED one past its 14 days is NOT_REDRIVABLE (the service's clock is set, no sleep)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from runtime.redrive import REDRIVE_WINDOW
from unumctl_testing.apps import make_sfn_app, sfn_task
from tests.unumctl.serve.test_sfn_api import code, exec_arn, machine_arn, served

COUNTED = ("def handler(event, context):\n    with open(event['dir'] + '/first.runs', 'a') as f:\n"
           "        f.write('x')\n    return event\n")
FLAKY = ("import os\n\n\ndef handler(event, context):\n    with open(event['dir'] + '/flaky.runs', 'a') as f:\n"
         "        f.write('x')\n    if not os.path.exists(event['dir'] + '/fixed'):\n"
         "        raise RuntimeError('not fixed yet')\n    return {'ok': True}\n")


@pytest.fixture
def app(tmp_path):
    root = make_sfn_app(tmp_path / "flow", {"StartAt": "First", "States": {
        "First": sfn_task("Counted", "Second"), "Second": sfn_task("Flaky")}},
        {"Counted": COUNTED, "Flaky": FLAKY}, name="flow")
    manifest = yaml.safe_load((root / "unumctl.yaml").read_text())
    manifest["runtime"] = {"redrive": True}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    return root


def runs(d: Path, name: str) -> int:
    p = d / f"{name}.runs"
    return len(p.read_text()) if p.exists() else 0


def wait_stopped(sfn, arn: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING" or time.monotonic() > deadline:
            return d
        time.sleep(0.1)


def test_redrive_execution_reruns_the_failed_task_and_keeps_the_first(app, tmp_path):
    fx = tmp_path / "fx"
    fx.mkdir()
    with served([app], tmp_path / "state") as (_svc, sfn):
        arn = sfn.start_execution(stateMachineArn=machine_arn("flow"), name="e1",
                                  input=json.dumps({"dir": str(fx)}))["executionArn"]
        d = wait_stopped(sfn, arn)
        assert d["status"] == "FAILED"
        assert (d["redriveCount"], d["redriveStatus"]) == (0, "REDRIVABLE")
        (fx / "fixed").write_text("")
        date = sfn.redrive_execution(executionArn=arn)["redriveDate"]
        d = wait_stopped(sfn, arn)
        assert d["status"] == "SUCCEEDED", d
        assert json.loads(d["output"]) == {"ok": True}
        assert d["redriveCount"] == 1
        assert d["redriveDate"].timestamp() == pytest.approx(date.timestamp(), abs=1)
        assert d["redriveStatus"] == "NOT_REDRIVABLE"
        assert (runs(fx, "first"), runs(fx, "flaky")) == (1, 2)
        events = sfn.get_execution_history(executionArn=arn)["events"]
        types = [e["type"] for e in events]
        assert types.count("ExecutionRedriven") == 1, types
        redriven = next(e for e in events if e["type"] == "ExecutionRedriven")
        assert redriven["executionRedrivenEventDetails"] == {"redriveCount": 1}
        assert types[-1] == "ExecutionSucceeded"
        with pytest.raises(Exception) as exc:
            sfn.redrive_execution(executionArn=arn)
        assert code(exc) == "ExecutionNotRedrivable"
        assert "SUCCEEDED" in exc.value.response["Error"]["Message"]
        with pytest.raises(Exception) as exc:
            sfn.redrive_execution(executionArn=exec_arn("flow", "nope"))
        assert code(exc) == "ExecutionDoesNotExist"


def test_a_failed_execution_past_14_days_is_not_redrivable(app, tmp_path):
    fx = tmp_path / "fx"
    fx.mkdir()
    with served([app], tmp_path / "state") as (svc, sfn):
        arn = sfn.start_execution(stateMachineArn=machine_arn("flow"), name="e2",
                                  input=json.dumps({"dir": str(fx)}))["executionArn"]
        stopped = wait_stopped(sfn, arn)["stopDate"].timestamp()
        svc.clock = lambda: stopped + REDRIVE_WINDOW + 3600
        d = sfn.describe_execution(executionArn=arn)
        assert d["redriveStatus"] == "NOT_REDRIVABLE"
        assert "past the redrivable period of 14 days" in d["redriveStatusReason"]
        with pytest.raises(Exception) as exc:
            sfn.redrive_execution(executionArn=arn)
        assert code(exc) == "ExecutionNotRedrivable"
        assert runs(fx, "flaky") == 1
