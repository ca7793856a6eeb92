"""Step Functions service integrations on the AWS target under moto's IAM enforcement.

The compiled functions are the BUILT aws archives run by the local Lambda emulator, each
signing with the credentials of its execution role's twin, whose policy is the one iam.tf
renders: the runtime's table plus the statements of the integration Tasks the function runs
(runtime/aws/iam.py integration_statements, from the compiler's `Integrations`). Every AWS
call is recorded and checked against that policy (tests/aws/conftest.py `aws_calls`);
moto itself refuses what the twin's policy does not grant.

Here: a machine with a Lambda Task and, walked in place after it, a DynamoDB putItem, the
same putItem again (ConditionalCheckFailed: retried once, then caught by its name), a
getItem, an SNS publish, an EventBridge putEvents, an aws-sdk SQS getQueueAttributes and an
SQS sendMessage completes with no AccessDenied; only the
function that runs those Tasks gets their statements, each on the resource the definition
names; with one action taken out of the role, the run fails (moto's AccessDenied) and the
call check names the missing grant.
"""

from __future__ import annotations

import json
import uuid

import boto3
import pytest

from runtime.aws.datastore import DynamoDBDatastore
from runtime.aws.iam import integration_statements
from unumctl.pipeline import deployment
from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.pipeline import load as load_app
from unumctl_testing.aws import iam as test_iam
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs

from unumctl_testing.apps import make_sfn_app
from .conftest import ACCOUNT, REGION, aws_env
from .test_examples_aws import wait_result

DDB = "arn:aws:states:::dynamodb:"
ECHO = "def handler(event, context):\n    return {'id': event['id'], 'n': 1}\n"


def resources(suffix: str) -> tuple[str, str, str]:
    """A user table, topic and queue on moto (made with the admin's keys): (table, topic
    ARN, queue URL)."""
    table = f"orders-{suffix}"
    boto3.client("dynamodb").create_table(
        TableName=table, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    topic = boto3.client("sns").create_topic(Name=f"done-{suffix}")["TopicArn"]
    queue = boto3.client("sqs").create_queue(QueueName=f"work-{suffix}")["QueueUrl"]
    return table, topic, queue


def machine(table: str, topic: str, queue: str) -> dict:
    put = {"Type": "Task", "Resource": DDB + "putItem", "ResultPath": None,
           "Parameters": {"TableName": table, "Item": {"pk": {"S.$": "$.id"}, "n": {"N": "1"}},
                          "ConditionExpression": "attribute_not_exists(pk)"}}
    return {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Echo",
                 "Next": "Put"},
        "Put": {**put, "Next": "PutAgain"},
        "PutAgain": {**put, "Next": "Unreachable",
                     "Retry": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                                "IntervalSeconds": 1, "MaxAttempts": 1}],
                     "Catch": [{"ErrorEquals": ["DynamoDB.ConditionalCheckFailedException"],
                                "ResultPath": "$.err", "Next": "Get"}]},
        "Unreachable": {"Type": "Fail", "Error": "Unreachable"},
        "Get": {"Type": "Task", "Resource": DDB + "getItem", "ResultSelector": {"n.$": "$.Item.n.N"},
                "ResultPath": "$.got",
                "Parameters": {"TableName": table, "Key": {"pk": {"S.$": "$.id"}}}, "Next": "Publish"},
        "Publish": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "ResultPath": None,
                    "Parameters": {"TopicArn": topic, "Message.$": "$.got"}, "Next": "Announce"},
        "Announce": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents", "Next": "Depth",
                     "ResultSelector": {"failed.$": "$.FailedEntryCount"}, "ResultPath": "$.events",
                     "Parameters": {"Entries": [{"Source": "unum.test", "DetailType": "order", "Detail.$": "$.got"}]}},
        "Depth": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:getQueueAttributes", "Next": "Send",
                  "ResultSelector": {"n.$": "$.Attributes.ApproximateNumberOfMessages"}, "ResultPath": "$.depth",
                  "Parameters": {"QueueUrl": queue, "AttributeNames": ["ApproximateNumberOfMessages"]}},
        "Send": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage",
                 "ResultSelector": {"sent.$": "States.ArrayLength(States.Array($.MessageId))"},
                 "ResultPath": "$.sqs",
                 "Parameters": {"QueueUrl": queue, "MessageBody.$": "$.got"}, "End": True}}}


