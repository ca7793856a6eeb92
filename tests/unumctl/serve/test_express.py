"""EXPRESS state machines on `unumctl serve` (docs/local-service.md "Express workflows"),
through boto3 against a Service on 127.0.0.1: CreateStateMachine type EXPRESS,
StartSyncExecution's synchronous answer with the Express ARN, repeated names, and the
per-execution operations AWS does not serve for Express (DescribeExecution,
GetExecutionHistory, StopExecution: InvalidArn; ListExecutions:
StateMachineTypeNotSupported), against a STANDARD machine that keeps them."""

from __future__ import annotations

import json

import pytest

from tests.unumctl.serve.test_sfn_api import PASS_FLOW, PREFIX, ROLE, ClientError, code, machine_arn, served, wait_status
from unumctl_testing.apps import make_sfn_app

pytestmark = pytest.mark.slow  # each test starts serve's worker processes (5-10 s)

FAIL_FLOW = {"StartAt": "No", "States": {"No": {"Type": "Fail", "Error": "Nope", "Cause": "said no"}}}


@pytest.fixture
def sfn(tmp_path):
    with served([], tmp_path / "state") as (_, client):
        yield client


def test_start_sync_execution_answers_with_the_express_arn_and_output(sfn):
    sfn.create_state_machine(name="fast", definition=json.dumps(PASS_FLOW), roleArn=ROLE, type="EXPRESS")
    assert sfn.describe_state_machine(stateMachineArn=machine_arn("fast"))["type"] == "EXPRESS"
    first = sfn.start_sync_execution(stateMachineArn=machine_arn("fast"), name="same", input=json.dumps({"who": "x"}))
    assert first["status"] == "SUCCEEDED" and json.loads(first["output"]) == {"greeting": "hi x"}
    assert first["name"] == "same"
    assert first["executionArn"].startswith(f"{PREFIX}:express:fast:same:")
    # an Express name may repeat: another execution, another ARN
    again = sfn.start_sync_execution(stateMachineArn=machine_arn("fast"), name="same", input=json.dumps({"who": "y"}))
    assert json.loads(again["output"]) == {"greeting": "hi y"} and again["executionArn"] != first["executionArn"]
    failed = sfn.create_state_machine(name="fails", definition=json.dumps(FAIL_FLOW), roleArn=ROLE, type="EXPRESS")
    out = sfn.start_sync_execution(stateMachineArn=failed["stateMachineArn"])
    assert (out["status"], out["error"], out["cause"]) == ("FAILED", "Nope", "said no")  # 200, as AWS


def test_express_executions_have_no_execution_record_standard_ones_do(sfn):
    sfn.create_state_machine(name="fast", definition=json.dumps(PASS_FLOW), roleArn=ROLE, type="EXPRESS")
    sfn.create_state_machine(name="slow", definition=json.dumps(PASS_FLOW), roleArn=ROLE)
    run = sfn.start_execution(stateMachineArn=machine_arn("fast"), input=json.dumps({"who": "x"}))
    assert ":express:fast:" in run["executionArn"]
    for call in (sfn.describe_execution, sfn.get_execution_history, sfn.stop_execution):
        with pytest.raises(ClientError) as exc:
            call(executionArn=run["executionArn"])
        assert code(exc) == "InvalidArn" and "express" in str(exc.value)
    with pytest.raises(ClientError) as exc:  # an execution ARN of the Express machine's name too
        sfn.describe_execution(executionArn=f"{PREFIX}:execution:fast:{run['executionArn'].rsplit(':', 1)[1]}")
    assert code(exc) == "InvalidArn"
    with pytest.raises(ClientError) as exc:
        sfn.list_executions(stateMachineArn=machine_arn("fast"))
    assert code(exc) == "StateMachineTypeNotSupported"
    std = sfn.start_execution(stateMachineArn=machine_arn("slow"), name="s1", input=json.dumps({"who": "z"}))
    assert wait_status(sfn, std["executionArn"])["status"] == "SUCCEEDED"
    assert sfn.get_execution_history(executionArn=std["executionArn"])["events"]
    assert [e["name"] for e in sfn.list_executions(stateMachineArn=machine_arn("slow"))["executions"]] == ["s1"]


def test_an_app_whose_manifest_says_express_is_served_as_express(tmp_path):
    app = make_sfn_app(tmp_path / "quick", PASS_FLOW, {}, name="quick")
    manifest = app / "unumctl.yaml"
    manifest.write_text(manifest.read_text().replace("stepfunctions: statemachine.json",
                                                     "stepfunctions: statemachine.json\n  type: EXPRESS"))
    assert "type: EXPRESS" in manifest.read_text()
    with served([app], tmp_path / "state") as (_, sfn):
        assert sfn.describe_state_machine(stateMachineArn=machine_arn("quick"))["type"] == "EXPRESS"
        out = sfn.start_sync_execution(stateMachineArn=machine_arn("quick"), input=json.dumps({"who": "q"}))
        assert json.loads(out["output"]) == {"greeting": "hi q"}
        with pytest.raises(ClientError) as exc:
            sfn.list_executions(stateMachineArn=machine_arn("quick"))
        assert code(exc) == "StateMachineTypeNotSupported"
