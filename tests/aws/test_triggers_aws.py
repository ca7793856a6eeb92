"""Triggers on the AWS target (docs/triggers.md "AWS"; unumctl/aws/sources.py,
runtime/aws/sources.py).

- the model and rendering: a trigger function per trigger whose role is the runtime table's
  `sources` rows (a queue trigger's SQS actions on its queue only), every kind's source in
  triggers.tf, a workflow function's role unchanged;
- fmt + validate of the rendered root with the real provider, and apply on moto: the
  function URL's auth, the Scheduler input with `<aws.scheduler.scheduled-time>`, the
  queue's redrive policy and event-source mapping with ReportBatchItemFailures, the bucket
  notification, the rule's pattern, each trigger role as the harness renders it;
- duplicate delivery under moto's IAM enforcement: the trigger functions (the BUILT entry
  archive, the emulated Lambda) get every event twice, some out of order, and start one
  session per event with the right input. moto delivers none of these sources to the
  emulated Lambda (it runs Lambda only in Docker), so the events are read from moto where
  it makes them and handed to the function as Lambda does: SQS messages received from the
  queue as the event-source mapping batches them; S3 notifications from the bucket's
  notification to an SQS queue (with the `sequencer` S3 sets and moto 5 leaves out);
  EventBridge events from the rule's SQS target; the
  Scheduler's rendered input with the context attribute filled in; the Function URL's
  payload format 2.0 request.
"""

from __future__ import annotations

import json
import os
import time
import uuid

import boto3
import pytest

from runtime.aws.datastore import DynamoDBDatastore
from runtime.aws.iam import SOURCE_QUEUE, SOURCES, role_permissions
from runtime.payload import RESULT_KEY
from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.aws.render import render_triggers
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl.terraform import TerraformRunner
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl_testing.aws.iam import policy_document
from unumctl_testing.triggers import TRIGGERS, echo_app

from .conftest import ACCOUNT, REGION, aws_env
from .test_terraform_aws import _statements, assert_least_privilege, tf_env  # noqa: F401


@pytest.fixture
def region(monkeypatch):
    monkeypatch.setenv("AWS_REGION", REGION)
    return REGION


def test_trigger_functions_and_their_roles(tmp_path, region):
    """One trigger function per trigger, on the entry's archive, invoking the entry only,
    with the `sources` rows of the runtime's table; the queue trigger alone may receive,
    and only from its own queue; the workflow function's role is the other callers'."""
    app = load_app(echo_app(tmp_path / "app"))
    dep = deployment(app, "aws")
    fns = {f.trigger: f for f in dep.trigger_functions}
    assert sorted(fns) == sorted(TRIGGERS)
    perms = role_permissions(SOURCES)
    queue_actions = perms.pop(SOURCE_QUEUE)
    for name, f in fns.items():
        assert f.name == f"trig-dev_trigger-{name}" and f.handler == "runtime.aws.sources.handler"
        assert f.archive is dep.entry_function.archive
        assert f.role.invoke == [dep.entry] and f.role.permissions == perms
        assert f.environment["UNUM_TRIGGER"] == name and f.environment["UNUM_ENTRY"] == "Echo"
        queue = [st for st in f.role.integrations if st["sid"] == SOURCE_QUEUE]
        assert bool(queue) == (name == "orders")
    assert fns["orders"].role.integrations[0]["actions"] == queue_actions
    assert fns["orders"].role.integrations[0]["resources"] == ["arn:{partition}:sqs:{region}:{account}:trig-dev-orders"]
    assert "SourceQueue" not in dep.entry_function.role.permissions
    assert "sqs:ReceiveMessage" not in str(dep.entry_function.role.permissions)


