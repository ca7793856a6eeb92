"""The Step Functions API a client uses, on `unumctl serve` (docs/local-service.md):
UpdateStateMachine, ValidateStateMachineDefinition, DescribeStateMachineForExecution,
tags, map runs, names as AWS allows them, one startDate per execution, machines without
Lambda Tasks. The real Service and SfnApi behind the real werkzeug server
(unumctl/serve/server.py make_api_server) on 127.0.0.1, in this process, driven with
boto3's `stepfunctions` client (no subprocess: each test stays a few seconds)."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from unumctl_testing.apps import make_sfn_app, sfn_task
from unumctl.serve.server import make_api_server
from unumctl.serve.service import Service
from unumctl.serve.sfn_api import SfnApi

boto3 = pytest.importorskip("boto3", reason="boto3 (the aws extra) drives the API")
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

ECHO = ("import time\n\n\ndef handler(event, context):\n"
        "    time.sleep(event.get('sleep', 0) if isinstance(event, dict) else 0)\n    return event\n")
LAMBDA = "arn:aws:lambda:us-east-1:000000000000:function:"
PREFIX = "arn:aws:states:us-east-1:000000000000"
ROLE = "arn:aws:iam::000000000000:role/test"


def machine_arn(name: str) -> str:
    return f"{PREFIX}:stateMachine:{name}"


def exec_arn(machine: str, name: str) -> str:
    return f"{PREFIX}:execution:{machine}:{name}"


def revision_flow(tag: str) -> dict:
    """Echo (sleeps `sleep` s), then a Pass that writes `tag` to $.rev: which definition ran."""
    return {"StartAt": "E", "States": {
        "E": {"Type": "Task", "Resource": LAMBDA + "Echo", "ResultPath": "$.echo", "Next": "P"},
        "P": {"Type": "Pass", "Result": tag, "ResultPath": "$.rev", "End": True}}}


PASS_FLOW = {"StartAt": "Hello", "States": {
    "Hello": {"Type": "Pass", "Parameters": {"greeting.$": "States.Format('hi {}', $.who)"}, "Next": "Done"},
    "Done": {"Type": "Succeed"}}}


@contextmanager
def served(apps: list[Path], state: Path) -> Iterator[tuple[Service, object]]:
    """A Service hosting `apps` with its state in `state`, served on a free port; yields
    (service, boto3 client)."""
    tmp = tempfile.mkdtemp(prefix="usa-", dir="/tmp")  # short AF_UNIX socket paths for the workers
    old = tempfile.tempdir
    tempfile.tempdir = tmp
    svc = Service(apps, state)
    try:
        svc.start()
        server = make_api_server(SfnApi(svc), 0)
        t = threading.Thread(target=server.serve_forever, daemon=True)
        t.start()
        try:
            yield svc, boto3.client("stepfunctions", endpoint_url=f"http://127.0.0.1:{server.port}",
                                    region_name="us-east-1", aws_access_key_id="fake",
                                    aws_secret_access_key="fake",
                                    config=Config(inject_host_prefix=False, retries={"max_attempts": 1},
                                                  read_timeout=60, parameter_validation=False))
        finally:
            server.shutdown()
            t.join(5)
    finally:
        svc.close()
        tempfile.tempdir = old
        shutil.rmtree(tmp, ignore_errors=True)


NOTIFY = ("def handler(event, context):\n    with open(event['path'], 'w') as f:\n"
          "        f.write(event['token'])\n    return {'requested': True}\n")


@pytest.fixture
def fns(tmp_path):
    return make_sfn_app(tmp_path / "fns", {"StartAt": "Echo", "States": {"Echo": sfn_task("Echo")}},
                        {"Echo": ECHO, "Notify": NOTIFY}, name="fns")


def code(exc: pytest.ExceptionInfo) -> str:
    return exc.value.response["Error"]["Code"]


def wait_status(sfn, arn: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return d
        assert time.monotonic() < deadline, d
        time.sleep(0.05)


def test_update_state_machine_new_executions_use_the_new_definition_running_ones_finish_on_theirs(fns, tmp_path):
    state = tmp_path / "state"
    a, b = revision_flow("A"), revision_flow("B")
    arn = machine_arn("upd_flow")  # '_' is allowed (AWS's name rule)
    with served([fns], state) as (svc, sfn):
        created = sfn.create_state_machine(name="upd_flow", definition=json.dumps(a), roleArn=ROLE)
        first = sfn.describe_state_machine(stateMachineArn=arn)
        r1 = first["revisionId"]
        assert r1
        running = sfn.start_execution(stateMachineArn=arn, name="old", input=json.dumps({"sleep": 1.5}))
        to_stop = sfn.start_execution(stateMachineArn=arn, name="old-stopped", input=json.dumps({"sleep": 3}))
        up = sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(b))
        # an execution of the earlier revision is still the machine's: StopExecution reaches it
        sfn.stop_execution(executionArn=to_stop["executionArn"], error="Test.Stop")
        assert sfn.describe_execution(executionArn=to_stop["executionArn"])["status"] == "ABORTED"
        assert up["revisionId"] != r1 and up["updateDate"] >= created["creationDate"]
        d = sfn.describe_state_machine(stateMachineArn=arn)
        assert json.loads(d["definition"]) == b and d["revisionId"] == up["revisionId"]
        assert d["creationDate"] == created["creationDate"]
        assert sfn.describe_execution(executionArn=running["executionArn"])["status"] == "RUNNING"
        new = sfn.start_execution(stateMachineArn=arn, name="new", input=json.dumps({"sleep": 0}))
        assert json.loads(wait_status(sfn, new["executionArn"])["output"])["rev"] == "B"
        assert json.loads(wait_status(sfn, running["executionArn"])["output"])["rev"] == "A"

        old_m = sfn.describe_state_machine_for_execution(executionArn=running["executionArn"])
        assert (json.loads(old_m["definition"]), old_m["revisionId"], old_m["updateDate"], old_m["name"],
                old_m["stateMachineArn"], old_m["roleArn"]) == (a, r1, created["creationDate"], "upd_flow", arn, ROLE)
        new_m = sfn.describe_state_machine_for_execution(executionArn=new["executionArn"])
        assert (json.loads(new_m["definition"]), new_m["revisionId"], new_m["updateDate"]) == \
            (b, up["revisionId"], up["updateDate"])
        listed = sfn.list_executions(stateMachineArn=arn)["executions"]
        assert sorted(e["name"] for e in listed) == ["new", "old", "old-stopped"]
        # an execution name stays the machine's across revisions; history of the old revision
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=arn, name="old", input=json.dumps({"sleep": 1.5}))
        assert code(exc) == "ExecutionAlreadyExists"
        assert sfn.get_execution_history(executionArn=running["executionArn"])["events"][-1]["type"] == \
            "ExecutionSucceeded"

        # the same definition again: no new revision; a role alone: a new one
        same = sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(b))
        assert same["revisionId"] == up["revisionId"]
        role2 = sfn.update_state_machine(stateMachineArn=arn, roleArn=ROLE + "2")
        assert role2["revisionId"] != up["revisionId"]
        assert sfn.describe_state_machine(stateMachineArn=arn)["roleArn"] == ROLE + "2"

        for kwargs, err in (({}, "MissingRequiredParameter"),
                            ({"definition": json.dumps({"StartAt": "X", "States": {}})}, "InvalidDefinition")):
            with pytest.raises(ClientError) as exc:
                sfn.update_state_machine(stateMachineArn=arn, **kwargs)
            assert code(exc) == err, kwargs
        assert sfn.describe_state_machine(stateMachineArn=arn)["revisionId"] == role2["revisionId"]
        with pytest.raises(ClientError) as exc:
            sfn.update_state_machine(stateMachineArn=machine_arn("fns"), definition=json.dumps(a))
        assert code(exc) == "ValidationException"
        with pytest.raises(ClientError) as exc:
            sfn.update_state_machine(stateMachineArn=machine_arn("nope"), definition=json.dumps(a))
        assert code(exc) == "StateMachineDoesNotExist"
        with pytest.raises(ClientError) as exc:
            sfn.describe_state_machine_for_execution(executionArn=exec_arn("upd_flow", "never"))
        assert code(exc) == "ExecutionDoesNotExist"

    # restarted: every revision is back, the current one serves new executions
    with served([fns], state) as (svc, sfn):
        assert sfn.describe_state_machine(stateMachineArn=arn)["revisionId"] == role2["revisionId"]
        assert sfn.describe_state_machine_for_execution(executionArn=running["executionArn"])["revisionId"] == r1
        assert sorted(e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]) == \
            ["new", "old", "old-stopped"]
        s = sfn.start_sync_execution(stateMachineArn=arn, name="after", input="{}")
        assert json.loads(s["output"])["rev"] == "B"
        sfn.delete_state_machine(stateMachineArn=arn)
    assert not (state / "machines").exists() or not any((state / "machines").iterdir())


def test_validate_state_machine_definition_reports_the_compilers_verdict(fns, tmp_path):
    with served([fns], tmp_path / "state") as (svc, sfn):
        ok = sfn.validate_state_machine_definition(definition=json.dumps(revision_flow("A")))
        assert (ok["result"], ok["diagnostics"]) == ("OK", [])
        bad_rule = {"StartAt": "Check.it", "States": {"Check.it": {"Type": "Choice", "Choices": [
            {"Variable": "$.a", "Nope": 1, "Next": "Check.it"}]}}}
        r = sfn.validate_state_machine_definition(definition=json.dumps(bad_rule))
        assert r["result"] == "FAIL" and r["truncated"] is False
        [d] = r["diagnostics"]
        assert (d["severity"], d["code"], d["location"]) == ("ERROR", "SCHEMA_VALIDATION_FAILED",
                                                              "/States/Check.it/Choices/0/Nope"), d
        assert "not a field of a Choice rule" in d["message"]
        unknown = {"StartAt": "T", "States": {"T": sfn_task("Nowhere")}}
        [d] = sfn.validate_state_machine_definition(definition=json.dumps(unknown))["diagnostics"]
        assert (d["code"], d["location"]) == ("INVALID_RESOURCE", "/States/T/Resource") and "Nowhere" in d["message"]
        [d] = sfn.validate_state_machine_definition(definition="{not json")["diagnostics"]
        assert d["code"] == "INVALID_JSON_DESCRIPTION"
        # what it accepts, CreateStateMachine accepts; what it refuses, CreateStateMachine refuses
        sfn.create_state_machine(name="valid", definition=json.dumps(revision_flow("A")), roleArn=ROLE)
        with pytest.raises(ClientError) as exc:
            sfn.create_state_machine(name="invalid", definition=json.dumps(unknown), roleArn=ROLE)
        assert code(exc) == "InvalidDefinition"


def test_tags(fns, tmp_path):
    state = tmp_path / "state"
    arn = machine_arn("tagged")
    with served([fns], state) as (svc, sfn):  # (the client does not check lengths: the service does)
        sfn.create_state_machine(name="tagged", definition=json.dumps(PASS_FLOW), roleArn=ROLE,
                                 tags=[{"key": "team", "value": "data"}])
        assert sfn.list_tags_for_resource(resourceArn=arn)["tags"] == [{"key": "team", "value": "data"}]
        sfn.tag_resource(resourceArn=arn, tags=[{"key": "team", "value": "ml"}, {"key": "env", "value": ""}])
        assert {t["key"]: t["value"] for t in sfn.list_tags_for_resource(resourceArn=arn)["tags"]} == \
            {"team": "ml", "env": ""}
        sfn.untag_resource(resourceArn=arn, tagKeys=["env", "absent"])
        assert sfn.list_tags_for_resource(resourceArn=arn)["tags"] == [{"key": "team", "value": "ml"}]
        sfn.tag_resource(resourceArn=machine_arn("fns"), tags=[{"key": "app", "value": "cli"}])

        with pytest.raises(ClientError) as exc:
            sfn.tag_resource(resourceArn=arn, tags=[{"key": f"k{i}", "value": "v"} for i in range(50)])
        assert code(exc) == "TooManyTags" and exc.value.response["resourceName"] == arn
        assert len(sfn.list_tags_for_resource(resourceArn=arn)["tags"]) == 1  # nothing half-applied
        for bad in ({"key": "", "value": "v"}, {"key": "a" * 129, "value": "v"}, {"key": "x", "value": "v" * 257},
                    {"key": "semi;colon", "value": "v"}):
            with pytest.raises(ClientError) as exc:
                sfn.tag_resource(resourceArn=arn, tags=[bad])
            assert code(exc) == "ValidationException", bad
        with pytest.raises(ClientError) as exc:
            sfn.list_tags_for_resource(resourceArn=machine_arn("nope"))
        assert code(exc) == "ResourceNotFound"
        with pytest.raises(ClientError) as exc:
            sfn.tag_resource(resourceArn="arn:nope", tags=[{"key": "a", "value": "b"}])
        assert code(exc) == "InvalidArn"
    with served([fns], state) as (svc, sfn):  # kept across restarts
        assert sfn.list_tags_for_resource(resourceArn=arn)["tags"] == [{"key": "team", "value": "ml"}]
        assert sfn.list_tags_for_resource(resourceArn=machine_arn("fns"))["tags"] == [{"key": "app", "value": "cli"}]
        sfn.delete_state_machine(stateMachineArn=arn)  # its tags go with it
        assert json.loads((state / "tags.json").read_text()) == {"fns": {"app": "cli"}}
        with pytest.raises(ClientError) as exc:
            sfn.list_tags_for_resource(resourceArn=arn)
        assert code(exc) == "ResourceNotFound"
        sfn.create_state_machine(name="tagged", definition=json.dumps(PASS_FLOW), roleArn=ROLE)
        assert sfn.list_tags_for_resource(resourceArn=arn)["tags"] == []


def test_machine_names_as_aws_allows_them(tmp_path):
    """CreateStateMachine `name` (API reference): 1-80 characters without white space,
    brackets, wildcards, `" # % \\ ^ | ~ ` $ & , ; : /` or control characters."""
    with served([], tmp_path / "state") as (svc, sfn):
        names = ["my_machine", "Foo", "foo", "été.v2", "x" * 80, ".."]
        for n in names:
            assert sfn.create_state_machine(name=n, definition=json.dumps(PASS_FLOW),
                                            roleArn=ROLE)["stateMachineArn"] == machine_arn(n)
        assert sorted(m["name"] for m in sfn.list_state_machines()["stateMachines"]) == sorted(names)
        for n in names:
            s = sfn.start_sync_execution(stateMachineArn=machine_arn(n), name="e_1", input='{"who": "me"}')
            assert (s["status"], json.loads(s["output"])) == ("SUCCEEDED", {"greeting": "hi me"}), n
        sfn.delete_state_machine(stateMachineArn=machine_arn("Foo"))  # "foo" is another machine
        assert sfn.describe_state_machine(stateMachineArn=machine_arn("foo"))["name"] == "foo"
        for bad in ("a b", "a/b", "a:b", "a*", "a[1]", "a#b", "x" * 81, "tab\there", "nul\x00"):
            with pytest.raises(ClientError) as exc:
                sfn.create_state_machine(name=bad, definition=json.dumps(PASS_FLOW), roleArn=ROLE)
            assert code(exc) == "InvalidName", bad
        assert sorted(d.name for d in (tmp_path / "state" / "machines").iterdir()) == sorted(
            m.app.name for m in svc.machines())  # directories are app names, never the raw name


def test_one_start_date_per_execution(fns, tmp_path):
    with served([fns], tmp_path / "state") as (svc, sfn):
        arn = machine_arn("fns")
        started = sfn.start_execution(stateMachineArn=arn, name="d1", input=json.dumps({"sleep": 0.2}))
        d = wait_status(sfn, started["executionArn"])
        [listed] = [e for e in sfn.list_executions(stateMachineArn=arn)["executions"] if e["name"] == "d1"]
        first = sfn.get_execution_history(executionArn=started["executionArn"])["events"][0]
        assert first["type"] == "ExecutionStarted"
        assert started["startDate"] == d["startDate"] == listed["startDate"] == first["timestamp"], \
            (started["startDate"], d["startDate"], listed["startDate"], first["timestamp"])


def test_a_machine_without_lambda_tasks_when_serve_hosts_no_app(tmp_path):
    with served([], tmp_path / "state") as (svc, sfn):
        sfn.create_state_machine(name="pass-only", definition=json.dumps(PASS_FLOW), roleArn=ROLE)
        s = sfn.start_sync_execution(stateMachineArn=machine_arn("pass-only"), input='{"who": "you"}')
        assert (s["status"], json.loads(s["output"])) == ("SUCCEEDED", {"greeting": "hi you"})
        with pytest.raises(ClientError) as exc:  # a Lambda Task still needs an APP that defines it
            sfn.create_state_machine(name="lambda-flow", roleArn=ROLE, definition=json.dumps(
                {"StartAt": "T", "States": {"T": sfn_task("Echo")}}))
        assert code(exc) == "InvalidDefinition" and "Echo" in exc.value.response["Error"]["Message"]
        assert not (tmp_path / "state" / "machines" / "lambda-flow").exists()


DMAP_FLOW = {"StartAt": "M", "States": {"M": {
    "Type": "Map", "ItemsPath": "$.items", "Label": "Scan", "ToleratedFailureCount": 1, "MaxConcurrency": 7,
    "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "Check", "States": {
        "Check": {"Type": "Choice", "Choices": [{"Variable": "$.bad", "BooleanEquals": True, "Next": "No"}],
                  "Default": "Yes"},
        "No": {"Type": "Fail", "Error": "Bad", "Cause": "bad item"},
        "Yes": {"Type": "Pass", "End": True}}},
    "End": True}}}


def test_map_runs_of_a_distributed_map(tmp_path):
    """ListMapRuns / DescribeMapRun read the Distributed Map's run from the execution's
    history: its ARN (machine/Label), dates and item counts (1 of 3 items failed,
    tolerated); GetExecutionHistory has MapRunStarted (with that ARN) and MapRunSucceeded; a
    machine without one has none; unknown ones are AWS's errors."""
    with served([], tmp_path / "state") as (svc, sfn):
        sfn.create_state_machine(name="dmap", definition=json.dumps(DMAP_FLOW), roleArn=ROLE)
        items = [{"bad": False}, {"bad": True}, {"bad": False}]
        s = sfn.start_sync_execution(stateMachineArn=machine_arn("dmap"), name="d1",
                                     input=json.dumps({"items": items}))
        assert s["status"] == "SUCCEEDED", s
        runs = sfn.list_map_runs(executionArn=s["executionArn"])["mapRuns"]
        assert len(runs) == 1 and runs[0]["executionArn"] == s["executionArn"]
        assert runs[0]["mapRunArn"].startswith(f"{PREFIX}:mapRun:dmap/Scan:")
        assert runs[0]["stateMachineArn"] == machine_arn("dmap")
        d = sfn.describe_map_run(mapRunArn=runs[0]["mapRunArn"])
        assert d["status"] == "SUCCEEDED" and d["executionArn"] == s["executionArn"]
        assert d["toleratedFailureCount"] == 1 and d["maxConcurrency"] == 7
        assert (d["itemCounts"]["total"], d["itemCounts"]["succeeded"], d["itemCounts"]["failed"]) == (3, 2, 1)
        assert d["startDate"] <= d["stopDate"]
        events = sfn.get_execution_history(executionArn=s["executionArn"])["events"]
        types = [e["type"] for e in events]
        started = [e for e in events if e["type"] == "MapRunStarted"]
        assert len(started) == 1 and started[0]["mapRunStartedEventDetails"]["mapRunArn"] == runs[0]["mapRunArn"]
        assert types.index("MapStateStarted") < types.index("MapRunStarted") < types.index("MapRunSucceeded") \
            < types.index("MapStateSucceeded"), types
        sfn.create_state_machine(name="pass-only", definition=json.dumps(PASS_FLOW), roleArn=ROLE)
        s = sfn.start_sync_execution(stateMachineArn=machine_arn("pass-only"), name="m1", input='{"who": "x"}')
        assert sfn.list_map_runs(executionArn=s["executionArn"])["mapRuns"] == []
        with pytest.raises(ClientError) as exc:
            sfn.list_map_runs(executionArn=exec_arn("pass-only", "never"))
        assert code(exc) == "ExecutionDoesNotExist"
        with pytest.raises(ClientError) as exc:
            sfn.describe_map_run(mapRunArn=f"{PREFIX}:mapRun:pass-only/m:1a2b")
        assert code(exc) == "ResourceNotFound"
        with pytest.raises(ClientError) as exc:
            sfn.describe_map_run(mapRunArn=f"{PREFIX}:execution:pass-only:m1")
        assert code(exc) == "InvalidArn"


def test_map_run_of_a_distributed_map_with_lambda_children(fns, tmp_path):
    """A Distributed Map whose children call a Lambda (a fan-out to compiled functions):
    the Map Run the fan-out announces (MapRunStarted) is the one its join ended."""
    flow = {"StartAt": "M", "States": {"M": {
        "Type": "Map", "ItemsPath": "$.items",
        "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "Echo",
                          "States": {"Echo": sfn_task("Echo")}}, "End": True}}}
    with served([fns], tmp_path / "state") as (svc, sfn):
        sfn.create_state_machine(name="dmapl", definition=json.dumps(flow), roleArn=ROLE)
        s = sfn.start_sync_execution(stateMachineArn=machine_arn("dmapl"), name="d2",
                                     input=json.dumps({"items": [{"k": 1}, {"k": 2}]}))
        assert (s["status"], json.loads(s["output"])) == ("SUCCEEDED", [{"k": 1}, {"k": 2}]), s
        runs = sfn.list_map_runs(executionArn=s["executionArn"])["mapRuns"]
        assert len(runs) == 1 and runs[0]["mapRunArn"].startswith(f"{PREFIX}:mapRun:dmapl/M:")
        d = sfn.describe_map_run(mapRunArn=runs[0]["mapRunArn"])
        assert (d["itemCounts"]["total"], d["itemCounts"]["succeeded"]) == (2, 2)
        events = sfn.get_execution_history(executionArn=s["executionArn"])["events"]
        started = [e["mapRunStartedEventDetails"]["mapRunArn"] for e in events if e["type"] == "MapRunStarted"]
        assert started == [runs[0]["mapRunArn"]]


def test_execution_names_as_aws_allows_them(fns, tmp_path):
    """StartExecution `name` (API reference): the machine name rule. A name that is not a
    session id runs as one derived from it (shapes.session_of) and is reported as given."""
    state = tmp_path / "state"
    arn = machine_arn("fns")
    names = ["order.1", "run@2024-01-01T00.00", "été", "..", "x" * 80, "plain_id-1"]
    with served([fns], state) as (svc, sfn):
        for n in names:
            r = sfn.start_execution(stateMachineArn=arn, name=n, input=json.dumps({"n": n}))
            assert r["executionArn"] == exec_arn("fns", n)
            again = sfn.start_execution(stateMachineArn=arn, name=n, input=json.dumps({"n": n}))
            assert again["startDate"] == r["startDate"]  # the same execution while it runs
        for n in names:
            d = wait_status(sfn, exec_arn("fns", n))
            assert (d["name"], d["status"], json.loads(d["output"])) == (n, "SUCCEEDED", {"n": n}), n
            events = sfn.get_execution_history(executionArn=exec_arn("fns", n))["events"]
            assert events[-1]["type"] == "ExecutionSucceeded"
        with pytest.raises(ClientError) as exc:  # an ended execution's name, as for any name
            sfn.start_execution(stateMachineArn=arn, name="order.1", input=json.dumps({"n": "order.1"}))
        assert code(exc) == "ExecutionAlreadyExists"
        assert sorted(e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]) == sorted(names)
        for bad in ("a b", "a:b", "a/b", "x" * 81, "a*"):
            with pytest.raises(ClientError) as exc:
                sfn.start_execution(stateMachineArn=arn, name=bad, input="{}")
            assert code(exc) == "InvalidName", bad
    with served([fns], state) as (svc, sfn):  # the names outlive the service
        assert sorted(e["name"] for e in sfn.list_executions(stateMachineArn=arn)["executions"]) == sorted(names)
        assert sfn.describe_execution(executionArn=exec_arn("fns", "order.1"))["name"] == "order.1"


def test_a_task_token_of_an_earlier_revision_completes_its_execution(fns, tmp_path):
    """SendTaskSuccess after UpdateStateMachine reaches the execution waiting on the
    revision it started on (the token names that revision's app)."""
    ask = {"StartAt": "Ask", "States": {"Ask": {
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": LAMBDA + "Notify", "Payload": {"token.$": "$$.Task.Token", "path.$": "$.path"}},
        "End": True}}}
    arn = machine_arn("ask")
    token_file = tmp_path / "token"
    with served([fns], tmp_path / "state") as (svc, sfn):
        sfn.create_state_machine(name="ask", definition=json.dumps(ask), roleArn=ROLE)
        run = sfn.start_execution(stateMachineArn=arn, name="waits", input=json.dumps({"path": str(token_file)}))
        deadline = time.monotonic() + 60
        while not (token_file.exists() and token_file.read_text()):
            assert time.monotonic() < deadline, "no task token"
            time.sleep(0.05)
        sfn.update_state_machine(stateMachineArn=arn, definition=json.dumps(PASS_FLOW))
        sfn.send_task_success(taskToken=token_file.read_text(), output=json.dumps({"paid": 1}))
        d = wait_status(sfn, run["executionArn"])
        assert (d["status"], json.loads(d["output"])) == ("SUCCEEDED", {"paid": 1})
