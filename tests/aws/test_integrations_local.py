"""Request-response Task integrations (runtime.asl.integrations) on the local target against
moto_server on 127.0.0.1 (the tests/aws fixtures), and Step Functions Local mock
configurations (runtime.asl.mocks). Each machine runs end to end through LocalRunner: the
integration Tasks run inside the compiled functions (no function of their own), with AWS's
error names under Retry and Catch. Waits use the virtual clock (no real sleeping)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import boto3
import pytest

from unumctl_testing.apps import make_sfn_app
from unumctl.asl.compiler import compile_definition
from unumctl.asl.validate import AslValidationError, validate
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

DDB = "arn:aws:states:::dynamodb:"
ECHO = "def handler(event, context):\n    return {'echo': event}\n"


@pytest.fixture
def aws(moto_env, monkeypatch):
    """moto for this process and the local workers it starts; the virtual ASL clock."""
    monkeypatch.setenv("UNUM_ASL_VIRTUAL_CLOCK", "1")
    return moto_env


def run(tmp: Path, machine: dict, value, handlers: dict[str, str] | None = None, name: str = "integ"):
    root = make_sfn_app(tmp / "app", machine, handlers or {"Echo": ECHO}, name)
    app = load_app(root)
    with LocalRunner(app, state=tmp / "state", quiet=True) as r:
        return r.run(value, timeout=60)


def table(name: str) -> str:
    boto3.client("dynamodb").create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    return name


def test_dynamodb_put_get_update_delete_and_a_caught_conditional_failure(aws, tmp_path):
    """putItem with attribute_not_exists twice: the second raises
    DynamoDB.ConditionalCheckFailedException, caught by name; then getItem, updateItem,
    deleteItem; AWS's result shapes (Item in attribute-value form)."""
    t = table("orders")
    put = {"Type": "Task", "Resource": DDB + "putItem",
           "Parameters": {"TableName": t, "Item": {"pk": {"S.$": "$.id"}, "n": {"N": "1"}},
                          "ConditionExpression": "attribute_not_exists(pk)"}, "ResultPath": None}
    machine = {"StartAt": "Put", "States": {
        "Put": {**put, "Next": "PutAgain"},
        "PutAgain": {**put, "Next": "Unreachable",
                     "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                                "ResultPath": "$.err", "Next": "Get"}]},
        "Unreachable": {"Type": "Fail", "Error": "NotCaught"},
        "Get": {"Type": "Task", "Resource": DDB + "getItem",
                "Parameters": {"TableName": t, "Key": {"pk": {"S.$": "$.id"}}},
                "ResultSelector": {"item.$": "$.Item"}, "ResultPath": "$.got", "Next": "Update"},
        "Update": {"Type": "Task", "Resource": DDB + "updateItem",
                   "Parameters": {"TableName": t, "Key": {"pk": {"S.$": "$.id"}},
                                  "UpdateExpression": "SET n = n + :one",
                                  "ExpressionAttributeValues": {":one": {"N": "1"}},
                                  "ReturnValues": "ALL_NEW"},
                   "ResultSelector": {"n.$": "$.Attributes.n.N"}, "ResultPath": "$.updated",
                   "Next": "Echo"},
        "Echo": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Echo",
                 "Next": "Delete"},
        "Delete": {"Type": "Task", "Resource": DDB + "deleteItem",
                   "Parameters": {"TableName": t, "Key": {"pk": {"S.$": "$.echo.id"}}},
                   "ResultPath": "$.deleted", "End": True}}}
    item = run(tmp_path, machine, {"id": "o-1"})
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["echo"]["err"]["Error"] == "DynamoDB.ConditionalCheckFailedException"
    assert out["echo"]["got"] == {"item": {"pk": {"S": "o-1"}, "n": {"N": "1"}}}
    assert out["echo"]["updated"] == {"n": "2"}
    assert out["deleted"]["SdkHttpMetadata"]["HttpStatusCode"] == 200
    assert "Item" not in boto3.client("dynamodb").get_item(TableName=t, Key={"pk": {"S": "o-1"}})


