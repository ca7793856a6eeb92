"""`unumctl serve` driven as a client would: a subprocess on 127.0.0.1 (any free port) and
boto3's real `stepfunctions` client with fake credentials (docs/local-service.md).

The apps: `fns`, a Step Functions app whose Lambda functions are Echo (sleeps `sleep`
seconds, returns its input) and Notify (writes its task token to the file `path`, for a
callback Task); the state machines created through the API call them by Lambda ARN."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from unumctl_testing.apps import ROOT, make_sfn_app, sfn_task

boto3 = pytest.importorskip("boto3", reason="boto3 (the aws extra) drives the API")
from botocore.config import Config  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402

ACCOUNT = "123456789012"  # serve runs with --region REGION --account ACCOUNT (not the defaults)
REGION = "eu-west-2"
LAMBDA = f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:"
ECHO = ("import time\n\n\ndef handler(event, context):\n"
        "    if isinstance(event, dict) and event.get('fail'):\n        raise ValueError('asked to fail')\n"
        "    time.sleep(event.get('sleep', 0) if isinstance(event, dict) else 0)\n    return event\n")
NOTIFY = ("def handler(event, context):\n    with open(event['path'], 'w') as f:\n"
          "        f.write(event['token'])\n    return {'requested': True}\n")
CALLBACK_FLOW = {"StartAt": "Ask", "States": {
    "Ask": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
            "Parameters": {"FunctionName": LAMBDA + "Notify",
                           "Payload": {"token.$": "$$.Task.Token", "path.$": "$.path"}},
            "Next": "Echo"},
    "Echo": {"Type": "Task", "Resource": LAMBDA + "Echo", "End": True}}}
ECHO_FLOW = {"StartAt": "E", "States": {"E": {"Type": "Task", "Resource": LAMBDA + "Echo", "End": True}}}
ROLE = f"arn:aws:iam::{ACCOUNT}:role/test"
ID_FLOW = {"StartAt": "P", "States": {
    "P": {"Type": "Pass", "Next": "E", "Parameters": {
        "id.$": "$$.Execution.Id", "machine.$": "$$.StateMachine.Id", "role.$": "$$.Execution.RoleArn"}},
    "E": {"Type": "Task", "Resource": LAMBDA + "Echo", "End": True}}}


@pytest.fixture
def fns(tmp_path):
    return make_sfn_app(tmp_path / "fns", {"StartAt": "Echo", "States": {"Echo": sfn_task("Echo")}},
                        {"Echo": ECHO, "Notify": NOTIFY}, name="fns")


@pytest.fixture
def short_tmp():
    """A short TMPDIR for serve (the platforms' AF_UNIX socket paths must stay short)."""
    d = tempfile.mkdtemp(prefix="us-", dir="/tmp")
    yield Path(d)
    shutil.rmtree(d, ignore_errors=True)


class Serve:
    """One `unumctl serve` subprocess: its URL, a boto3 client, stop/kill."""

    def __init__(self, apps: list[Path], state: Path, tmpdir: Path, log: Path):
        self.log = open(log, "a")
        env = {**os.environ, "TMPDIR": str(tmpdir), "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "unumctl.cli", "--region", REGION, "serve",
                                      *map(str, apps), "--port", "0", "--state", str(state),
                                      "--account", ACCOUNT],
                                     cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(120)
        assert line and line[0].startswith("http://127.0.0.1:"), (line, log.read_text())
        self.url = line[0].strip()
        self.sfn = boto3.client("stepfunctions", endpoint_url=self.url, region_name="us-east-1",
                                aws_access_key_id="fake", aws_secret_access_key="fake",
                                config=Config(inject_host_prefix=False, retries={"max_attempts": 1},
                                              read_timeout=120))

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.proc.send_signal(sig)
        try:
            return self.proc.wait(60)
        finally:
            self.log.close()


def machine_arn(name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{name}"


def exec_arn(machine: str, name: str) -> str:
    return f"arn:aws:states:{REGION}:{ACCOUNT}:execution:{machine}:{name}"


def wait_status(sfn, arn: str, timeout: float = 60) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        d = sfn.describe_execution(executionArn=arn)
        if d["status"] != "RUNNING":
            return d
        assert time.monotonic() < deadline, d
        time.sleep(0.05)


def wait_file(path: Path, timeout: float = 60) -> str:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text()):
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return path.read_text()


def code(exc: pytest.ExceptionInfo) -> str:
    return exc.value.response["Error"]["Code"]


def test_boto3_drives_the_step_functions_api(fns, tmp_path, short_tmp):
    srv = Serve([fns], tmp_path / "serve", short_tmp, tmp_path / "serve.log")
    sfn = srv.sfn
    try:
        assert [m["name"] for m in sfn.list_state_machines()["stateMachines"]] == ["fns"]
        r = sfn.create_state_machine(name="echo-flow", definition=json.dumps(ECHO_FLOW), roleArn=ROLE)
        assert r["stateMachineArn"] == machine_arn("echo-flow")
        sfn.create_state_machine(name="callback-flow", definition=json.dumps(CALLBACK_FLOW), roleArn=ROLE)
        assert {m["name"] for m in sfn.list_state_machines()["stateMachines"]} == {"fns", "echo-flow", "callback-flow"}
        d = sfn.describe_state_machine(stateMachineArn=machine_arn("echo-flow"))
        assert json.loads(d["definition"]) == ECHO_FLOW and d["roleArn"] == ROLE and d["status"] == "ACTIVE"
        with pytest.raises(ClientError) as exc:
            sfn.create_state_machine(name="echo-flow", definition=json.dumps(CALLBACK_FLOW), roleArn=ROLE)
        assert code(exc) == "StateMachineAlreadyExists"
        with pytest.raises(ClientError) as exc:
            sfn.create_state_machine(name="bad-flow", roleArn=ROLE, definition=json.dumps(
                {"StartAt": "X", "States": {"X": {"Type": "Task", "Resource": LAMBDA + "Nowhere", "End": True}}}))
        assert code(exc) == "InvalidDefinition" and "Nowhere" in exc.value.response["Error"]["Message"]

        # async execution; the same name + input again is the same execution, another input is refused
        inp = json.dumps({"x": 1, "sleep": 1.0})
        r = sfn.start_execution(stateMachineArn=machine_arn("echo-flow"), name="e1", input=inp)
        assert r["executionArn"] == exec_arn("echo-flow", "e1")
        again = sfn.start_execution(stateMachineArn=machine_arn("echo-flow"), name="e1", input=inp)
        assert again["executionArn"] == r["executionArn"] and again["startDate"] == r["startDate"]
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=machine_arn("echo-flow"), name="e1", input=json.dumps({"x": 2}))
        assert code(exc) == "ExecutionAlreadyExists"
        assert exc.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert sfn.describe_execution(executionArn=r["executionArn"])["status"] == "RUNNING"

        # sync execution
        s = sfn.start_sync_execution(stateMachineArn=machine_arn("echo-flow"), name="s1", input='{"y": 2}')
        assert s["status"] == "SUCCEEDED" and json.loads(s["output"]) == {"y": 2}
        assert s["executionArn"] == exec_arn("echo-flow", "s1")
        # the context object names the execution, machine and role with serve's region and account
        sfn.create_state_machine(name="id-flow", definition=json.dumps(ID_FLOW), roleArn=ROLE)
        i = sfn.start_sync_execution(stateMachineArn=machine_arn("id-flow"), name="i1", input="{}")
        assert json.loads(i["output"]) == {"id": exec_arn("id-flow", "i1"), "machine": machine_arn("id-flow"),
                                           "role": f"arn:aws:iam::{ACCOUNT}:role/unum"}, i

        f = sfn.start_sync_execution(stateMachineArn=machine_arn("echo-flow"), name="f1", input='{"fail": true}')
        assert (f["status"], f["error"]) == ("FAILED", "ValueError") and "asked to fail" in f["cause"]

        d = wait_status(sfn, r["executionArn"])
        assert d["status"] == "SUCCEEDED" and json.loads(d["output"]) == {"x": 1, "sleep": 1.0}
        assert json.loads(d["input"]) == {"x": 1, "sleep": 1.0} and d["stopDate"] >= d["startDate"]
        assert d["startDate"] == r["startDate"]
        with pytest.raises(ClientError) as exc:  # an ended execution's name cannot start again
            sfn.start_execution(stateMachineArn=machine_arn("echo-flow"), name="e1", input=inp)
        assert code(exc) == "ExecutionAlreadyExists"

        listed = sfn.list_executions(stateMachineArn=machine_arn("echo-flow"))["executions"]
        assert {e["name"]: e["status"] for e in listed} == {"e1": "SUCCEEDED", "s1": "SUCCEEDED", "f1": "FAILED"}
        assert sfn.list_executions(stateMachineArn=machine_arn("echo-flow"), statusFilter="RUNNING")["executions"] == []
        pages = sfn.get_paginator("list_executions").paginate(stateMachineArn=machine_arn("echo-flow"),
                                                               PaginationConfig={"PageSize": 1})
        assert sorted(e["name"] for p in pages for e in p["executions"]) == ["e1", "f1", "s1"]

        events = sfn.get_execution_history(executionArn=r["executionArn"])["events"]
        types = [e["type"] for e in events]
        assert types[0] == "ExecutionStarted" and types[-1] == "ExecutionSucceeded", types
        assert "LambdaFunctionSucceeded" in types and [e["id"] for e in events] == list(range(1, len(events) + 1))
        assert json.loads(events[0]["executionStartedEventDetails"]["input"]) == {"x": 1, "sleep": 1.0}
        assert json.loads(events[-1]["executionSucceededEventDetails"]["output"]) == {"x": 1, "sleep": 1.0}

        # a callback completed with send_task_success
        token_file = tmp_path / "t1"
        c = sfn.start_execution(stateMachineArn=machine_arn("callback-flow"), name="c1",
                                input=json.dumps({"path": str(token_file)}))
        token = wait_file(token_file)
        assert sfn.describe_execution(executionArn=c["executionArn"])["status"] == "RUNNING"
        sfn.send_task_heartbeat(taskToken=token)
        sfn.send_task_success(taskToken=token, output=json.dumps({"paid": 42}))
        d = wait_status(sfn, c["executionArn"])
        assert d["status"] == "SUCCEEDED" and json.loads(d["output"]) == {"paid": 42}
        with pytest.raises(ClientError) as exc:
            sfn.send_task_success(taskToken="not-a-token", output="{}")
        assert code(exc) == "InvalidToken"

        # stop an execution that waits for its callback
        token_file2 = tmp_path / "t2"
        c2 = sfn.start_execution(stateMachineArn=machine_arn("callback-flow"), name="c2",
                                 input=json.dumps({"path": str(token_file2)}))
        token2 = wait_file(token_file2)
        stopped = sfn.stop_execution(executionArn=c2["executionArn"], error="Test.Stop", cause="by the test")
        assert stopped["stopDate"] >= c2["startDate"]
        d = sfn.describe_execution(executionArn=c2["executionArn"])
        assert (d["status"], d["error"], d["cause"]) == ("ABORTED", "Test.Stop", "by the test")
        with pytest.raises(ClientError) as exc:
            sfn.send_task_success(taskToken=token2, output="{}")
        assert code(exc) in ("TaskDoesNotExist", "TaskTimedOut")
        types = [e["type"] for e in sfn.get_execution_history(executionArn=c2["executionArn"])["events"]]
        assert types[0] == "ExecutionStarted" and "TaskSubmitted" in types and types[-1] == "ExecutionAborted"
        assert [e["name"] for e in sfn.list_executions(stateMachineArn=machine_arn("callback-flow"),
                                                        statusFilter="ABORTED")["executions"]] == ["c2"]

        # errors as AWS shapes them
        with pytest.raises(ClientError) as exc:
            sfn.describe_execution(executionArn="arn:nope")
        assert code(exc) == "InvalidArn"
        with pytest.raises(ClientError) as exc:
            sfn.describe_execution(executionArn=exec_arn("echo-flow", "never"))
        assert code(exc) == "ExecutionDoesNotExist"
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=machine_arn("nope"), input="{}")
        assert code(exc) == "StateMachineDoesNotExist"
        with pytest.raises(ClientError) as exc:
            sfn.start_execution(stateMachineArn=machine_arn("echo-flow"), input="{not json")
        assert code(exc) == "InvalidExecutionInput"

        # `unumctl invoke` of a hosted app runs on the service
        data = tmp_path / "in.json"
        data.write_text(json.dumps({"via": "invoke"}))
        out = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(fns), "--data", str(data),
                              "--session", "inv-1"], cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0, out.stderr
        assert json.loads(out.stdout) == {"via": "invoke"} and srv.url in out.stderr
        assert sfn.describe_execution(executionArn=exec_arn("fns", "inv-1"))["status"] == "SUCCEEDED"
        out = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(fns), "--data", str(data),
                              "--session", "inv-2", "--no-wait"], cwd=ROOT, capture_output=True, text=True,
                             timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 0 and out.stdout.strip() == "inv-2", out.stderr
        assert json.loads(wait_status(sfn, exec_arn("fns", "inv-2"))["output"]) == {"via": "invoke"}
        data.write_text(json.dumps({"fail": True}))
        out = subprocess.run([sys.executable, "-m", "unumctl.cli", "invoke", str(fns), "--data", str(data)],
                             cwd=ROOT, capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
        assert out.returncode == 1 and "ValueError" in out.stderr and "asked to fail" in out.stderr, out.stderr

        sfn.delete_state_machine(stateMachineArn=machine_arn("echo-flow"))
        assert "echo-flow" not in {m["name"] for m in sfn.list_state_machines()["stateMachines"]}
    finally:
        rc = srv.stop()
    assert rc == 0, (tmp_path / "serve.log").read_text()
    assert not (fns / ".unum" / "local" / "dev" / "serve.json").exists()


def _leftovers(db: Path) -> tuple[int, set[str]]:
    con = sqlite3.connect(db)
    try:
        return (con.execute("SELECT count(*) FROM local_queue").fetchone()[0],
                {r[0] for r in con.execute("SELECT DISTINCT name FROM items")})
    finally:
        con.close()


def test_killed_or_stopped_serve_finishes_every_started_execution_on_restart(fns, tmp_path, short_tmp):
    """Executions acknowledged by StartExecution survive a SIGTERM and a SIGKILL of serve in
    the middle of the run: the next start finishes each one with its own input as output,
    and then the queue is empty and only `result` items are left."""
    state, log = tmp_path / "serve", tmp_path / "serve.log"
    started: dict[str, dict] = {}
    for round_, sig in enumerate((signal.SIGTERM, signal.SIGKILL)):
        srv = Serve([fns], state, short_tmp, log)
        if round_ == 0:  # a created machine is started again with the service
            srv.sfn.create_state_machine(name="echo-flow", definition=json.dumps(ECHO_FLOW), roleArn=ROLE)
        for i in range(6):
            name = f"r{round_}-{i}"
            machine = ("fns", "echo-flow")[i % 2]
            started[name] = {"i": i, "round": round_, "sleep": 0.4, "machine": machine}
            srv.sfn.start_execution(stateMachineArn=machine_arn(machine), name=name, input=json.dumps(started[name]))
        sync: dict = {}
        if sig == signal.SIGTERM:  # a request in progress at SIGTERM is answered before serve stops
            def call_sync() -> None:
                try:
                    sync["r"] = srv.sfn.start_sync_execution(stateMachineArn=machine_arn("fns"), name="sync-at-stop",
                                                             input=json.dumps({"sleep": 1.0, "sync": 1}))
                except Exception as exc:  # noqa: BLE001  (reported by the assertion below)
                    sync["error"] = exc
            caller = threading.Thread(target=call_sync)
            caller.start()
        time.sleep(0.5)
        running = [e["name"] for m in ("fns", "echo-flow") for e in srv.sfn.list_executions(
            stateMachineArn=machine_arn(m), statusFilter="RUNNING")["executions"]]
        assert running, "every execution finished before the stop: nothing was tested"
        rc = srv.stop(sig)
        assert rc == (0 if sig == signal.SIGTERM else -signal.SIGKILL)
        if sig == signal.SIGTERM:
            caller.join(30)
            assert "r" in sync, sync
            assert (sync["r"]["status"], json.loads(sync["r"]["output"])) == ("SUCCEEDED", {"sleep": 1.0, "sync": 1})
    srv = Serve([fns], state, short_tmp, log)
    try:
        assert {m["name"] for m in srv.sfn.list_state_machines()["stateMachines"]} == {"fns", "echo-flow"}
        for name, inp in started.items():
            d = wait_status(srv.sfn, exec_arn(inp["machine"], name))
            assert d["status"] == "SUCCEEDED" and json.loads(d["output"]) == inp, (name, d)
        for db in (fns / ".unum" / "local" / "dev" / "unum.db",
                   state / "machines" / "echo-flow" / ".unum" / "local" / "dev" / "unum.db"):
            deadline = time.monotonic() + 10
            while _leftovers(db) != (0, {"result"}):
                assert time.monotonic() < deadline, (db, _leftovers(db))
                time.sleep(0.1)
    finally:
        assert srv.stop() == 0


def test_bad_options_and_a_busy_port_are_one_line_errors(tmp_path):
    import socket

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "unumctl.cli", *args, "--state", str(tmp_path / "s")],
                              cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})

    r = run("serve", "--account", "12", "--port", "0")
    assert r.returncode == 2 and "--account: '12' must be 12 digits" in r.stderr
    r = run("serve", "--faults", "kill=0.1", "--port", "0")
    assert r.returncode == 2 and "--faults: kill is injected by the emulated Lambda" in r.stderr, r.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = run("serve", "--port", str(port))
    assert r.returncode == 2 and f"--port: cannot listen on 127.0.0.1:{port}" in r.stderr, r.stderr