def test_each_kind_is_rendered(tmp_path, region):
    app = load_app(echo_app(tmp_path / "app"))
    text = render_triggers(deployment(app, "aws"))
    assert 'resource "aws_lambda_function_url" "web" {' in text
    web = text.split('resource "aws_lambda_function_url" "web" {')[1].split("}")[0]
    assert 'authorization_type = "AWS_IAM"' in web
    assert 'authorization_type = "NONE"' in text.split('resource "aws_lambda_function_url" "open" {')[1]
    assert text.count('principal              = "*"') == 1  # the public opt-in only
    assert "<aws.scheduler.scheduled-time>" in text and 'schedule_expression          = "cron(0 2 * * ? *)"' in text
    assert 'function_response_types = ["ReportBatchItemFailures"]' in text and "maxReceiveCount     = 3" in text
    assert 'events              = ["s3:ObjectCreated:*"]' in text and 'filter_prefix       = "in/"' in text
    assert 'event_pattern = "{\\"source\\":[\\"unum.test\\"]}"' in text
    assert render_triggers(deployment(load_app(echo_app(tmp_path / "none", only=())), "aws")) is None


@pytest.mark.aws_long  # fmt + validate + apply + destroy of every kind: 111 s on a quiet 2-core machine
def test_triggers_render_validate_apply_on_moto(tmp_path, tf_env, moto_without_iam, monkeypatch):  # noqa: F811
    """fmt + validate, then apply on moto and read every source back; each trigger role is
    the policy the emulated functions sign with; destroy."""
    for k, v in aws_env(moto_without_iam).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_LAMBDA", raising=False)
    name = f"t{uuid.uuid4().hex[:6]}"
    target = AwsTarget(load_app(echo_app(tmp_path / "app", name)))
    target.render()
    runner = TerraformRunner(target.workdir, {"TF_CLI_CONFIG_FILE": str(tf_env)})
    assert runner.fmt_check() == []
    out = target.apply(yes=True)["outputs"]
    dep = deployment(target.app, "aws")
    trig = out["triggers"]
    lam, sqs, s3, ev, sch, iam = (boto3.client(s) for s in ("lambda", "sqs", "s3", "events", "scheduler", "iam"))
    try:
        assert lam.get_function_url_config(FunctionName=trig["web"]["function"])["AuthType"] == "AWS_IAM"
        assert lam.get_function_url_config(FunctionName=trig["open"]["function"])["AuthType"] == "NONE"
        s = sch.get_schedule(Name=trig["nightly"]["schedule"])
        assert s["ScheduleExpression"] == "cron(0 2 * * ? *)"
        assert json.loads(s["Target"]["Input"]) == {"scheduled_time": "<aws.scheduler.scheduled-time>"}
        attrs = sqs.get_queue_attributes(QueueUrl=trig["orders"]["queue_url"], AttributeNames=["All"])["Attributes"]
        assert json.loads(attrs["RedrivePolicy"])["maxReceiveCount"] == 3
        assert int(attrs["VisibilityTimeout"]) == 6 * 60
        esm = [m for m in lam.list_event_source_mappings()["EventSourceMappings"]  # moto 5 filters by ARN only
               if m["FunctionArn"].endswith(":function:" + trig["orders"]["function"])]
        # (moto 5 keeps no FunctionResponseTypes: the rendered mapping's is checked offline above)
        assert [(m["EventSourceArn"].rsplit(":", 1)[1], m["BatchSize"]) for m in esm] == [(f"{name}-dev-orders", 10)]
        note = s3.get_bucket_notification_configuration(Bucket=trig["uploads"]["bucket"])
        conf = note["LambdaFunctionConfigurations"][0]
        assert conf["Events"] == ["s3:ObjectCreated:*"] and conf["LambdaFunctionArn"].endswith(trig["uploads"]["function"])
        rule = ev.describe_rule(Name=trig["audit"]["rule"])
        assert json.loads(rule["EventPattern"]) == {"source": ["unum.test"]}
        assert ev.list_targets_by_rule(Rule=trig["audit"]["rule"])["Targets"][0]["Arn"].endswith(trig["audit"]["function"])
        for f in dep.trigger_functions:
            doc = iam.get_role_policy(RoleName=f.role.name, PolicyName="unum")["PolicyDocument"]
            doc = json.loads(doc) if isinstance(doc, str) else doc
            rendered = policy_document(dep, f, out["table"], out["bucket"], REGION, ACCOUNT)
            assert _statements(doc) == _statements(rendered), f.name
            assert_least_privilege([st for st in doc["Statement"] if st.get("Sid") != SOURCE_QUEUE], dep.app,
                                   out["bucket"])
    finally:
        target.destroy(yes=True)