def test_an_integration_task_is_no_function_of_its_own():
    """Compiled, a machine with integration Tasks has functions only for its Lambda Task
    (and the synthesized entry): the integrations run where the walk reaches them."""
    machine = {"StartAt": "Send", "States": {
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl": "q", "MessageBody.$": "$"}, "Next": "Echo"},
        "Echo": {"Type": "Task", "Resource": "Echo", "Next": "Publish"},
        "Publish": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                    "Parameters": {"TopicArn": "t", "Message.$": "$"}, "End": True}}}
    compiled = compile_definition(machine, lambda n: n if n == "Echo" else None, ["Echo"])
    assert sorted(compiled.nodes) == ["Echo", "Start"], sorted(compiled.nodes)
    assert compiled.code == {"Echo": "Echo", "Start": None}


def test_retry_on_a_service_error_name_then_success(aws, tmp_path):
    """updateItem under attribute_exists(pk) on key slot<RetryCount>: slot0 and slot1 do
    not exist (DynamoDB.ConditionalCheckFailedException, retried by name), slot2 does:
    the third attempt succeeds."""
    t = table("slots")
    boto3.client("dynamodb").put_item(TableName=t, Item={"pk": {"S": "slot2"}})
    machine = {"StartAt": "Mark", "States": {"Mark": {
        "Type": "Task", "Resource": DDB + "updateItem",
        "Parameters": {"TableName": t,
                       "Key": {"pk": {"S.$": "States.Format('slot{}', $$.State.RetryCount)"}},
                       "UpdateExpression": "SET done = :t", "ConditionExpression": "attribute_exists(pk)",
                       "ExpressionAttributeValues": {":t": {"BOOL": True}}, "ReturnValues": "ALL_NEW"},
        "Retry": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"], "MaxAttempts": 2,
                   "IntervalSeconds": 5, "BackoffRate": 1.0}],
        "ResultSelector": {"pk.$": "$.Attributes.pk.S"}, "End": True}}}
    item = run(tmp_path, machine, {})
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"pk": "slot2"}
    got = boto3.client("dynamodb").get_item(TableName=t, Key={"pk": {"S": "slot2"}})["Item"]
    assert got["done"] == {"BOOL": True}


def test_sqs_send_sns_publish_and_eventbridge_put_events(aws, tmp_path):
    """sendMessage (a JSON MessageBody is sent as JSON text), publish to a topic whose
    subscriber is a queue, putEvents, and a JSONata sendMessage (Arguments/Output): the
    messages arrive and the results have AWS's fields."""
    sqs, sns = boto3.client("sqs"), boto3.client("sns")
    direct = sqs.create_queue(QueueName="direct")["QueueUrl"]
    fanned = sqs.create_queue(QueueName="fanned")["QueueUrl"]
    fanned_arn = sqs.get_queue_attributes(QueueUrl=fanned, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    topic = sns.create_topic(Name="news")["TopicArn"]
    sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=fanned_arn,
                  Attributes={"RawMessageDelivery": "true"})
    machine = {"StartAt": "Send", "States": {
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl": direct, "MessageBody": {"order.$": "$.order"}},
                 "ResultPath": "$.sent", "Next": "Publish"},
        "Publish": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                    "Parameters": {"TopicArn": topic, "Message.$": "$.order"},
                    "ResultPath": "$.published", "Next": "Emit"},
        "Emit": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents",
                 "Parameters": {"Entries": [{"Source": "unum.test", "DetailType": "Order",
                                             "Detail": {"order.$": "$.order"}}]},
                 "ResultPath": "$.emitted", "Next": "SendJsonata"},
        "SendJsonata": {"Type": "Task", "QueryLanguage": "JSONata",
                        "Resource": "arn:aws:states:::sqs:sendMessage",
                        "Arguments": {"QueueUrl": direct, "MessageBody": "{% 'again ' & $states.input.order %}"},
                        "Output": "{% $merge([$states.input, {'again': $states.result.MessageId}]) %}",
                        "End": True}}}
    item = run(tmp_path, machine, {"order": "o-7"})
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["sent"]["MessageId"] and out["sent"]["MD5OfMessageBody"]
    assert out["published"]["MessageId"]
    assert out["emitted"]["FailedEntryCount"] == 0 and out["emitted"]["Entries"][0]["EventId"]
    bodies = [m["Body"] for m in sqs.receive_message(QueueUrl=direct, MaxNumberOfMessages=10)["Messages"]]
    assert sorted(bodies) == sorted([json.dumps({"order": "o-7"}, separators=(",", ":")), "again o-7"]), bodies
    assert out["again"]
    assert sqs.receive_message(QueueUrl=fanned)["Messages"][0]["Body"] == "o-7"


