"""TestState on `unumctl serve` (unumctl/serve/test_state.py), through boto3's
`stepfunctions.test_state` against a Service with no APP on 127.0.0.1, compared with the
Step Functions API reference's TestState response members field by field: `status`
(SUCCEEDED | FAILED | RETRIABLE | CAUGHT_ERROR), `output`, `error`, `cause`, `nextState`
and `inspectionData` (input, afterInputPath, afterParameters, result, afterResultSelector,
afterResultPath, variables, errorDetails)."""

from __future__ import annotations

import json

import pytest

from tests.unumctl.serve.test_sfn_api import ROLE, ClientError, code, served

LAMBDA_FN = "arn:aws:lambda:us-east-1:000000000000:function:Charge"


@pytest.fixture
def sfn(tmp_path):
    with served([], tmp_path / "state") as (_, client):
        yield client


def run_state(sfn, state: dict, input_: object = None, **kw) -> dict:
    """One TestState call with `state` (a dict); the response without ResponseMetadata."""
    extra = {} if input_ is None else {"input": json.dumps(input_)}
    out = sfn.test_state(definition=json.dumps(state), roleArn=ROLE, **extra, **kw)
    out.pop("ResponseMetadata", None)
    return out


def test_pass_debug_shows_each_data_processing_step(sfn):
    state = {"Type": "Pass", "InputPath": "$.order", "Parameters": {"id.$": "$.id", "n": 1},
             "ResultPath": "$.got", "OutputPath": "$.got", "Next": "After"}
    out = run_state(sfn, state, {"order": {"id": "o-1"}, "x": 2}, inspectionLevel="DEBUG")
    assert out["status"] == "SUCCEEDED"
    assert out["nextState"] == "After"
    assert json.loads(out["output"]) == {"id": "o-1", "n": 1}
    d = out["inspectionData"]
    assert json.loads(d["input"]) == {"order": {"id": "o-1"}, "x": 2}
    assert json.loads(d["afterInputPath"]) == {"id": "o-1"}
    assert json.loads(d["afterParameters"]) == {"id": "o-1", "n": 1}
    assert json.loads(d["result"]) == {"id": "o-1", "n": 1}
    # ResultPath writes into the raw input (not the InputPath's selection)
    assert json.loads(d["afterResultPath"]) == {"order": {"id": "o-1"}, "x": 2, "got": {"id": "o-1", "n": 1}}
    assert json.loads(d["variables"]) == {}


def test_info_level_has_no_inspection_data(sfn):
    out = run_state(sfn, {"Type": "Pass", "Result": {"a": 1}, "End": True}, {"x": 1})
    assert out == {"status": "SUCCEEDED", "output": '{"a":1}'}


def test_choice_names_the_next_state(sfn):
    state = {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericGreaterThan": 5, "Next": "Big"}],
             "Default": "Small"}
    assert run_state(sfn, state, {"n": 9})["nextState"] == "Big"
    small = run_state(sfn, state, {"n": 1}, inspectionLevel="TRACE")
    assert small["nextState"] == "Small" and small["status"] == "SUCCEEDED"
    assert json.loads(small["inspectionData"]["afterInputPath"]) == {"n": 1}