# ------------------------------------------------------------------ duplicate delivery
def _results(ds: DynamoDBDatastore, table: str) -> dict[str, dict]:
    """Session -> result item of every session in the table."""
    items, kw = [], {}
    ddb = boto3.client("dynamodb")
    while True:
        page = ddb.scan(TableName=table, **kw)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            break
        kw = {"ExclusiveStartKey": page["LastEvaluatedKey"]}
    keys = [DynamoDBDatastore.key_of(i) for i in items]
    sessions = {k[0] for k in keys if k is not None and k[1] == RESULT_KEY}
    return {s: ds.get(s, RESULT_KEY) for s in sessions}


def _settle(ds, table, n, emu, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        res = _results(ds, table)
        if len(res) >= n and all(r.get("status") for r in res.values()):
            emu.wait_idle(60)
            return _results(ds, table)
        time.sleep(0.5)
    return _results(ds, table)


def _receive_all(sqs, url, n, timeout=30):
    out, deadline = [], time.monotonic() + timeout
    while len(out) < n and time.monotonic() < deadline:
        got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1,
                                  AttributeNames=["All"], MessageAttributeNames=["All"]).get("Messages", [])
        out += got
    return out


def _sqs_record(m, queue_arn):
    """An SQS message as the event-source mapping hands it to Lambda (Lambda developer guide,
    "Using Lambda with Amazon SQS", example event)."""
    return {"messageId": m["MessageId"], "receiptHandle": m["ReceiptHandle"], "body": m["Body"],
            "attributes": m.get("Attributes", {}), "messageAttributes": m.get("MessageAttributes", {}),
            "md5OfBody": m["MD5OfBody"], "eventSource": "aws:sqs", "eventSourceARN": queue_arn,
            "awsRegion": REGION}


def _url_request(body, key):
    """A Function URL request, payload format 2.0 (Lambda developer guide, "Invoking Lambda
    function URLs", request payload)."""
    return {"version": "2.0", "routeKey": "$default", "rawPath": "/", "rawQueryString": "",
            "headers": {"content-type": "application/json", "idempotency-key": key},
            "requestContext": {"http": {"method": "POST", "path": "/"}, "requestId": uuid.uuid4().hex},
            "body": json.dumps(body), "isBase64Encoded": False}