def test_aws_sdk_s3_and_dynamodb_query_with_a_caught_sdk_error(aws, tmp_path):
    """aws-sdk:s3:putObject/getObject (PascalCase parameters, the Body as text), a getObject
    of a missing key caught as S3.NoSuchKeyException, and aws-sdk:dynamodb:query."""
    boto3.client("s3").create_bucket(Bucket="docs")
    t = table("things")
    boto3.client("dynamodb").put_item(TableName=t, Item={"pk": {"S": "a"}, "v": {"N": "3"}})
    sdk = "arn:aws:states:::aws-sdk:"
    machine = {"StartAt": "Put", "States": {
        "Put": {"Type": "Task", "Resource": sdk + "s3:putObject",
                "Parameters": {"Bucket": "docs", "Key": "k.txt", "Body.$": "$.text"},
                "ResultPath": None, "Next": "Get"},
        "Get": {"Type": "Task", "Resource": sdk + "s3:getObject",
                "Parameters": {"Bucket": "docs", "Key": "k.txt"},
                "ResultSelector": {"body.$": "$.Body"}, "ResultPath": "$.got", "Next": "Missing"},
        "Missing": {"Type": "Task", "Resource": sdk + "s3:getObject",
                    "Parameters": {"Bucket": "docs", "Key": "nope"}, "Next": "Unreachable",
                    "Catch": [{"ErrorEquals": ["S3.NoSuchKeyException"], "ResultPath": "$.err",
                               "Next": "Query"}]},
        "Unreachable": {"Type": "Fail", "Error": "NotCaught"},
        "Query": {"Type": "Task", "Resource": sdk + "dynamodb:query",
                  "Parameters": {"TableName": t, "KeyConditionExpression": "pk = :k",
                                 "ExpressionAttributeValues": {":k": {"S": "a"}}},
                  "ResultSelector": {"count.$": "$.Count", "items.$": "$.Items"},
                  "ResultPath": "$.q", "End": True}}}
    item = run(tmp_path, machine, {"text": "hello"})
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["got"] == {"body": "hello"}
    assert out["err"]["Error"] == "S3.NoSuchKeyException", out["err"]
    assert out["q"] == {"count": 1, "items": [{"pk": {"S": "a"}, "v": {"N": "3"}}]}


