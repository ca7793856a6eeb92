"""Where `local` and `serve` send the AWS calls of a Task, and what they sign them with
(docs/local.md "Where service integrations go"; issue 33 items 6-8): a Lambda Task of a
function outside the app goes to the embedded emulator, never to the public endpoint; a
client built for the emulator or a named endpoint signs with placeholder keys, never the
environment's; real AWS only with `aws_endpoint: aws`; one emulator per `serve`; the
emulator's URL file is never written through a planted symlink. The suite's egress guard
(tests/egress_guard.py) fails any of these tests whose run reaches beyond 127.0.0.1."""

from __future__ import annotations

import json
import os
import threading
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from unumctl_testing.apps import make_sfn_app
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

boto3 = pytest.importorskip("boto3", reason="boto3 (the aws extra) makes the integration calls")

ENV_KEY = "AKIAENVIRONMENTKEY01"  # the "user's" access key: must never be sent anywhere
INVOKE = "arn:aws:states:::lambda:invoke"
VICTIMS = ("arn:aws:lambda:us-east-1:123456789012:function:victim", "victim-fn")
ECHO = "def handler(event, context):\n    return event\n"


def victim_machine() -> dict:
    """Echo (a function of the app), then a lambda:invoke of each VICTIMS function (outside
    the app), each failure caught into $.errors[i]."""
    states: dict = {"Echo": {"Type": "Task", "Resource": "Echo", "Next": "V0"}}
    for i, fn in enumerate(VICTIMS):
        states[f"V{i}"] = {"Type": "Task", "Resource": INVOKE, "Parameters": {"FunctionName": fn, "Payload": {}},
                           "ResultPath": f"$.ok{i}", "Next": f"V{i + 1}" if i + 1 < len(VICTIMS) else "Done",
                           "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": f"$.err{i}",
                                      "Next": f"V{i + 1}" if i + 1 < len(VICTIMS) else "Done"}]}
    states["Done"] = {"Type": "Succeed"}
    return {"StartAt": "Echo", "States": states}


@pytest.fixture
def user_env(monkeypatch):
    """The user's shell: their own AWS keys, no endpoint named anywhere."""
    for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_LAMBDA", "UNUM_AWS_ENDPOINT", "UNUM_AWS_CREDENTIALS",
              "AWS_PROFILE", "AWS_SESSION_TOKEN", "SFN_MOCK_CONFIG", "UNUM_SFN_MOCK_CONFIG"):
        monkeypatch.delenv(k, raising=False)
    for k, v in {"AWS_ACCESS_KEY_ID": ENV_KEY, "AWS_SECRET_ACCESS_KEY": "environment-secret",
                 "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        monkeypatch.setenv(k, v)


@pytest.fixture
def moto(user_env):
    from unumctl.aws.emulate.moto_local import find_moto_server
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")


@contextmanager
def recorder() -> Iterator[tuple[str, list[dict]]]:
    """An AWS endpoint on 127.0.0.1 that records each request (method, path, Authorization)
    and answers every one as Lambda answers a missing function (404
    ResourceNotFoundException)."""
    seen: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            seen.append({"path": self.path, "auth": self.headers.get("Authorization") or ""})
            body = json.dumps({"Type": "User", "message": "Function not found"}).encode()
            self.send_response(404)
            self.send_header("x-amzn-ErrorType", "ResourceNotFoundException")
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST  # noqa: N815

        def log_message(self, *args):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    finally:
        srv.shutdown()
        t.join(5)


def run_local(root: Path, state: Path, value=None) -> tuple[dict, LocalRunner]:
    with LocalRunner(load_app(root), state=state, quiet=True) as r:
        return r.run(value if value is not None else {}, timeout=60), r


def test_lambda_outside_the_app_goes_to_the_embedded_emulator_not_to_aws(moto, tmp_path):
    """Issue 33 item 6: no other integration Task, no endpoint named: the lambda:invoke of a
    function outside the app (an ARN of another account, a plain name) goes to the embedded
    emulator on 127.0.0.1 (which has no such function: Lambda.ResourceNotFoundException),
    not to lambda.us-east-1.amazonaws.com with the environment's keys (on main the guard
    records that request and the test fails)."""
    root = make_sfn_app(tmp_path / "app", victim_machine(), {"Echo": ECHO}, "victims")
    item, r = run_local(root, tmp_path / "state")
    assert item["status"] == "SUCCEEDED", item
    assert [item["v"][f"err{i}"]["Error"] for i in range(len(VICTIMS))] == \
        ["Lambda.ResourceNotFoundException"] * len(VICTIMS), item
    assert r.aws_endpoint is not None and r.aws_endpoint.startswith("http://127.0.0.1:"), r.aws_endpoint


def test_unumctl_invoke_of_a_victim_lambda_stays_on_this_machine(moto, tmp_path):
    """The same through `unumctl invoke` (a subprocess, and its workers, under the egress
    guard): the result names the emulator's ResourceNotFoundException for each victim."""
    import subprocess
    import sys

    from unumctl_testing.apps import ROOT
    root = make_sfn_app(tmp_path / "app", victim_machine(), {"Echo": ECHO}, "victims")
    (tmp_path / "in.json").write_text("{}")
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(root), "--data", str(tmp_path / "in.json")],
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [out[f"err{i}"]["Error"] for i in range(len(VICTIMS))] == \
        ["Lambda.ResourceNotFoundException"] * len(VICTIMS), proc.stdout


