"""`states:startExecution.sync` / `.sync:2` on the aws target (issue 34 item 6): refused at
validate and plan, in one line naming the state (unumctl/aws/unsupported.py), since a
deployed function has no Step Functions endpoint to complete the parent's task token and
the session would never finish; request-response and `.waitForTaskToken` starts are not."""

from __future__ import annotations

import pytest
import yaml

from unumctl.deploy import appgraph
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_sfn_app
from tests.unumctl.test_cli import cli_process as cli, one_error  # the cloud tests run the CLI as a child process

CHILD = "arn:aws:states:us-east-1:123456789012:stateMachine:child"


def _app(tmp_path, resource, nested=False):
    start = {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution" + resource,
             "Parameters": {"StateMachineArn": CHILD, "Input": {"x.$": "$.x"}}, "End": True}
    if resource == ".waitForTaskToken":
        start["Parameters"]["Input"]["TaskToken.$"] = "$$.Task.Token"
    child = ({"Type": "Parallel", "End": True, "Branches": [{"StartAt": "Child", "States": {"Child": start}}]}
             if nested else start)
    machine = {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Echo", "Next": "Run"},
        "Run": child}}
    root = make_sfn_app(tmp_path / "app", machine, {"Echo": "def handler(e, c):\n    return e\n"}, "sync-app")
    m = yaml.safe_load((root / "unumctl.yaml").read_text())
    m["clouds"] = {"aws": {}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(m))
    return root


@pytest.mark.parametrize("suffix", [".sync", ".sync:2"])
def test_sync_start_execution_refused_at_validate(tmp_path, suffix):
    root = _app(tmp_path, suffix)
    code, _, err = cli("validate", str(root))
    line = one_error(err)
    assert code == 2 and f"state 'Run' (States.Run.Resource): arn:aws:states:::states:startExecution{suffix} " \
        "waits for the child execution's end, which the aws target cannot observe" in line


def test_sync_in_a_branch_refused_at_plan_model(tmp_path):
    app = load_app(_app(tmp_path, ".sync", nested=True))
    with pytest.raises(AppError, match=r"state 'Child' \(States.Run.Branches\[0\].States.Child.Resource\)"):
        appgraph.build(app, "aws")
    appgraph.build(app, "local")  # local runs it (serve completes the token)


@pytest.mark.parametrize("suffix", ["", ".waitForTaskToken"])
def test_request_response_and_callback_starts_accepted(tmp_path, suffix):
    dep = appgraph.build(load_app(_app(tmp_path, suffix)), "aws")
    assert dep.entry.startswith("sync-app-dev_")