def test_aws_sdk_camel_case_api_takes_pascal_case_parameters_and_answers_in_pascal_case(aws, tmp_path):
    """Step Functions' own API is camelCase in its model (stateMachineArn, nextToken); an
    aws-sdk Task writes its parameters in PascalCase and reads the response in PascalCase
    (supported-services-awssdk.html "API naming conventions"): sfn createStateMachine,
    describeStateMachine and listExecutions (StatusFilter, the NextToken a pagination loop
    reads) on moto. Fails without runtime.asl.integrations.sdk to_model / from_model."""
    sdk = "arn:aws:states:::aws-sdk:sfn:"
    role = "arn:aws:iam::123456789012:role/sfn"
    child = json.dumps({"StartAt": "P", "States": {"P": {"Type": "Pass", "End": True}}})
    machine = {"StartAt": "Create", "States": {
        "Create": {"Type": "Task", "Resource": sdk + "createStateMachine",
                   "Parameters": {"Name": "child", "Definition": child, "RoleArn": role},
                   "ResultSelector": {"arn.$": "$.StateMachineArn"}, "ResultPath": "$.sm", "Next": "Describe"},
        "Describe": {"Type": "Task", "Resource": sdk + "describeStateMachine",
                     "Parameters": {"StateMachineArn.$": "$.sm.arn"},
                     "ResultSelector": {"name.$": "$.Name", "status.$": "$.Status"},
                     "ResultPath": "$.described", "Next": "List"},
        "List": {"Type": "Task", "Resource": sdk + "listExecutions",
                 "Parameters": {"StateMachineArn.$": "$.sm.arn", "StatusFilter": "SUCCEEDED", "MaxResults": 5},
                 "ResultSelector": {"executions.$": "$.Executions"}, "ResultPath": "$.listed", "End": True}}}
    item = run(tmp_path, machine, {})
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["described"] == {"name": "child", "status": "ACTIVE"}
    assert out["listed"] == {"executions": []}
    # the validator asks for the required members in PascalCase too
    validate(_state(sdk + "sendTaskSuccess", {"TaskToken.$": "$.t", "Output": "{}"}), "sm.json")
    with pytest.raises(AslValidationError, match=r"Parameters\.TaskToken: .* requires TaskToken"):
        validate(_state(sdk + "sendTaskSuccess", {"Output": "{}"}), "sm.json")


MOCKS = {
    "StateMachines": {"mocked": {"TestCases": {
        "HappyPath": {"Work": "WorkOk", "Send": "SendOk"},
        "RetryPath": {"Work": "WorkFlaky", "Send": "SendOk"},
        "HybridPath": {"Work": "WorkOk"}}}},
    "MockedResponses": {
        "WorkOk": {"0": {"Return": {"StatusCode": 200, "Payload": {"mocked": True}}}},
        "WorkFlaky": {"0": {"Throw": {"Error": "Lambda.ResourceNotReadyException", "Cause": "not ready"}},
                      "1-2": {"Throw": {"Error": "Lambda.TimeoutException", "Cause": "timed out"}},
                      "3": {"Return": {"StatusCode": 200, "Payload": {"mocked": "late"}}}},
        "SendOk": {"0": {"Return": {"MD5OfMessageBody": "x", "MessageId": "m-1"}}}}}
MOCKED_MACHINE = {"StartAt": "Work", "States": {
    "Work": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
             "Parameters": {"FunctionName": "Echo", "Payload.$": "$"}, "ResultSelector": {"p.$": "$.Payload"},
             "Retry": [{"ErrorEquals": ["Lambda.ResourceNotReadyException", "Lambda.TimeoutException"],
                        "MaxAttempts": 3, "IntervalSeconds": 2}], "ResultPath": "$.work", "Next": "Send"},
    "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
             "Parameters": {"QueueUrl": "http://127.0.0.1:9/none", "MessageBody.$": "$"},
             "ResultPath": "$.sent", "End": True}}}
TOUCH = textwrap.dedent("""\
    import os
    def handler(event, context):
        open(os.path.join(event['dir'], 'ran'), 'w').write('1')
        return {'real': True}
    """)


@pytest.mark.parametrize("case,work", [("HappyPath", {"p": {"mocked": True}}),
                                       ("RetryPath", {"p": {"mocked": "late"}})])
def test_mock_config_test_cases(tmp_path, monkeypatch, case, work):
    """A Step Functions Local mock configuration answers the Lambda and SQS Tasks of the
    selected test case (attempt ranges included, under the state's Retry); neither the
    function nor the queue (an unreachable endpoint) is called."""
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(MOCKS))
    monkeypatch.setenv("SFN_MOCK_CONFIG", str(path))
    monkeypatch.setenv("UNUM_SFN_TEST_CASE", case)
    monkeypatch.setenv("UNUM_ASL_VIRTUAL_CLOCK", "1")
    item = run(tmp_path, MOCKED_MACHINE, {"dir": str(tmp_path)}, {"Echo": TOUCH}, name="mocked")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["work"] == work
    assert item["v"]["sent"] == {"MD5OfMessageBody": "x", "MessageId": "m-1"}
    assert not (tmp_path / "ran").exists()