def test_choice_without_a_match_fails_with_no_choice_matched(sfn):
    state = {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericEquals": 1, "Next": "One"}]}
    out = run_state(sfn, state, {"n": 2})
    assert out["status"] == "FAILED" and out["error"] == "States.NoChoiceMatched"
    assert "output" not in out and "nextState" not in out


def test_task_with_a_mocked_result_runs_result_selector_and_result_path(sfn):
    state = {"Type": "Task", "Resource": LAMBDA_FN, "Parameters": {"amount.$": "$.amount"},
             "ResultSelector": {"charged.$": "$.id"}, "ResultPath": "$.payment", "Next": "Ship"}
    out = run_state(sfn, state, {"amount": 5}, inspectionLevel="DEBUG",
               mock={"result": json.dumps({"id": "ch-1", "extra": True})})
    assert out["status"] == "SUCCEEDED" and out["nextState"] == "Ship"
    assert json.loads(out["output"]) == {"amount": 5, "payment": {"charged": "ch-1"}}
    d = out["inspectionData"]
    assert json.loads(d["afterParameters"]) == {"amount": 5}
    assert json.loads(d["result"]) == {"id": "ch-1", "extra": True}
    assert json.loads(d["afterResultSelector"]) == {"charged": "ch-1"}
    assert json.loads(d["afterResultPath"]) == {"amount": 5, "payment": {"charged": "ch-1"}}


def test_mocked_error_is_retriable_then_caught_then_failed(sfn):
    state = {"Type": "Task", "Resource": LAMBDA_FN, "End": True,
             "Retry": [{"ErrorEquals": ["Busy"], "IntervalSeconds": 2, "BackoffRate": 3, "MaxAttempts": 2}],
             "Catch": [{"ErrorEquals": ["Other"], "Next": "Ignored"},
                       {"ErrorEquals": ["States.ALL"], "ResultPath": "$.err", "Next": "Recover"}]}
    busy = {"errorOutput": {"error": "Busy", "cause": "try later"}}
    first = run_state(sfn, state, {"k": 1}, inspectionLevel="DEBUG", mock=busy)
    assert (first["status"], first["error"], first["cause"]) == ("RETRIABLE", "Busy", "try later")
    assert first["inspectionData"]["errorDetails"] == {"retryIndex": 0, "retryBackoffIntervalSeconds": 2}
    second = run_state(sfn, state, {"k": 1}, inspectionLevel="DEBUG", mock=busy,
                  stateConfiguration={"retrierRetryCount": 1})
    assert second["inspectionData"]["errorDetails"]["retryBackoffIntervalSeconds"] == 6  # 2 * 3**1
    caught = run_state(sfn, state, {"k": 1}, inspectionLevel="DEBUG", mock=busy,
                  stateConfiguration={"retrierRetryCount": 2})  # MaxAttempts spent: the Catch
    assert caught["status"] == "CAUGHT_ERROR" and caught["nextState"] == "Recover"
    assert caught["inspectionData"]["errorDetails"] == {"catchIndex": 1}
    assert json.loads(caught["output"]) == {"k": 1, "err": {"Error": "Busy", "Cause": "try later"}}
    bare = dict(state, Retry=[], Catch=[])
    failed = run_state(sfn, bare, {"k": 1}, mock=busy)
    assert failed == {"status": "FAILED", "error": "Busy", "cause": "try later"}


def test_jsonata_task_shows_arguments_and_assigns_variables(sfn):
    state = {"Type": "Task", "QueryLanguage": "JSONata", "Resource": "arn:aws:states:::lambda:invoke",
             "Arguments": {"FunctionName": "Charge", "Payload": "{% $states.input.n * $base %}"},
             "Assign": {"last": "{% $states.result.Payload %}"}, "Output": "{% $states.result.Payload + 1 %}",
             "End": True}
    out = run_state(sfn, state, {"n": 3}, inspectionLevel="DEBUG", variables=json.dumps({"base": 10}),
               mock={"result": json.dumps({"Payload": 30, "StatusCode": 200})})
    assert out["status"] == "SUCCEEDED" and json.loads(out["output"]) == 31
    d = out["inspectionData"]
    assert json.loads(d["afterArguments"]) == {"FunctionName": "Charge", "Payload": 30}
    assert "afterInputPath" not in d and "afterParameters" not in d  # JSONPath fields only
    assert json.loads(d["variables"]) == {"base": 10, "last": 30}


def test_state_name_picks_a_state_of_a_whole_machine(sfn):
    machine = {"StartAt": "A", "States": {
        "A": {"Type": "Pass", "Next": "B"},
        "B": {"Type": "Pass", "Parameters": {"who.$": "$$.Execution.Input.who"}, "End": True}}}
    out = sfn.test_state(definition=json.dumps(machine), stateName="B", input=json.dumps({"who": "ann"}))
    assert json.loads(out["output"]) == {"who": "ann"} and "nextState" not in out


def test_fail_state_reports_its_error(sfn):
    out = run_state(sfn, {"Type": "Fail", "Error": "Bad", "Cause": "because"})
    assert out == {"status": "FAILED", "error": "Bad", "cause": "because"}


def test_refusals_are_the_api_references_errors(sfn):
    with pytest.raises(ClientError) as exc:
        sfn.test_state(definition="{not json", roleArn=ROLE)
    assert code(exc) == "InvalidDefinition"
    with pytest.raises(ClientError) as exc:  # an ASL error, named by the validator
        run_state(sfn, {"Type": "Pass", "Next": 3})
    assert code(exc) == "InvalidDefinition"
    with pytest.raises(ClientError) as exc:
        run_state(sfn, {"Type": "Pass", "End": True}, mock={"result": "{}"})
    assert code(exc) == "ValidationException" and "Task, Map or Parallel" in str(exc.value)
    with pytest.raises(ClientError) as exc:
        run_state(sfn, {"Type": "Task", "Resource": LAMBDA_FN, "End": True},
                  mock={"result": "{}", "errorOutput": {"error": "E"}})
    assert code(exc) == "ValidationException" and "exactly one" in str(exc.value)
    with pytest.raises(ClientError) as exc:  # serve calls nothing from TestState
        run_state(sfn, {"Type": "Task", "Resource": LAMBDA_FN, "End": True})
    assert code(exc) == "ValidationException" and "mock" in str(exc.value)
    with pytest.raises(ClientError) as exc:
        sfn.test_state(definition=json.dumps({"Type": "Pass", "End": True}), input="[1,")
    assert code(exc) == "InvalidExecutionInput"
    with pytest.raises(ClientError) as exc:
        sfn.test_state(definition=json.dumps({"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}),
                       stateName="Nope")
    assert code(exc) == "ValidationException"


def test_mocked_map_result_is_placed_by_result_path(sfn):
    state = {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.done", "Next": "Sum",
             "ItemProcessor": {"StartAt": "I", "States": {"I": {"Type": "Pass", "End": True}}}}
    out = run_state(sfn, state, {"items": [1, 2]}, inspectionLevel="DEBUG", mock={"result": "[10, 20]"})
    assert out["status"] == "SUCCEEDED" and out["nextState"] == "Sum"
    assert json.loads(out["output"]) == {"items": [1, 2], "done": [10, 20]}
    assert json.loads(out["inspectionData"]["result"]) == [10, 20]
