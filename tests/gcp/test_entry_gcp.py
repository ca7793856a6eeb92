"""runtime/gcp/entry.py in-process against the emulators: the raw Pub/Sub push body is
accepted, an entry message without a session gets one derived from its message id, and a
message older than UNUM_GIVE_UP_SECONDS (earlier deliveries crashed or timed out) is not
run but recorded as the session's failure."""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
import uuid
import zipfile

import pytest

from runtime.bundle import FUNCTION_FILE
from unumctl.build import build_function
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

pytestmark = pytest.mark.timeout(120)


def _push(payload, mid, publish_time="2099-01-01T00:00:00Z"):
    return {"subscription": "projects/unum-test/subscriptions/x",
            "message": {"data": base64.b64encode(json.dumps(payload).encode()).decode(),
                        "messageId": mid, "publishTime": publish_time, "attributes": {}}}


def _function(emulators, tmp_path, code, **env):
    from runtime.gcp.entry import GcpFunction

    root = make_app(tmp_path / "app", f"entry-{uuid.uuid4().hex[:6]}", {"Only": ({"Start": True}, code)})
    app = load_app(root)
    art = build_function(app, "Only", "gcp", tmp_path / "build")
    src = tmp_path / "bundle"
    with zipfile.ZipFile(art.path) as zf:
        zf.extractall(src)
    # each test's bundle is a fresh process on the cloud: not the module an earlier test imported
    sys.modules.pop(json.loads((src / FUNCTION_FILE).read_text())["handler"].rpartition(".")[0], None)
    return GcpFunction(src, {**emulators.env, "UNUM_PROJECT": emulators.project,
                             "UNUM_GIVE_UP_SECONDS": "3600", **env})


@pytest.fixture
def function(emulators, tmp_path):
    return _function(emulators, tmp_path, "def handler(e, c):\n    return {'got': e, 'session': c.session}\n")


def test_raw_push_body_and_derived_session(function):
    mid = f"m-{uuid.uuid4().hex}"
    out = function.handle(_push({"Data": {"Source": "http", "Value": 5}}, mid))
    session = str(uuid.uuid5(uuid.NAMESPACE_URL, f"pubsub:{mid}"))
    assert out.status == "ran" and out.session == session
    item = function.ds.get(session, "result")
    assert item["status"] == "SUCCEEDED" and item["v"] == {"got": 5, "session": session}


def test_old_message_is_failed_not_run(function):
    sid = str(uuid.uuid4())
    out = function.handle(_push({"Session": sid, "Data": {"Source": "http", "Value": 1}}, "m-old",
                                publish_time="2000-01-01T00:00:00Z"))
    assert out is None
    item = function.ds.get(sid, "result")
    assert item["status"] == "FAILED" and item["error"] == "DeliveryExpired"
    assert item["instance"] == "Only" and "older than 3600s" in item["cause"]


def test_event_without_message_is_rejected(function):
    with pytest.raises(ValueError, match="no Pub/Sub message"):
        function.handle({"hello": "world"})


GATED = """import os, time
def handler(e, c):
    open(e["started"], "w").close()
    while not os.path.exists(e["gate"]):
        time.sleep(0.01)
    return {"got": e["n"]}
"""


def test_concurrent_deliveries_keep_their_own_fault_draws(emulators, tmp_path):
    """functions-framework runs deliveries on threads of one process. With faults armed
    (crash=1: every attempt but the last crashes), delivery B of another message arms its
    attempt-1 draws while delivery A, on its last attempt, is inside the user code: A must
    still run with its own draws and succeed, and B must crash (was: A crashed with B's
    draws and, counted under B's attempt, could fail its session on the first attempt)."""
    fn = _function(emulators, tmp_path, GATED, UNUM_FAULTS="seed=1,crash=1")
    sa, sb, ma, mb = str(uuid.uuid4()), str(uuid.uuid4()), f"m-{uuid.uuid4().hex}", f"m-{uuid.uuid4().hex}"
    for token in ("attempt-1", "attempt-2"):  # A's message failed twice: A is attempt 3 of 3
        fn.ds.set_add(sa, f"delivery/{ma}", token, 4102444800)
    started, gate = tmp_path / "a-started", tmp_path / "a-gate"
    got: dict = {}

    def run_a():
        try:
            got["a"] = fn.handle(_push({"Session": sa, "Data": {"Source": "http", "Value": {
                "n": 1, "started": str(started), "gate": str(gate)}}}, ma))
        except BaseException as exc:  # noqa: BLE001  (reported by the assertion below)
            got["a"] = exc

    t = threading.Thread(target=run_a)
    t.start()
    deadline = time.monotonic() + 30
    while not started.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert started.exists(), got
    open_gate = tmp_path / "b-gate"
    open_gate.touch()
    with pytest.raises(RuntimeError, match="injected crash .* \\(attempt 1\\)"):
        fn.handle(_push({"Session": sb, "Data": {"Source": "http", "Value": {
            "n": 2, "started": str(tmp_path / "b-started"), "gate": str(open_gate)}}}, mb))
    gate.touch()
    t.join(30)
    assert not t.is_alive()
    assert not isinstance(got["a"], BaseException), got["a"]
    assert got["a"].status == "ran"
    assert fn.ds.get(sa, "result")["status"] == "SUCCEEDED"