def test_mock_config_unmocked_state_runs_for_real(tmp_path, monkeypatch):
    """HybridPath mocks only the Lambda Task: the SQS Task calls its (unreachable)
    endpoint and fails with States.TaskFailed, as an unmocked Task does."""
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(MOCKS))
    monkeypatch.setenv("SFN_MOCK_CONFIG", str(path))
    monkeypatch.setenv("UNUM_SFN_TEST_CASE", "HybridPath")
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(k, v)
    item = run(tmp_path, MOCKED_MACHINE, {"dir": str(tmp_path)}, {"Echo": TOUCH}, name="mocked")
    assert item["status"] == "FAILED", item
    assert "States.TaskFailed" in json.dumps(item), item


def _state(resource: str, params: dict | None) -> dict:
    st = {"Type": "Task", "Resource": resource, "End": True}
    if params is not None:
        st["Parameters"] = params
    return {"StartAt": "S", "States": {"S": st}}


@pytest.mark.parametrize("resource,params,message", [
    (DDB + "putItem", {"TableName": "t"}, "States.S.Parameters.Item: arn:aws:states:::dynamodb:putItem requires Item"),
    (DDB + "getItem", None, "States.S.Parameters: arn:aws:states:::dynamodb:getItem needs Parameters"),
    ("arn:aws:states:::sns:publish", {"Message": "m"}, "requires TopicArn or TargetArn or PhoneNumber"),
    ("arn:aws:states:::aws-sdk:s3:getObject", {"Bucket": "b"}, "States.S.Parameters.Key:"),
    ("arn:aws:states:::aws-sdk:s3:noSuchAction", {}, "States.S.Resource: aws-sdk service 's3' has no action"),
    ("arn:aws:states:::glue:startCrawler.sync", {}, "States.S.Resource: 'arn:aws:states:::glue:startCrawler.sync' "
                                               "is not a supported integration"),
])
def test_validator_names_the_state_and_the_missing_field(resource, params, message):
    with pytest.raises(AslValidationError) as e:
        validate(_state(resource, params), "sm.json")
    assert message in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_validator_accepts_required_fields_given_as_paths():
    validate(_state(DDB + "putItem", {"TableName": "t", "Item.$": "$.item"}), "sm.json")
    validate(_state("arn:aws:states:::aws-sdk:s3:getObject", {"Bucket": "b", "Key.$": "$.k"}), "sm.json")


def test_gcp_target_refuses_an_aws_integration_naming_the_state(tmp_path):
    """`build(app, 'gcp')` (what `unumctl validate`/`plan` run for a gcp app) refuses a
    machine with an integration Task inside a Map, naming the state; the same app without
    it builds."""
    from unumctl.deploy.appgraph import build
    send = {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
            "Parameters": {"QueueUrl": "q", "MessageBody.$": "$"}, "End": True}
    machine = {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "Echo", "Next": "Each"},
        "Each": {"Type": "Map", "ItemsPath": "$.echo", "End": True,
                 "ItemProcessor": {"StartAt": "Send", "States": {"Send": send}}}}}
    app = load_app(make_sfn_app(tmp_path / "a", machine, {"Echo": ECHO}))
    with pytest.raises(Exception) as e:
        build(app, "gcp", project="p")
    msg = str(e.value)
    assert "States.Each.ItemProcessor.States.Send.Resource: arn:aws:states:::sqs:sendMessage is an " \
           "AWS service integration" in msg and "\n" not in msg, msg
    machine["States"]["Each"]["ItemProcessor"]["States"]["Send"] = {"Type": "Pass", "End": True}
    build(load_app(make_sfn_app(tmp_path / "b", machine, {"Echo": ECHO})), "gcp", project="p")