AWS_CLI = ROOT / ".venv-awscli" / "bin" / "aws"


def _aws_cli() -> Path:
    """The AWS CLI of `make awscli` (tools/awscli-requirements.txt). Missing: a failure under
    `make test` (UNUMCTL_REQUIRE_AWSCLI=1, or CI set), a skip elsewhere."""
    if not AWS_CLI.exists():
        msg = f"the AWS CLI is not installed at {AWS_CLI}: run `make awscli` (make test does)"
        if os.environ.get("UNUMCTL_REQUIRE_AWSCLI") or os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return AWS_CLI


@pytest.mark.slow  # runs the AWS CLI, which `make test` installs (docs/testing.md)
def test_aws_cli_drives_serve_as_documented(fns, tmp_path, short_tmp):
    """docs/local-service.md "Clients": `aws stepfunctions start-execution / describe-execution
    / start-sync-execution --endpoint-url` with any credentials (and host prefix injection
    turned off for the sync call), and an API error as the CLI reports it."""
    aws = _aws_cli()
    srv = Serve([fns], tmp_path / "serve", short_tmp, tmp_path / "serve.log")
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "local",
           "AWS_SECRET_ACCESS_KEY": "local", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_CONFIG_FILE": str(tmp_path / "none"), "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}

    def cli(*args: str, extra: dict | None = None) -> subprocess.CompletedProcess:
        return subprocess.run([str(aws), "stepfunctions", *args, "--endpoint-url", srv.url, "--output", "json"],
                              capture_output=True, text=True, timeout=60, env={**env, **(extra or {})})

    try:
        (tmp_path / "in.json").write_text(json.dumps({"via": "aws-cli"}))
        r = cli("start-execution", "--state-machine-arn", machine_arn("fns"), "--name", "cli-1",
                "--input", f"file://{tmp_path / 'in.json'}")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["executionArn"] == exec_arn("fns", "cli-1")
        d = wait_status(srv.sfn, exec_arn("fns", "cli-1"))
        r = cli("describe-execution", "--execution-arn", exec_arn("fns", "cli-1"))
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout)
        assert (out["status"], json.loads(out["output"]), out["name"]) == ("SUCCEEDED", {"via": "aws-cli"}, "cli-1")
        assert d["status"] == "SUCCEEDED"
        r = cli("start-sync-execution", "--state-machine-arn", machine_arn("fns"), "--name", "cli-2",
                "--input", '{"n": 2}', extra={"AWS_DISABLE_HOST_PREFIX_INJECTION": "true"})
        assert r.returncode == 0, r.stderr
        assert (json.loads(r.stdout)["status"], json.loads(json.loads(r.stdout)["output"])) == ("SUCCEEDED", {"n": 2})
        r = cli("start-execution", "--state-machine-arn", machine_arn("fns"), "--name", "cli-1", "--input", '{"other": 1}')
        assert r.returncode != 0 and "ExecutionAlreadyExists" in r.stderr, (r.returncode, r.stderr)
    finally:
        assert srv.stop() == 0