def run(tmp_path, moto_url: str, drop: str | None = None):
    """Deploy and run the machine once; `drop`: an IAM action taken out of the integration
    statements first (the fault). Returns (result item, deployment, recorded calls, the
    resources)."""
    suffix = uuid.uuid4().hex[:8]
    table, topic, queue = resources(suffix)
    root = make_sfn_app(tmp_path / "app", machine(table, topic, queue), {"Echo": ECHO}, f"integ-{suffix}")
    dep = deployment(load_app(root), "aws")
    if drop:
        for f in dep.functions:
            for st in f.role.integrations:
                st["actions"] = [a for a in st["actions"] if a != drop]
            f.role.integrations = [st for st in f.role.integrations if st["actions"]]
    store = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(store, bucket)
    specs = local_specs(dep, store, bucket, tmp_path / "bundles")
    sid = str(uuid.uuid4())
    with LocalLambda(specs, aws_env(moto_url), concurrency=2) as emu:
        boto3.client("lambda", endpoint_url=emu.url).invoke(
            FunctionName=dep.entry, InvocationType="Event",
            Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": {"id": "o-1"}}}))
        item = wait_result(DynamoDBDatastore(store), sid, 60, emu)
        emu.wait_idle(60)
    return item, dep, (table, topic, queue)


def test_integrations_run_under_iam_enforcement_with_retry_and_catch(moto_env, tmp_path, aws_calls):
    item, dep, (table, topic, queue) = run(tmp_path, moto_env)
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["err"]["Error"] == "DynamoDB.ConditionalCheckFailedException"
    assert out["got"] == {"n": "1"} and out["sqs"] == {"sent": 1}
    calls = test_iam.read_calls(aws_calls)
    assert not test_iam.denied(calls), test_iam.denied(calls)[:5]
    puts = [c for c in calls if c["op"] == "dynamodb:PutItem" and c["params"].get("table") == table]
    assert len(puts) == 3, puts  # Put, PutAgain and its one retry
    assert {c["op"] for c in calls} >= {"dynamodb:GetItem", "sns:Publish", "sqs:SendMessage", "events:PutEvents",
                                        "sqs:GetQueueAttributes"}
    assert out["events"] == {"failed": 0} and out["depth"] == {"n": "0"}
    # the service saw the side effects
    msgs = boto3.client("sqs").receive_message(QueueUrl=queue, MaxNumberOfMessages=1)["Messages"]
    assert json.loads(msgs[0]["Body"]) == {"n": "1"}
    # only the function that walks the integration Tasks gets their statements
    echo = dep.function("Echo")
    assert all(not f.role.integrations for f in dep.all_functions if f is not echo)
    arn = f"arn:{{partition}}:dynamodb:{{region}}:{{account}}:table/{table}"
    stmts = {tuple(s["resources"]): s["actions"] for s in echo.role.integrations}
    assert stmts[(arn,)] == ["dynamodb:GetItem", "dynamodb:PutItem"]
    assert stmts[(topic,)] == ["sns:Publish"]
    queue_arn = f"arn:{{partition}}:sqs:{{region}}:{ACCOUNT}:{queue.rsplit('/', 1)[-1]}"
    assert stmts[(queue_arn,)] == ["sqs:SendMessage"]
    assert stmts[("arn:{partition}:events:{region}:{account}:event-bus/default",)] == ["events:PutEvents"]
    assert stmts[("*",)] == ["sqs:GetQueueAttributes"]  # aws-sdk: resource not told by the request
    policies = test_iam.read_policies(aws_calls)
    assert test_iam.check_calls(calls, policies, REGION, ACCOUNT) == []
    granted = {a for pol in policies.values() for st in pol["Statement"] if st["Sid"].startswith("Integration")
               for a in st["Action"]}
    assert granted == {"dynamodb:GetItem", "dynamodb:PutItem", "sns:Publish", "sqs:SendMessage",
                       "events:PutEvents", "sqs:GetQueueAttributes"}
    unused = set(test_iam.never_called(calls, policies)) & granted
    assert not unused, f"integration actions granted but never called: {unused}"


@pytest.mark.parametrize("drop", ["sns:Publish", "dynamodb:GetItem"])
def test_a_missing_integration_action_fails_the_run_and_the_check(moto_env, tmp_path, aws_calls, drop):
    """The fault: one integration action left out of the role. SNS: moto refuses the
    call (AccessDenied, uncaught: the execution fails). DynamoDB: moto authorizes DynamoDB
    against `*` (the app's own table grants GetItem), so the run passes moto and the policy
    check is what fails."""
    item, dep, (table, topic, queue) = run(tmp_path, moto_env, drop)
    calls = test_iam.read_calls(aws_calls)
    problems = test_iam.check_calls(calls, test_iam.read_policies(aws_calls), REGION, ACCOUNT)
    assert any(f"needs {drop}" in p for p in problems), problems
    if drop != "dynamodb:GetItem":
        assert item["status"] == "FAILED", item
        assert test_iam.denied(calls)
    # the autouse check would fail this test: it did its job here
    for f in aws_calls.glob("calls-*.jsonl"):
        f.unlink()


def _statements(tmp_path, states: dict, start: str, handlers: dict | None = None, ql: str | None = None):
    m = {"StartAt": start, "States": states}
    if ql:
        m["QueryLanguage"] = ql
    root = make_sfn_app(tmp_path / "app", m, handlers or {"Echo": ECHO}, "integ-st")
    dep = deployment(load_app(root), "aws")
    return {f.unum_name: {tuple(s["resources"]): s["actions"] for s in f.role.integrations}
            for f in dep.functions}


def test_static_resources_are_named_and_dynamic_ones_are_star(tmp_path):
    """Static TableName, TopicArn, QueueUrl, EventBusName (absent: `default`) and
    StateMachineArn give their ARNs; a `.$` field, a PhoneNumber and the generic aws-sdk
    integration give `*`; a Task inside an inline Map branch counts for the function that
    walks the Map."""
    t = "arn:{partition}:dynamodb:{region}:{account}:table/"
    states = {
        "Get": {"Type": "Task", "Resource": DDB + "getItem", "Next": "GetDyn",
                "Parameters": {"TableName": "t1", "Key": {"pk": {"S": "a"}}}},
        "GetDyn": {"Type": "Task", "Resource": DDB + "deleteItem", "Next": "Sms",
                   "Parameters": {"TableName.$": "$.table", "Key": {"pk": {"S": "a"}}}},
        "Sms": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish", "Next": "Bus",
                "Parameters": {"PhoneNumber": "+15555550100", "Message": "x"}},
        "Bus": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents", "Next": "Sdk",
                "Parameters": {"Entries": [{"Source": "s", "DetailType": "d", "Detail": {}},
                                           {"Source": "s", "DetailType": "d", "Detail": {},
                                            "EventBusName": "arn:aws:events:eu-west-1:111122223333:event-bus/b"}]}},
        "Sdk": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:s3:getObject", "Next": "Each",
                "Parameters": {"Bucket": "b", "Key": "k"}},
        "Each": {"Type": "Map", "ItemsPath": "$.items", "Next": "Echo", "ItemProcessor": {
            "StartAt": "Send", "States": {"Send": {
                "Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage", "End": True,
                "Parameters": {"QueueUrl": "https://sqs.eu-west-1.amazonaws.com/111122223333/q.fifo",
                               "MessageBody.$": "$"}}}}},
        "Echo": {"Type": "Task", "Resource": "Echo", "Next": "Child"},
        "Child": {"Type": "Task", "Resource": "arn:aws:states:::states:startExecution", "End": True,
                  "Parameters": {"StateMachineArn.$": "$.machine"}},
    }
    by_fn = _statements(tmp_path, states, "Get")
    start = next(v for k, v in by_fn.items() if k != "Echo")
    assert start == {
        (t + "t1",): ["dynamodb:GetItem"], ("*",): ["dynamodb:DeleteItem", "s3:GetObject", "sns:Publish"],
        ("arn:aws:events:eu-west-1:111122223333:event-bus/b",
         "arn:{partition}:events:{region}:{account}:event-bus/default"): ["events:PutEvents"],
        ("arn:{partition}:sqs:eu-west-1:111122223333:q.fifo",): ["sqs:SendMessage"]}
    assert by_fn["Echo"] == {("*",): ["states:DescribeExecution", "states:StartExecution"]}