def test_manifest_aws_endpoint_points_the_workers_at_the_emulator(moto_url, monkeypatch, tmp_path):
    """With boto3's AWS_ENDPOINT_URL pointing at a closed port of 127.0.0.1, the manifest's
    `integrations.aws_endpoint` alone sends the integration to moto_server, signed with the
    key pair given for it (UNUM_AWS_CREDENTIALS; never the environment's keys)."""
    import yaml
    from .conftest import aws_env
    monkeypatch.delenv("UNUM_AWS_ENDPOINT", raising=False)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    keys = aws_env(moto_url)  # the admin user's keys: moto_url enforces IAM
    for k, v in {"AWS_ACCESS_KEY_ID": "AKIAENVIRONMENTKEY00", "AWS_SECRET_ACCESS_KEY": "environment-secret",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true",
                 "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
                 "UNUM_AWS_CREDENTIALS": json.dumps({"aws_access_key_id": keys["AWS_ACCESS_KEY_ID"],
                                                     "aws_secret_access_key": keys["AWS_SECRET_ACCESS_KEY"]})}.items():
        monkeypatch.setenv(k, v)
    admin = {"aws_access_key_id": keys["AWS_ACCESS_KEY_ID"], "aws_secret_access_key": keys["AWS_SECRET_ACCESS_KEY"]}
    queue = boto3.client("sqs", endpoint_url=moto_url, **admin).create_queue(QueueName="via-manifest")["QueueUrl"]
    machine = {"StartAt": "Send", "States": {"Send": {
        "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
        "Parameters": {"QueueUrl": queue, "MessageBody.$": "$.m"}, "ResultSelector": {"id.$": "$.MessageId"},
        "End": True}}}
    root = make_sfn_app(tmp_path / "app", machine, {"Echo": ECHO})
    doc = yaml.safe_load((root / "unumctl.yaml").read_text())
    doc["integrations"] = {"aws_endpoint": moto_url}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        item = r.run({"m": "hi"}, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    msgs = boto3.client("sqs", endpoint_url=moto_url, **admin).receive_message(QueueUrl=queue)["Messages"]
    assert msgs[0]["MessageId"] == item["v"]["id"] and msgs[0]["Body"] == "hi"


def test_manifest_bad_aws_endpoint_is_one_line_naming_the_field(tmp_path):
    import yaml
    from unumctl.manifest import AppError
    root = make_sfn_app(tmp_path / "app", {"StartAt": "E", "States": {"E": {"Type": "Task", "Resource": "Echo",
                                                                          "End": True}}}, {"Echo": ECHO})
    doc = yaml.safe_load((root / "unumctl.yaml").read_text())
    doc["integrations"] = {"aws_endpoint": "http://user:secret@127.0.0.1:4566"}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(AppError) as e:
        load_app(root)
    assert "integrations.aws_endpoint" in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_embedded_emulator_by_default_started_and_stopped_with_the_platform(no_aws_endpoint, tmp_path):
    """No endpoint anywhere: the local platform starts moto_server on 127.0.0.1 for the
    integrations (its URL in <state>/aws-endpoint, where boto3 sees the queue the machine
    created), and stops it with the platform."""
    import socket

    sdk = "arn:aws:states:::aws-sdk:sqs:"
    machine = {"StartAt": "Create", "States": {
        "Create": {"Type": "Task", "Resource": sdk + "createQueue", "Parameters": {"QueueName": "inbox"},
                   "ResultPath": "$.q", "Next": "Send"},
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl.$": "$.q.QueueUrl", "MessageBody.$": "$.m"},
                 "ResultPath": None, "End": True}}}
    root = make_sfn_app(tmp_path / "app", machine, {"Echo": ECHO})
    state = tmp_path / "state"
    with LocalRunner(load_app(root), state=state, quiet=True) as r:
        # checked before the run: without the emulator the run would go to real AWS
        url = (state / "aws-endpoint").read_text().strip()
        assert url.startswith("http://127.0.0.1:")
        item = r.run({"m": "hello"}, timeout=60)
        sqs = boto3.client("sqs", endpoint_url=url)
        msgs = sqs.receive_message(QueueUrl=item["v"]["q"]["QueueUrl"])["Messages"]
    assert item["status"] == "SUCCEEDED", item
    assert msgs[0]["Body"] == "hello"
    assert not (state / "aws-endpoint").exists()
    port = int(url.rsplit(":", 1)[1])
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0  # stopped with the platform