def test_api_reads_never_wait_behind_the_platforms_connection(fns, tmp_path):
    """StartExecution's checks and DescribeExecution read through the machine's own reader
    connections: while the platform's connection is held (the dispatcher in a write that
    waits for SQLite's lock, under load), they still answer."""
    from unumctl.serve.service import Service

    svc = Service([fns], tmp_path / "state")
    svc.start()
    try:
        m = svc.machine(machine_arn("fns"))
        svc.start_execution(m, "held-0", '{"a": 0}')
        assert m.runner.platform.wait_result("held-0", 60)["v"] == {"a": 0}
        out: dict = {}

        def api_calls() -> None:
            out["desc"] = svc.describe(m, "held-0")
            try:
                svc.start_execution(m, "held-0", '{"a": 0}')
            except Exception as exc:  # noqa: BLE001  (asserted below)
                out["again"] = exc

        with m.runner.platform.ds.lock:
            caller = threading.Thread(target=api_calls, daemon=True)
            caller.start()
            caller.join(10)
            assert not caller.is_alive(), "an API read waited for the platform's connection"
        assert (out["desc"]["status"], out["desc"]["output"], out["desc"]["input"]) == ("SUCCEEDED", {"a": 0}, {"a": 0})
        assert out["desc"]["end"] >= out["desc"]["start"] > 0
        assert getattr(out.get("again"), "code", None) == "ExecutionAlreadyExists"
    finally:
        svc.close()