def test_jsonata_arguments_and_a_callback_task_in_its_own_function(tmp_path):
    """JSONata: a literal TableName is static, a `{% %}` one is `*`. A `.waitForTaskToken`
    Task is hosted by a function of its own, whose role gets its statement (and the
    function before it does not)."""
    states = {
        "Put": {"Type": "Task", "Resource": DDB + "putItem", "Next": "PutDyn",
                "Arguments": {"TableName": "t1", "Item": {"pk": {"S": "a"}}}},
        "PutDyn": {"Type": "Task", "Resource": DDB + "putItem", "Next": "Ask",
                   "Arguments": {"TableName": "{% $states.input.t %}", "Item": {"pk": {"S": "a"}}}},
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::sqs:sendMessage.waitForTaskToken", "End": True,
                "Arguments": {"QueueUrl": "https://sqs.us-east-1.amazonaws.com/123456789012/ask",
                              "MessageBody": "{% $states.context.Task.Token %}"}}}
    by_fn = _statements(tmp_path, states, "Put", ql="JSONata")
    assert by_fn["Ask"] == {("arn:{partition}:sqs:us-east-1:123456789012:ask",): ["sqs:SendMessage"]}
    rest = [v for k, v in by_fn.items() if k != "Ask" and v]
    assert rest == [{("arn:{partition}:dynamodb:{region}:{account}:table/t1",): ["dynamodb:PutItem"],
                     ("*",): ["dynamodb:PutItem"]}]