@pytest.mark.parametrize("resource,actions", [
    (DDB + "putItem", ["dynamodb:PutItem"]), (DDB + "getItem", ["dynamodb:GetItem"]),
    ("arn:aws:states:::sns:publish", ["sns:Publish"]), ("arn:aws:states:::sqs:sendMessage", ["sqs:SendMessage"]),
    ("arn:aws:states:::events:putEvents", ["events:PutEvents"]),
    ("arn:aws:states:::aws-sdk:s3:getObject", ["s3:GetObject"]),
    ("arn:aws:states:::aws-sdk:dynamodb:query", ["dynamodb:Query"]),
    ("arn:aws:states:::aws-sdk:sfn:startExecution", ["states:StartExecution"]),
])
def test_each_integration_names_its_iam_actions(resource, actions):
    """The IAM actions the aws target will grant (data only; not wired into the role yet)."""
    from runtime.asl.integrations import registry as integrations
    assert integrations.iam_actions(integrations.find(resource)) == actions


def test_side_effect_is_at_least_once_the_committed_result_once(aws, tmp_path):
    """Crashes before the checkpoint on every attempt but the last (runtime.faults): the
    entry function's integration Task (updateItem ADD n 1) runs once per attempt, 3 times
    (at-least-once side effect), and the workflow goes on with the one committed result,
    the last attempt's (n = 3), through the next function to the session's result."""
    from runtime.faults import FaultSpec
    t = table("counters")
    machine = {"StartAt": "Count", "States": {
        "Count": {"Type": "Task", "Resource": DDB + "updateItem",
                  "Parameters": {"TableName": t, "Key": {"pk": {"S": "c"}}, "UpdateExpression": "ADD n :one",
                                 "ExpressionAttributeValues": {":one": {"N": "1"}}, "ReturnValues": "UPDATED_NEW"},
                  "ResultSelector": {"n.$": "$.Attributes.n.N"}, "Next": "Echo"},
        "Echo": {"Type": "Task", "Resource": "Echo", "End": True}}}
    root = make_sfn_app(tmp_path / "app", machine, {"Echo": ECHO})
    with LocalRunner(load_app(root), faults=FaultSpec.parse("seed=1,before_checkpoint=1.0"),
                     state=tmp_path / "state", quiet=True) as r:
        item = r.run({}, timeout=60)
        attempts = r.deployment.max_delivery_attempts
    assert item["status"] == "SUCCEEDED", item
    n = boto3.client("dynamodb").get_item(TableName=t, Key={"pk": {"S": "c"}})["Item"]["n"]["N"]
    assert int(n) == attempts == 3
    assert item["v"] == {"echo": {"n": "3"}}


def test_walk_runs_an_integration_task_in_place(tmp_path, monkeypatch):
    """Machine.walk runs an integration Task as it runs a Pass (answered here by a mock
    configuration) and stops only at the Lambda Task after it."""
    from runtime.asl.machine import Machine
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps({"StateMachines": {"m": {"TestCases": {"T": {"Send": "Ok"}}}},
                                "MockedResponses": {"Ok": {"0": {"Return": {"MessageId": "m-9"}}}}}))
    monkeypatch.setenv("UNUM_SFN_MOCK_CONFIG", str(path))
    monkeypatch.setenv("UNUM_SFN_TEST_CASE", "T")
    definition = {"StartAt": "Send", "States": {
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "Parameters": {"QueueUrl": "q", "MessageBody.$": "$"}, "ResultPath": "$.sent", "Next": "Echo"},
        "Echo": {"Type": "Task", "Resource": "Echo", "End": True}}}
    m = Machine(definition, {"StateMachine": {"Name": "m"}}, clock=lambda: 0.0, sleep=lambda s: None)
    stop = m.walk("", "Send", {"a": 1})
    assert (stop.kind, stop.name, stop.value) == ("Task", "Echo", {"a": 1, "sent": {"MessageId": "m-9"}})


