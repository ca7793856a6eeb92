"""`unumctl serve`'s HTTP edge against what a web page or a careless client can send
(docs/local-service.md "What is refused"): the real Service and SfnApi behind the real
werkzeug server (unumctl/serve/server.py make_api_server) on 127.0.0.1, driven with raw
http.client requests and boto3."""

from __future__ import annotations

import http.client
import json
import os
import socket
import threading
import time
from pathlib import Path

import pytest

from unumctl_testing.apps import make_sfn_app, sfn_task
from unumctl.serve.server import make_api_server
from unumctl.serve.service import Service
from unumctl.serve.sfn_api import MAX_REQUEST_BYTES, SfnApi

ECHO = "def handler(event, context):\n    return event\n"
TARGET = "AWSStepFunctions."


@pytest.fixture(scope="module")
def api_server(tmp_path_factory):
    """One Service hosting the Step Functions app `fns` (machine `fns`), served on a free
    port with a 0.5 s idle timeout; yields the port."""
    root = tmp_path_factory.mktemp("hard")
    app = make_sfn_app(root / "fns", {"StartAt": "Echo", "States": {"Echo": sfn_task("Echo")}},
                       {"Echo": ECHO}, name="fns")
    svc = Service([app], root / "state")
    svc.start()
    server = make_api_server(SfnApi(svc), 0, idle_timeout=0.5)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield server.port
    finally:
        server.shutdown()
        t.join(5)
        svc.close()