def test_every_source_delivered_twice_starts_one_session_per_event(moto_env, tmp_path, monkeypatch):
    """Each source's events, each delivered twice and some out of order, to its trigger
    function under IAM enforcement: one session per event, its result the event's input."""
    monkeypatch.setenv("AWS_REGION", REGION)
    app = load_app(echo_app(tmp_path / "app", "dup", only=("web", "nightly", "orders", "uploads", "audit")))
    dep = deployment(app, "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    ds = DynamoDBDatastore(table)
    sqs, s3, ev = boto3.client("sqs"), boto3.client("s3"), boto3.client("events")
    tag = uuid.uuid4().hex[:6]
    queue = sqs.create_queue(QueueName=f"orders-{tag}")["QueueUrl"]
    queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    # S3 and EventBridge deliver to SQS queues on moto: their events are read from there
    notes = sqs.create_queue(QueueName=f"notes-{tag}")["QueueUrl"]
    notes_arn = sqs.get_queue_attributes(QueueUrl=notes, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    uploads = f"uploads-{tag}"
    s3.create_bucket(Bucket=uploads)
    s3.put_bucket_notification_configuration(Bucket=uploads, NotificationConfiguration={"QueueConfigurations": [
        {"QueueArn": notes_arn, "Events": ["s3:ObjectCreated:*"]}]})
    rule = f"audit-{tag}"
    ev.put_rule(Name=rule, EventPattern=json.dumps(TRIGGERS["audit"]["pattern"]))
    ev.put_targets(Rule=rule, Targets=[{"Id": "notes", "Arn": notes_arn}])

    expected: list = []  # the inputs of the sessions the events must start, one each
    with LocalLambda(local_specs(dep, table, bucket, tmp_path / "bundles"), aws_env(moto_env)) as emu:
        client = boto3.client("lambda", endpoint_url=emu.url)

        def call(trigger: str, event: dict) -> dict:
            r = client.invoke(FunctionName=f"dup-dev_trigger-{trigger}", Payload=json.dumps(event))
            assert "FunctionError" not in r, r["Payload"].read()
            return json.loads(r["Payload"].read())

        # http: an Idempotency-Key per request
        reqs = [_url_request({"n": i}, f"req-{i}") for i in range(4)]
        answers = [call("web", e) for e in reqs + reqs[::-1]]
        assert all(a["statusCode"] == 202 for a in answers)
        assert answers[0]["body"] == answers[-1]["body"]  # the re-sent request names the same session
        expected += [{"n": i} for i in range(4)]
        # schedule: the rendered input, with the scheduled time Scheduler fills in
        ticks = [{"scheduled_time": f"2026-12-0{d}T02:00:00Z"} for d in (1, 2, 3)]
        for e in ticks + [ticks[1], ticks[0], ticks[2]]:
            call("nightly", e)
        expected += [{"mode": "full"}] * 3
        # queue: real messages, batched twice (the second batch in another order, as a
        # redelivery after a visibility timeout would)
        for i in range(5):
            sqs.send_message(QueueUrl=queue, MessageBody=json.dumps({"order": i}))
        msgs = _receive_all(sqs, queue, 5)
        assert len(msgs) == 5
        records = [_sqs_record(m, queue_arn) for m in msgs]
        assert call("orders", {"Records": records[:3]}) == {"batchItemFailures": []}
        assert call("orders", {"Records": records[::-1]}) == {"batchItemFailures": []}
        expected += [{"order": i} for i in range(5)]
        # storage: moto's own S3 notifications, each record handed over twice
        for i in range(3):
            s3.put_object(Bucket=uploads, Key=f"in/{i}.json", Body=b"{}")
        ev.put_events(Entries=[{"Source": "unum.test", "DetailType": "t", "Detail": json.dumps({"k": i})}
                               for i in range(2)])
        notes_msgs = [json.loads(m["Body"]) for m in _receive_all(sqs, notes, 5)]
        s3_events = [b for b in notes_msgs if "Records" in b]
        eb_events = [b for b in notes_msgs if "detail-type" in b]
        assert len(s3_events) == 3 and len(eb_events) == 2, notes_msgs
        for i, e in enumerate(s3_events):  # moto 5 leaves out `sequencer`, which S3 sets on every
            for rec in e["Records"]:      # object-created record (S3 user guide, "Event message structure")
                rec["s3"]["object"].setdefault("sequencer", f"{i + 1:016X}")
        for e in s3_events + s3_events[::-1]:
            call("uploads", e)
        for e in eb_events + eb_events[::-1]:
            call("audit", e)
        res = _settle(ds, table, 4 + 3 + 5 + 3 + 2, emu)
    inputs = [r["v"]["input"] for r in res.values()]
    assert len(res) == 17 and all(r["status"] == "SUCCEEDED" for r in res.values()), res
    for want in expected:  # the queue, http and schedule inputs, each in its own session
        assert want in inputs
    uploads_in = [i for i in inputs if isinstance(i, dict) and i.get("key", "").startswith("in/")]
    assert sorted(i["key"] for i in uploads_in) == ["in/0.json", "in/1.json", "in/2.json"], inputs
    assert sum(1 for i in inputs if isinstance(i, dict) and "detail" in i) == 2, inputs
    assert os.environ["AWS_REGION"] == REGION