def test_a_named_endpoint_gets_placeholder_keys_never_the_environments(user_env, tmp_path):
    """integrations.aws_endpoint names an endpoint: the Lambda calls reach it signed with the
    placeholder key `testing` and the explicit region, never with the environment's
    AWS_ACCESS_KEY_ID (main signed with it)."""
    root = make_sfn_app(tmp_path / "app", victim_machine(), {"Echo": ECHO}, "victims")
    with recorder() as (url, seen):
        doc = yaml.safe_load((root / "unumctl.yaml").read_text())
        doc["integrations"] = {"aws_endpoint": url}
        (root / "unumctl.yaml").write_text(yaml.safe_dump(doc))
        item, _ = run_local(root, tmp_path / "state")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["err0"]["Error"] == "Lambda.ResourceNotFoundException", item
    assert [s["path"].split("/")[3] for s in seen] == ["arn%3Aaws%3Alambda%3Aus-east-1%3A123456789012%3Afunction%3Avictim",
                                                       "victim-fn"], seen
    assert all("Credential=testing/" in s["auth"] and "/us-east-1/lambda/" in s["auth"] for s in seen), seen
    assert not any(ENV_KEY in s["auth"] for s in seen), seen


def victims_only() -> dict:
    """victim_machine without Echo: no function of any APP, only the victims."""
    definition = victim_machine()
    del definition["States"]["Echo"]
    definition["StartAt"] = "V0"
    return definition


def test_serve_sends_a_created_machines_victim_lambda_to_the_emulator(moto, tmp_path):
    """Issue 33 item 6 on `serve`: CreateStateMachine + StartExecution of a machine whose only
    Tasks are lambda:invoke of functions outside every APP: they reach the service's
    emulator (Lambda.ResourceNotFoundException), not the public Lambda endpoint (main: four
    signed requests to lambda.us-east-1.amazonaws.com, States.TaskFailed here)."""
    from tests.unumctl.serve.test_sfn_api import ROLE, served
    with served([], tmp_path / "state") as (_svc, sfn):
        arn = sfn.create_state_machine(name="victims", definition=json.dumps(victims_only()),
                                       roleArn=ROLE)["stateMachineArn"]
        desc = wait_execution(sfn, sfn.start_execution(stateMachineArn=arn, input="{}")["executionArn"])
    assert desc["status"] == "SUCCEEDED", desc
    errors = [json.loads(desc["output"])[f"err{i}"]["Error"] for i in range(len(VICTIMS))]
    assert errors == ["Lambda.ResourceNotFoundException"] * len(VICTIMS), desc


def test_serve_starts_one_emulator_for_all_its_machines(moto, tmp_path):
    """Issue 33 item 7: three created machines with an integration Task share one
    moto_server, a child of this process (main started one per machine, ~75 MB each), whose
    URL each machine's aws-endpoint file names; it stops with the service."""
    from tests.unumctl.serve.test_sfn_api import ROLE, served
    definition = {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": "arn:aws:states:::aws-sdk:sqs:listQueues",
                                                   "Parameters": {}, "End": True}}}
    with served([], tmp_path / "state") as (svc, sfn):
        arns = [sfn.create_state_machine(name=f"lister-{i}", definition=json.dumps(definition),
                                         roleArn=ROLE)["stateMachineArn"] for i in range(3)]
        children = moto_children()
        urls = {(m.runner.state / "aws-endpoint").read_text() for m in svc.machines()}
        desc = wait_execution(sfn, sfn.start_execution(stateMachineArn=arns[2], input="{}")["executionArn"])
    assert len(children) == 1, children
    assert len(urls) == 1, urls
    assert desc["status"] == "SUCCEEDED", desc
    assert moto_children() == []


def wait_execution(sfn, arn: str, timeout: float = 60.0) -> dict:
    import time
    deadline = time.monotonic() + timeout
    while True:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING" or time.monotonic() > deadline:
            return d
        time.sleep(0.2)