def test_lambda_outside_the_app_on_local_through_the_aws_endpoint(monkeypatch, tmp_path):
    """On the local target a lambda:invoke of a function outside the app goes to the
    manifest's `integrations.aws_endpoint` (here the local Lambda emulator serving Invoke on
    127.0.0.1, as LocalStack would): AWS's result shape, and a function error caught by its
    errorType."""
    import shutil

    import yaml

    from tests.aws.test_integrations_iam_aws import EXTERNAL, external_machine
    from unumctl_testing.apps import ROOT
    from unumctl.aws.emulate.local_lambda import LocalFunctionSpec, LocalLambda
    monkeypatch.delenv("UNUM_AWS_ENDPOINT", raising=False)
    for k, v in {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1",
                 "AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "http://127.0.0.1:9"}.items():
        monkeypatch.setenv(k, v)
    ext = tmp_path / "billing-ext"
    shutil.copytree(ROOT / "runtime", ext / "runtime", ignore=shutil.ignore_patterns("__pycache__"))
    (ext / "ext.py").write_text(EXTERNAL)
    root = make_sfn_app(tmp_path / "app", external_machine(), {"Echo": "def handler(event, context):\n    return event\n"})
    with LocalLambda({"billing-ext": LocalFunctionSpec(ext, "ext.handler", {})}, {}) as emu:
        doc = yaml.safe_load((root / "unumctl.yaml").read_text())
        doc["integrations"] = {"aws_endpoint": emu.url}
        (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
        with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
            item = r.run({"id": "o-9"}, timeout=60)
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["bill"]["Payload"] == {"billed": "o-9", "by": "billing-ext"} and out["bill"]["StatusCode"] == 200
    assert out["missing"]["Error"] == "Lambda.ResourceNotFoundException"
    assert out["boom"] == {"Error": "ValueError", "Cause": "refused by billing"}


def test_run_a_job_sync_tasks_on_local(aws, tmp_path):
    """An Athena query and a Glue job run, each `.sync`, then a request-response Athena
    start, walked in the compiled function after Echo on the local target against
    moto_server: each `.sync` Task's result is the job's final description, the
    request-response one the start API's response; the Glue run is recorded by the service."""
    job = "etl-local"
    boto3.client("glue").create_job(Name=job, Role="arn:aws:iam::123456789012:role/glue",
                                    Command={"Name": "glueetl", "ScriptLocation": "s3://b/s.py"})
    query = {"QueryString": "SELECT 1", "ResultConfiguration": {"OutputLocation": "s3://r/q"}}
    machine = {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "Echo", "ResultPath": None, "Next": "Query"},
        "Query": {"Type": "Task", "Resource": "arn:aws:states:::athena:startQueryExecution.sync",
                  "Parameters": query, "ResultSelector": {"state.$": "$.QueryExecution.Status.State"},
                  "ResultPath": "$.query", "Next": "Etl"},
        "Etl": {"Type": "Task", "Resource": "arn:aws:states:::glue:startJobRun.sync",
                "Parameters": {"JobName": job}, "ResultSelector": {"state.$": "$.JobRunState", "id.$": "$.Id"},
                "ResultPath": "$.etl", "Next": "Later"},
        "Later": {"Type": "Task", "Resource": "arn:aws:states:::athena:startQueryExecution",
                  "Parameters": query, "ResultSelector": {"id.$": "$.QueryExecutionId"},
                  "ResultPath": "$.later", "End": True}}}
    item = run(tmp_path, machine, {"n": 1})
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["query"] == {"state": "SUCCEEDED"} and out["etl"]["state"] == "SUCCEEDED" and out["later"]["id"]
    runs = boto3.client("glue").get_job_runs(JobName=job)["JobRuns"]
    assert [r["Id"] for r in runs] == [out["etl"]["id"]]