def call(port: int, op: str, body: bytes | str | dict, headers: dict | None = None,
         chunked: bool = False) -> tuple[int, dict]:
    """POST one operation; (HTTP status, JSON body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    data = body if isinstance(body, bytes) else (body if isinstance(body, str) else json.dumps(body)).encode()
    h = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": TARGET + op, **(headers or {})}
    try:
        if chunked:
            conn.request("POST", "/", body=iter([data[i:i + 65536] for i in range(0, len(data), 65536)]),
                         headers=h, encode_chunked=True)
        else:
            conn.request("POST", "/", body=data, headers=h)
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


MACHINE = "arn:aws:states:us-east-1:000000000000:stateMachine:fns"


def test_only_requests_to_the_bound_address_are_answered(api_server):
    port = api_server
    assert call(port, "ListStateMachines", {})[0] == 200  # Host: 127.0.0.1:PORT (http.client's)
    assert call(port, "ListStateMachines", {}, {"Host": f"localhost:{port}"})[0] == 200
    for host in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", f"localhost.evil.example:{port}", ""):
        status, body = call(port, "ListStateMachines", {}, {"Host": host})
        assert status == 403 and body["__type"] == "AccessDeniedException", (host, status, body)
    # a page on localhost itself (or a rebinding page that guessed the Host) still sends Origin
    status, body = call(port, "StartExecution", {"stateMachineArn": MACHINE, "input": "{}"},
                        {"Origin": "http://evil.example"})
    assert status == 403 and body["__type"] == "AccessDeniedException" and "Origin" in body["message"]
    status, body = call(port, "ListStateMachines", {}, {"Origin": "null"})
    assert status == 403


def test_boto3_still_works(api_server):
    boto3 = pytest.importorskip("boto3", reason="boto3 (the aws extra) drives the API")
    from botocore.config import Config
    sfn = boto3.client("stepfunctions", endpoint_url=f"http://127.0.0.1:{api_server}", region_name="us-east-1",
                       aws_access_key_id="fake", aws_secret_access_key="fake",
                       config=Config(inject_host_prefix=False, retries={"max_attempts": 1}))
    assert [m["name"] for m in sfn.list_state_machines()["stateMachines"]] == ["fns"]


def test_request_bodies_over_aws_limit_are_refused(api_server):
    port = api_server
    pad = b" " * (MAX_REQUEST_BYTES - 100)
    assert call(port, "ListStateMachines", b"{}" + pad)[0] == 200  # just under 1 MiB: read
    big = b"{}" + b" " * MAX_REQUEST_BYTES
    for chunked in (False, True):
        status, body = call(port, "ListStateMachines", big, chunked=chunked)
        assert status == 413 and body["__type"] == "ValidationException", (chunked, status, body)
        assert f"larger than {MAX_REQUEST_BYTES} bytes" in body["message"]


@pytest.mark.parametrize("op,body,status,kind", [
    ("ListStateMachines", b"{not json", 400, "SerializationException"),
    ("ListStateMachines", b"[" * 200_000, 400, "SerializationException"),
    ("ListStateMachines", b'{"a":' * 100_000, 400, "SerializationException"),
    ("ListStateMachines", b"[1]", 400, "SerializationException"),
    ("StartExecution", {"stateMachineArn": MACHINE, "input": "[" * 100_000 + "]" * 100_000}, 400,
     "InvalidExecutionInput"),
    ("CreateStateMachine", {"name": "deep", "roleArn": "arn:aws:iam::000000000000:role/r",
                            "definition": "[" * 100_000 + "]" * 100_000}, 400, "InvalidDefinition"),
])
def test_malformed_or_deeply_nested_json_is_400_in_aws_shape(api_server, op, body, status, kind):
    got, resp = call(api_server, op, body)
    assert (got, resp.get("__type")) == (status, kind), resp
    assert set(resp) == {"__type", "message"} and "\n" not in resp["message"]


def test_idle_connections_are_closed(api_server):
    """A client that connects and sends nothing, or stalls in the middle of its headers, is
    disconnected after the idle timeout (0.5 s here) instead of holding a thread."""
    for partial in (b"", b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\n"):
        s = socket.create_connection(("127.0.0.1", api_server), timeout=5)
        try:
            s.sendall(partial)
            t0 = time.monotonic()
            data = s.recv(65536)  # b"" once the server closes (a timeout here fails the test)
            while data:           # werkzeug may answer a cut request with an error first
                data = s.recv(65536)
            assert time.monotonic() - t0 < 4
        finally:
            s.close()


def test_a_serve_record_naming_another_address_is_ignored_with_a_warning(tmp_path, capsys):
    """`unumctl invoke` sends a session to the service a state directory's serve.json names
    only when that is http://127.0.0.1:PORT (what serve binds); anything else is ignored,
    with one line naming the file, and the session runs on the local platform."""
    from runtime.local.queue import new_owner
    from unumctl.serve.service import RECORD, running_service
    rec = {"url": "http://127.0.0.1:8083", "machine": "m", "machineArn": MACHINE, "owner": new_owner()}
    (tmp_path / RECORD).write_text(json.dumps(rec))
    assert running_service(tmp_path) == rec and capsys.readouterr().err == ""
    for url in ("http://evil.example:8083", "http://127.0.0.1.evil.example:8083", "http://10.1.2.3:8083",
                "https://127.0.0.1:8083", "http://127.0.0.1:8083/x", "http://localhost:8083", 8083, None):
        (tmp_path / RECORD).write_text(json.dumps({**rec, "url": url}))
        assert running_service(tmp_path) is None, url
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"unumctl: warning: ignored {tmp_path / RECORD}: "), err


def test_a_token_with_a_wrong_attempt_number_is_an_invalid_token(api_server, tmp_path_factory):
    """SendTaskSuccess with a token whose attempt number (or session) names no attempt of
    the app: InvalidToken, like a forged nonce (before: TaskDoesNotExist for a wrong attempt
    number, InvalidToken for a wrong nonce of an existing one)."""
    from runtime.asl.attempts import token_key
    from runtime.asl.callback import Token
    from runtime.local.datastore import SqliteDatastore
    db = next(Path(str(tmp_path_factory.getbasetemp())).glob("hard*/fns/.unum/local/dev/unum.db"))
    ds = SqliteDatastore(db)
    now = time.time()
    try:
        ds.create_if_absent("s1", token_key("Echo", 0), {"k": "ab" * 16, "fn": "Echo", "p": {"Session": "s1"},
                                                         "t0": now, "to": None, "hb": None, "x": now + 600},
                            now + 600)
    finally:
        ds.close()
    for token in (Token("fns", "s1", "Echo", 1, "ab" * 16), Token("fns", "s1", "Echo", 7, "ab" * 16),
                  Token("fns", "s1", "Echo", 0, "cd" * 16), Token("fns", "nope", "Echo", 0, "ab" * 16)):
        status, body = call(api_server, "SendTaskSuccess", {"taskToken": token.encode(), "output": "{}"})
        assert (status, body["__type"], body["message"]) == (400, "InvalidToken", "Invalid token"), (token, body)


def test_created_machines_live_in_an_owner_only_state_directory(api_server, tmp_path_factory):
    status, body = call(api_server, "CreateStateMachine", {
        "name": "perm-flow", "roleArn": "arn:aws:iam::000000000000:role/r",
        "definition": json.dumps({"StartAt": "E", "States": {"E": sfn_task("Echo")}})})
    assert status == 200, body
    state = next(Path(str(tmp_path_factory.getbasetemp())).glob("hard*/state"))
    assert os.stat(state).st_mode & 0o777 == 0o700
    db = state / "machines" / "perm-flow" / ".unum" / "local" / "dev" / "unum.db"
    unum, stage_dir = db.parents[2], db.parent  # <machine>/.unum and its stage's .unum/local/dev
    assert os.stat(unum).st_mode & 0o777 == 0o700 and os.stat(stage_dir).st_mode & 0o777 == 0o700
    assert os.stat(db).st_mode & 0o777 == 0o600