def moto_children() -> list[int]:
    """Live moto_server processes whose parent is this process (from /proc)."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        ppid, state = int(stat.rsplit(")", 1)[1].split()[1]), stat.rsplit(")", 1)[1].split()[0]
        if ppid == os.getpid() and state != "Z" and b"moto_server" in cmd:
            out.append(int(d.name))
    return out


def test_the_emulators_url_file_replaces_a_planted_symlink(moto, tmp_path):
    """Issue 33 item 8: `<state>/aws-endpoint` planted as a symlink to another file: the URL
    is written to a new file renamed over the link; the link's target is untouched."""
    sdk = "arn:aws:states:::aws-sdk:sqs:"
    machine = {"StartAt": "L", "States": {"L": {"Type": "Task", "Resource": sdk + "listQueues", "Parameters": {},
                                                "End": True}}}
    root = make_sfn_app(tmp_path / "app", machine, {"Echo": ECHO})
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    (state / "aws-endpoint").symlink_to(victim)
    with LocalRunner(load_app(root), state=state, quiet=True) as r:
        assert not (state / "aws-endpoint").is_symlink()
        assert (state / "aws-endpoint").read_text().strip() == r.aws_endpoint
        assert r.run({}, timeout=60)["status"] == "SUCCEEDED"
    assert victim.read_text() == "precious\n"
    assert not (state / "aws-endpoint").exists() and not list(state.glob(".aws-endpoint.*"))


def test_the_serve_endpoint_of_nested_executions_gets_placeholder_keys(user_env, monkeypatch):
    """states:startExecution on `serve` (UNUM_SFN_ENDPOINT) signs with the placeholder key,
    not the environment's (main sent the environment's AWS_ACCESS_KEY_ID to it)."""
    from runtime.asl.errors import AslError
    from runtime.asl.integrations import states
    with recorder() as (url, seen):
        monkeypatch.setenv(states.ENV_SFN_ENDPOINT, url)
        with pytest.raises(AslError):
            states._api("describe_execution", executionArn="arn:aws:states:us-east-1:123456789012:execution:m:e")
    assert seen and all("Credential=testing/" in s["auth"] for s in seen), seen


@pytest.mark.parametrize("named,needs,expected", [
    ("aws", True, {"UNUM_AWS_ENDPOINT": "aws"}),                  # the one way to real AWS
    ("http://127.0.0.1:4566", True, "http://127.0.0.1:4566"),
    (None, True, "http://127.0.0.1:1"),                            # the emulator
    (None, False, "none"),                                         # no AWS calls at all
])
def test_one_decision_names_the_endpoint_and_placeholder_keys(named, needs, expected):
    from unumctl.local import integrations_env
    env = integrations_env(named, needs, lambda: "http://127.0.0.1:1", environ={"AWS_ACCESS_KEY_ID": ENV_KEY})
    if isinstance(expected, dict):
        assert env == expected
        return
    assert env["UNUM_AWS_ENDPOINT"] == expected
    assert env["AWS_ACCESS_KEY_ID"] == "testing" and env["AWS_REGION"] == "us-east-1"


def test_runtime_settings_never_take_the_credential_chain_for_an_endpoint(user_env, monkeypatch):
    """runtime.asl.integrations.sdk.settings: a URL gets explicit placeholder keys and region;
    `aws` is boto3's own configuration; `none` refuses the call in one line."""
    from runtime.asl.errors import AslError
    from runtime.asl.integrations import sdk
    monkeypatch.setenv("UNUM_AWS_ENDPOINT", "http://127.0.0.1:4566")
    assert sdk.settings() == {"endpoint_url": "http://127.0.0.1:4566", "region_name": "us-east-1",
                              "aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
    monkeypatch.setenv("UNUM_AWS_ENDPOINT", "aws")
    assert sdk.settings() == {}
    monkeypatch.setenv("UNUM_AWS_ENDPOINT", "none")
    with pytest.raises(AslError) as e:
        sdk.client("lambda")
    assert e.value.error == "States.TaskFailed" and "--aws-endpoint" in e.value.cause


def test_a_task_no_mock_answers_is_refused_not_sent_to_aws(user_env, monkeypatch, tmp_path):
    """A mock configuration (HybridPath mocks only the Lambda Task) and no endpoint named: the
    unmocked SQS Task fails with States.TaskFailed naming --aws-endpoint, and nothing is
    sent anywhere (main sent it to sqs.us-east-1.amazonaws.com with the environment's keys)."""
    from tests.aws.test_integrations_local import MOCKED_MACHINE, MOCKS, TOUCH
    path = tmp_path / "MockConfigFile.json"
    path.write_text(json.dumps(MOCKS))
    monkeypatch.setenv("UNUM_SFN_MOCK_CONFIG", str(path))
    monkeypatch.setenv("UNUM_SFN_TEST_CASE", "HybridPath")
    root = make_sfn_app(tmp_path / "app", MOCKED_MACHINE, {"Echo": TOUCH}, "mocked")
    item, r = run_local(root, tmp_path / "state", {"dir": str(tmp_path)})
    assert r.aws_endpoint == "none"
    assert item["status"] == "FAILED" and item["error"] == "States.TaskFailed", item
    assert "no AWS endpoint" in item["cause"] and "--aws-endpoint" in item["cause"], item