def test_no_integration_no_statement(tmp_path):
    """A machine of Lambda Tasks only: no function gets an integration statement, so the
    role is exactly the runtime's table (nothing else rendered)."""
    by_fn = _statements(tmp_path, {"Echo": {"Type": "Task", "Resource": "Echo", "End": True}}, "Echo")
    assert by_fn == {"Echo": {}}
    assert integration_statements(None) == [] and integration_statements({"Kind": "asl"}) == []


def test_checker_catches_an_integration_call_outside_the_role():
    """The call check on injected faults: a publish to a topic the role does not name, a
    send to another queue, a StartExecution of another machine are each reported."""
    fn, key = "app-F", "K1"
    topic = f"arn:aws:sns:{REGION}:{ACCOUNT}:t"
    policy = {"Statement": [
        {"Sid": "Integration0", "Effect": "Allow", "Action": ["sns:Publish"], "Resource": [topic]},
        {"Sid": "Integration1", "Effect": "Allow", "Action": ["sqs:SendMessage"],
         "Resource": [f"arn:aws:sqs:{REGION}:{ACCOUNT}:q"]},
        {"Sid": "Integration2", "Effect": "Allow", "Action": ["states:StartExecution"],
         "Resource": [f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:m"]}]}
    policies = {f"{fn}/{key}": policy}
    ok = [{"function": fn, "key": key, "op": "sns:Publish", "params": {"topic": topic}},
          {"function": fn, "key": key, "op": "sqs:SendMessage",
           "params": {"queue": f"http://127.0.0.1:5000/{ACCOUNT}/q"}},
          {"function": fn, "key": key, "op": "states:StartExecution",
           "params": {"machine": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:m"}}]
    assert test_iam.check_calls(ok, policies, REGION, ACCOUNT) == []
    bad = [{"function": fn, "key": key, "op": "sns:Publish", "params": {"topic": topic + "2"}},
           {"function": fn, "key": key, "op": "sqs:SendMessage",
            "params": {"queue": f"http://127.0.0.1:5000/{ACCOUNT}/other"}},
           {"function": fn, "key": key, "op": "states:StartExecution",
            "params": {"machine": f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:n"}}]
    problems = test_iam.check_calls(bad, policies, REGION, ACCOUNT)
    assert len(problems) == 3, problems


def test_dynamic_event_bus_is_every_bus(tmp_path):
    """EventBridge Entries given by a path: every event bus, as Step Functions writes it."""
    states = {"Bus": {"Type": "Task", "Resource": "arn:aws:states:::events:putEvents", "End": True,
                      "Parameters": {"Entries.$": "$.entries"}}}
    by_fn = _statements(tmp_path, states, "Bus")
    assert list(by_fn.values()) == [{("arn:{partition}:events:*:*:event-bus/*",): ["events:PutEvents"]}]


# ---------------------------------------------------------------------------- Lambda outside the app
EXTERNAL = """
def handler(event, context):
    if event.get("boom"):
        raise ValueError("refused by billing")
    return {"billed": event["id"], "by": context.function_name}
"""


def external_machine() -> dict:
    invoke = "arn:aws:states:::lambda:invoke"
    return {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "Echo", "Next": "Bill"},
        "Bill": {"Type": "Task", "Resource": invoke, "Next": "Missing", "ResultPath": "$.bill",
                 "Parameters": {"FunctionName": "billing-ext", "Payload": {"id.$": "$.id"}}},
        "Missing": {"Type": "Task", "Resource": invoke, "Next": "Boom", "ResultPath": None,
                    "Parameters": {"FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:nosuch-fn"},
                    "Catch": [{"ErrorEquals": ["Lambda.ResourceNotFoundException"], "ResultPath": "$.missing",
                               "Next": "Boom"}]},
        "Boom": {"Type": "Task", "Resource": invoke, "End": True, "ResultPath": None,
                 "Parameters": {"FunctionName": "billing-ext:$LATEST", "Payload": {"boom": True}},
                 "Catch": [{"ErrorEquals": ["ValueError"], "ResultPath": "$.boom", "Next": "Done"}]},
        "Done": {"Type": "Succeed"}}}


def test_lambda_invoke_of_a_function_outside_the_app(moto_env, tmp_path, aws_calls):
    """lambda:invoke of `billing-ext`, not one of the app's functions: the compiled function
    that reaches the Task calls Lambda's Invoke (the emulator, as real Lambda on aws) and
    gets AWS's shape (Payload, StatusCode, ExecutedVersion); a missing function is
    `Lambda.ResourceNotFoundException` and a function error is its errorType, each caught by
    name; the role grants lambda:InvokeFunction on exactly those functions (qualified
    versions included), under the call check."""
    root = make_sfn_app(tmp_path / "app", external_machine(), {"Echo": ECHO}, "ext-app")
    dep = deployment(load_app(root), "aws")
    assert [f.unum_name for f in dep.functions] == ["Echo"]  # no function of the app for billing-ext
    fn = "arn:{partition}:lambda:{region}:{account}:function:"
    assert {tuple(s["resources"]): s["actions"] for s in dep.function("Echo").role.integrations} == {
        (fn + "billing-ext", fn + "billing-ext:*"): ["lambda:InvokeFunction"],
        ("arn:aws:lambda:us-east-1:123456789012:function:nosuch-fn",
         "arn:aws:lambda:us-east-1:123456789012:function:nosuch-fn:*"): ["lambda:InvokeFunction"]}
    store = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(store, bucket)
    specs = local_specs(dep, store, bucket, tmp_path / "bundles")
    # the function outside the app: its own bundle (the runtime copy the worker insists on, and ext.py)
    import shutil
    from dataclasses import replace
    echo = specs[dep.function("Echo").name]
    ext_dir = tmp_path / "billing-ext"
    shutil.copytree(echo.bundle_dir, ext_dir)
    (ext_dir / "ext.py").write_text(EXTERNAL)
    specs["billing-ext"] = replace(echo, bundle_dir=ext_dir, handler="ext.handler", env={}, on_failure=None)
    sid = str(uuid.uuid4())
    with LocalLambda(specs, aws_env(moto_env), concurrency=2) as emu:
        boto3.client("lambda", endpoint_url=emu.url).invoke(
            FunctionName=dep.entry, InvocationType="Event",
            Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": {"id": "o-7"}}}))
        item = wait_result(DynamoDBDatastore(store), sid, 60, emu)
        emu.wait_idle(60)
        stats = dict(emu.stats)
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    bill = out["bill"]
    assert bill["Payload"] == {"billed": "o-7", "by": "billing-ext"}
    assert bill["StatusCode"] == 200 and bill["ExecutedVersion"] == "$LATEST"
    assert set(bill) >= {"SdkHttpMetadata", "SdkResponseMetadata"}
    assert out["missing"]["Error"] == "Lambda.ResourceNotFoundException"
    assert out["boom"] == {"Error": "ValueError", "Cause": "refused by billing"}
    assert stats.get("invoke:billing-ext") == 2, stats  # Bill and Boom, each once
    calls = test_iam.read_calls(aws_calls)
    invokes = sorted(c["params"]["function"] for c in calls if c["op"] == "lambda:Invoke" and (
        "billing" in c["params"]["function"] or "nosuch" in c["params"]["function"]))
    assert invokes == ["arn:aws:lambda:us-east-1:123456789012:function:nosuch-fn", "billing-ext",
                       "billing-ext:$LATEST"]
    assert test_iam.check_calls(calls, test_iam.read_policies(aws_calls), REGION, ACCOUNT) == []


def test_gcp_refuses_a_lambda_outside_the_app_naming_the_state(tmp_path):
    """On gcp a lambda:invoke of a function outside the app is one line naming the state."""
    from unumctl.deploy.appgraph import build
    from unumctl.manifest import AppError
    app = load_app(make_sfn_app(tmp_path / "a", external_machine(), {"Echo": ECHO}, "ext-gcp"))
    with pytest.raises(AppError) as e:
        build(app, "gcp", project="p")
    msg = str(e.value)
    assert "state 'Bill': lambda:invoke of a function outside the app" in msg and "\n" not in msg, msg


def test_the_key_pair_of_the_credentials_variable_signs_the_calls(moto_env, monkeypatch):
    """UNUM_AWS_CREDENTIALS (the secret environment variable of clouds.gcp.aws_credentials_secret)
    holds the key pair the integration calls sign with, over boto3's own chain: with the
    ambient keys made invalid, a call succeeds with a valid pair in it and is refused by
    moto's IAM enforcement with an invalid one; a value that is not the JSON object is one
    line naming the variable, without echoing it."""
    from runtime.asl.errors import AslError
    from runtime.asl.integrations import sdk
    good = {"aws_access_key_id": aws_env(moto_env)["AWS_ACCESS_KEY_ID"],
            "aws_secret_access_key": aws_env(moto_env)["AWS_SECRET_ACCESS_KEY"], "region": REGION}
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAINVALIDAMBIENT00")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "invalid")
    monkeypatch.setattr(sdk, "_CLIENTS", {})
    monkeypatch.setenv(sdk.ENV_AWS_CREDENTIALS, json.dumps(good))
    topic = sdk.invoke_api("sns", "create_topic", {"Name": f"t-{uuid.uuid4().hex[:8]}"}, "SNS")["TopicArn"]
    assert topic.startswith("arn:aws:sns:")
    monkeypatch.setenv(sdk.ENV_AWS_CREDENTIALS, json.dumps({**good, "aws_access_key_id": "AKIAUNKNOWNKEY000000"}))
    with pytest.raises(AslError) as e:
        sdk.invoke_api("sns", "publish", {"TopicArn": topic, "Message": "x"}, "SNS")
    assert e.value.error.startswith("SNS.")
    monkeypatch.setenv(sdk.ENV_AWS_CREDENTIALS, "AKIA-not-json")
    with pytest.raises(AslError) as e:
        sdk.client("sns")
    assert e.value.error == "States.Runtime" and sdk.ENV_AWS_CREDENTIALS in e.value.cause
    assert "AKIA-not-json" not in e.value.cause and "\n" not in e.value.cause


@pytest.mark.parametrize("url, arn", [
    ("https://sqs.eu-west-1.amazonaws.com/111122223333/q", "arn:{partition}:sqs:eu-west-1:111122223333:q"),
    ("https://eu-west-1.queue.amazonaws.com/111122223333/q.fifo", "arn:{partition}:sqs:eu-west-1:111122223333:q.fifo"),
    ("http://127.0.0.1:4566/000000000000/q", "arn:{partition}:sqs:{region}:000000000000:q"),
    ("https://sqs.eu-west-1.amazonaws.com/q", None), ("not a url", None)])
def test_queue_arn_of_a_queue_url(url, arn):
    from runtime.asl.integrations.sqs import queue_arn
    assert queue_arn(url) == arn


@pytest.mark.parametrize("ref, arn", [
    ("fn", "arn:{partition}:lambda:{region}:{account}:function:fn"),
    ("fn:prod", "arn:{partition}:lambda:{region}:{account}:function:fn:prod"),
    ("111122223333:function:fn", "arn:{partition}:lambda:{region}:111122223333:function:fn"),
    ("arn:aws:lambda:eu-west-1:111122223333:function:fn:3", "arn:aws:lambda:eu-west-1:111122223333:function:fn:3"),
    ("fn:a:b", None)])
def test_function_arn_of_a_function_name(ref, arn):
    from runtime.asl.integrations.lambda_ import function_arn
    assert function_arn(ref) == arn


def job_machine(job: str) -> dict:
    """Echo, then an Athena query and a Glue job run, each with `.sync`."""
    return {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Echo", "Next": "Query"},
        "Query": {"Type": "Task", "Resource": "arn:aws:states:::athena:startQueryExecution.sync",
                  "Parameters": {"QueryString": "SELECT 1", "ResultConfiguration": {"OutputLocation": "s3://r/q"}},
                  "ResultSelector": {"state.$": "$.QueryExecution.Status.State"}, "ResultPath": "$.query",
                  "Next": "Etl"},
        "Etl": {"Type": "Task", "Resource": "arn:aws:states:::glue:startJobRun.sync",
                "Parameters": {"JobName": job}, "ResultSelector": {"state.$": "$.JobRunState"},
                "ResultPath": "$.etl", "End": True}}}


def run_jobs(tmp_path, moto_url: str, drop: str | None = None):
    """Deploy and run job_machine once (`drop`: an IAM action taken out of the role):
    (result item, deployment)."""
    suffix = uuid.uuid4().hex[:8]
    job = f"etl-{suffix}"
    boto3.client("glue").create_job(Name=job, Role=f"arn:aws:iam::{ACCOUNT}:role/glue",
                                    Command={"Name": "glueetl", "ScriptLocation": "s3://b/s.py"})
    root = make_sfn_app(tmp_path / "app", job_machine(job), {"Echo": ECHO}, f"jobs-{suffix}")
    dep = deployment(load_app(root), "aws")
    for f in dep.functions:
        for st in f.role.integrations:
            st["actions"] = [a for a in st["actions"] if a != drop]
    store = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(store, bucket)
    specs = local_specs(dep, store, bucket, tmp_path / "bundles")
    sid = str(uuid.uuid4())
    with LocalLambda(specs, aws_env(moto_url), concurrency=2) as emu:
        boto3.client("lambda", endpoint_url=emu.url).invoke(
            FunctionName=dep.entry, InvocationType="Event",
            Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": {"id": "o-3"}}}))
        item = wait_result(DynamoDBDatastore(store), sid, 60, emu)
        emu.wait_idle(60)
    return item, dep


def test_run_a_job_tasks_under_iam_enforcement(moto_env, tmp_path, aws_calls):
    """Athena and Glue `.sync` Tasks in the function after Echo: the start and describe
    calls are granted (on `*`) and made, nothing is denied, nothing granted goes unused."""
    item, dep = run_jobs(tmp_path, moto_env)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["query"] == {"state": "SUCCEEDED"} and item["v"]["etl"] == {"state": "SUCCEEDED"}
    echo = dep.function("Echo")
    assert {tuple(s["resources"]): s["actions"] for s in echo.role.integrations} == {
        ("*",): ["athena:GetQueryExecution", "athena:StartQueryExecution", "glue:GetJobRun", "glue:StartJobRun"]}
    calls = test_iam.read_calls(aws_calls)
    assert not test_iam.denied(calls), test_iam.denied(calls)[:5]
    assert {c["op"] for c in calls} >= {"athena:StartQueryExecution", "athena:GetQueryExecution",
                                        "glue:StartJobRun", "glue:GetJobRun"}
    policies = test_iam.read_policies(aws_calls)
    assert test_iam.check_calls(calls, policies, REGION, ACCOUNT) == []


def test_a_missing_describe_action_fails_the_job_task(moto_env, tmp_path, aws_calls):
    """The fault: glue:GetJobRun left out of the role. The job starts, the first poll is
    refused, and the run fails; the call check names the missing grant."""
    item, _ = run_jobs(tmp_path, moto_env, drop="glue:GetJobRun")
    calls = test_iam.read_calls(aws_calls)
    problems = test_iam.check_calls(calls, test_iam.read_policies(aws_calls), REGION, ACCOUNT)
    assert any("needs glue:GetJobRun" in p for p in problems), problems
    assert item["status"] == "FAILED", item
    for f in aws_calls.glob("calls-*.jsonl"):  # the autouse check would fail this test: it did its job
        f.unlink()
