"""runtime/gcp/entry.py in-process against the emulators: the raw Pub/Sub push body is
accepted, an entry message without a session gets one derived from its message id, and a
message older than UNUM_GIVE_UP_SECONDS (earlier deliveries crashed or timed out) is not
run but recorded as the session's failure."""

from __future__ import annotations

import base64
import json
import uuid
import zipfile

import pytest

from unumctl.build import build_function
from unumctl.manifest import load_app

from ..helpers import make_app

pytestmark = pytest.mark.timeout(120)


def _push(payload, mid, publish_time="2099-01-01T00:00:00Z"):
    return {"subscription": "projects/unum-test/subscriptions/x",
            "message": {"data": base64.b64encode(json.dumps(payload).encode()).decode(),
                        "messageId": mid, "publishTime": publish_time, "attributes": {}}}


@pytest.fixture
def function(emulators, tmp_path):
    import unumctl.gcp  # noqa: F401  (registers the gcp bundle hook)
    from runtime.gcp.entry import GcpFunction

    root = make_app(tmp_path / "app", f"entry-{uuid.uuid4().hex[:6]}", {
        "Only": ({"Start": True}, "def handler(e, c):\n    return {'got': e, 'session': c.session}\n")})
    app = load_app(root)
    art = build_function(app, "Only", "gcp", tmp_path / "build")
    src = tmp_path / "bundle"
    with zipfile.ZipFile(art.path) as zf:
        zf.extractall(src)
    env = {**emulators.env, "UNUM_PROJECT": emulators.project, "UNUM_GIVE_UP_SECONDS": "3600"}
    return GcpFunction(src, env)


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
