"""The triggers of `unumctl serve` (unumctl/serve/triggers.py) on the real Service and
server: every source's events delivered twice (some out of order) start exactly one session
each, with the right input, counted in the app's session registry (`local_sessions`);
the HTTP endpoint answers 202 with the session or waits for the result; the local queue
redelivers and dead-letters; the watched directory and the scheduler fire."""

from __future__ import annotations

import http.client
import json
import sqlite3
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from runtime.payload import SessionId
from runtime.sources import Start, session_key
from unumctl.serve.server import make_api_server
from unumctl.serve.service import Service
from unumctl.serve.sfn_api import SfnApi
from unumctl.serve.triggers import TriggerHost
from unumctl_testing.apps import make_app

ECHO = "def handler(event, context):\n    if event == 'fail':\n        raise ValueError('asked to fail')\n    return event\n"
TRIGGERS = {"web": {"type": "http"}, "webwait": {"type": "http", "wait_seconds": 60},
            "orders": {"type": "queue", "batch_size": 3, "max_receive_count": 2},
            "uploads": {"type": "storage", "suffix": ".json"},
            "nightly": {"type": "schedule", "expression": "rate(1 minute)", "input": {"mode": "full"}},
            "audit": {"type": "eventbridge", "pattern": {"source": ["my.app"], "detail": {"kind": ["order"]}}}}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The app `trig` (one Echo function, every kind of trigger) on a Service behind the
    server on a free port, its triggers' host without its background threads (the tests
    drive queues, directory and schedule themselves; test_the_background_threads_* starts
    them). Yields (host, machine, port, app root)."""
    root = tmp_path_factory.mktemp("trig")
    app = make_app(root / "trig", "trig", {"Echo": ({"Start": True}, ECHO)})
    doc = yaml.safe_load((app / "unumctl.yaml").read_text())
    doc["triggers"] = TRIGGERS
    (app / "unumctl.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    svc = Service([app], root / "state", workers=1)
    svc.start()
    api = SfnApi(svc)
    server = make_api_server(api, 0)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    svc.publish(f"http://127.0.0.1:{server.port}")
    host = api.triggers = TriggerHost(svc, poll=0.05, visibility=0.2)
    m = svc.by_app("trig")
    try:
        yield host, m, server.port, app
    finally:
        host.close()
        server.shutdown()
        svc.close()


def trigger(m, name):
    return next(t for t in m.app.triggers if t.name == name)


def registry(app: Path, trigger_name: str, keys: list[str]) -> dict[str, object]:
    """{source key: the registered input} of the sessions of `keys` under `trigger_name`
    found in the app's session registry."""
    sids = {str(SessionId.for_key(session_key(trigger_name, Start(k, None)))): k for k in keys}
    db = sqlite3.connect(app / ".unum" / "local" / "dev" / "unum.db")
    try:
        rows = db.execute(f"SELECT session, input FROM local_sessions WHERE session IN ({','.join('?' * len(sids))})",
                          list(sids)).fetchall()
    finally:
        db.close()
    return {sids[s]: json.loads(i) for s, i in rows}


def sessions_total(app: Path) -> int:
    db = sqlite3.connect(app / ".unum" / "local" / "dev" / "unum.db")
    try:
        return db.execute("SELECT COUNT(*) FROM local_sessions").fetchone()[0]
    finally:
        db.close()


def twice(events: list) -> list:
    """Every event twice, the second round in reverse order."""
    return events + events[::-1]


def post(port: int, path: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=90)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read())
    finally:
        conn.close()


def test_http_requests_sent_twice_with_their_keys_start_one_session_each(served):
    host, m, port, app = served
    before = sessions_total(app)
    sids = {}
    for i in twice(list(range(4))):
        status, body = post(port, "/apps/trig/triggers/web", json.dumps({"i": i}).encode(), {"Idempotency-Key": f"k{i}"})
        assert status == 202
        assert sids.setdefault(i, body["session"]) == body["session"]
    assert registry(app, "web", [f"http:k{i}" for i in range(4)]) == {f"http:k{i}": {"i": i} for i in range(4)}
    assert sessions_total(app) == before + 4


def test_the_same_key_with_another_body_is_a_conflict(served):
    _, _, port, _ = served
    assert post(port, "/apps/trig/triggers/web", b'{"a": 1}', {"Idempotency-Key": "clash"})[0] == 202
    status, body = post(port, "/apps/trig/triggers/web", b'{"a": 2}', {"Idempotency-Key": "clash"})
    assert status == 409 and "ExecutionAlreadyExists" in body["error"]


def test_wait_seconds_answers_with_the_result_and_a_failure_with_its_error(served):
    _, _, port, _ = served
    status, body = post(port, "/apps/trig/triggers/webwait", b'{"x": [1, 2]}', {"Idempotency-Key": "w1"})
    assert (status, body["status"], body["result"]) == (200, "SUCCEEDED", {"x": [1, 2]})
    again = post(port, "/apps/trig/triggers/webwait", b'{"x": [1, 2]}', {"Idempotency-Key": "w1"})
    assert again == (200, body)  # the ended session's result, nothing started
    status, body = post(port, "/apps/trig/triggers/webwait", b'"fail"')
    assert status == 500 and body["status"] == "FAILED" and "asked to fail" in body["cause"] + body["error"]


def test_unknown_and_unsendable_triggers_are_refused_in_one_line(served):
    _, _, port, _ = served
    assert post(port, "/apps/trig/triggers/nope", b"{}")[0] == 404
    assert post(port, "/apps/other/triggers/web", b"{}")[0] == 404
    status, body = post(port, "/apps/trig/triggers/uploads", b"{}")
    assert status == 405 and "copy files into" in body["error"]
    assert post(port, "/apps/trig/triggers/nightly", b"{}")[0] == 405


def test_queue_messages_delivered_twice_start_one_session_each(served):
    host, m, port, app = served
    t = trigger(m, "orders")
    ids = [post(port, "/apps/trig/triggers/orders", json.dumps({"order": i}).encode())[1]["messageId"] for i in range(5)]
    before = sessions_total(app)
    records = [{"messageId": mid, "body": json.dumps({"order": i}), "eventSource": "unumctl:queue"}
               for i, mid in enumerate(ids)]
    for rec in twice(records):  # the deliveries a lost delete or a visibility timeout makes
        host.deliver(m, t, {"Records": [rec]})
    while host.drain_queue(m, t):  # and the queue's own delivery of each
        pass
    assert registry(app, "orders", [f"queue:{mid}" for mid in ids]) == {f"queue:{mid}": {"order": i}
                                                                          for i, mid in enumerate(ids)}
    assert sessions_total(app) == before + 5
    assert host.queue(m).counts("orders") == (0, 0)


def test_a_message_whose_start_fails_is_redelivered_then_dead_lettered(served):
    host, m, port, app = served
    t = trigger(m, "orders")
    # a message that claims the session of an earlier one with another input: its start
    # fails every time (ExecutionAlreadyExists), so it is received max_receive_count times
    mid = post(port, "/apps/trig/triggers/orders", b'{"x": 1}')[1]["messageId"]
    host.deliver(m, t, {"Records": [{"messageId": mid, "body": '{"x": 0}', "eventSource": "unumctl:queue"}]})
    assert host.drain_queue(m, t) == 1
    assert host.queue(m).counts("orders") == (1, 0) and host.drain_queue(m, t) == 0  # invisible for now
    time.sleep(0.25)
    assert host.drain_queue(m, t) == 1
    assert host.queue(m).counts("orders") == (0, 1)
    assert registry(app, "orders", [f"queue:{mid}"]) == {f"queue:{mid}": {"x": 0}}


def test_files_seen_twice_and_after_a_restart_start_one_session_each(served):
    host, m, _, app = served
    t = trigger(m, "uploads")
    d = host.watched_dir(m, t)
    assert d == app / ".unum" / "local" / "dev" / "storage" / "uploads"
    for i in range(3):
        (d / f"f{i}.json").write_text(json.dumps({"i": i}))
    (d / "skip.txt").write_text("x")
    from unumctl.serve.watcher import DirectoryWatcher
    w = DirectoryWatcher(d, "uploads")
    assert w.poll() == []  # not settled yet
    events = w.poll()
    assert [e["name"] for e in events] == ["f0.json", "f1.json", "f2.json", "skip.txt"]
    assert w.poll() == []  # reported once
    before = sessions_total(app)
    restarted = DirectoryWatcher(d, "uploads")  # a restarted serve sees every file again
    restarted.poll()
    for event in twice(events) + restarted.poll():
        host.deliver(m, t, event)
    keys = [f"storage:uploads/f{i}.json#{e['generation']}" for i, e in enumerate(events[:3])]
    got = registry(app, "uploads", keys)
    assert {k: v["key"] for k, v in got.items()} == dict(zip(keys, ["f0.json", "f1.json", "f2.json"]))
    assert sessions_total(app) == before + 3  # skip.txt is outside the suffix filter


def test_schedule_firings_delivered_twice_start_one_session_each(served):
    host, m, _, app = served
    t = trigger(m, "nightly")
    times = ["2030-01-01T00:00:00Z", "2030-01-01T00:01:00Z", "2030-01-01T00:02:00Z"]
    before = sessions_total(app)
    for when in twice(times):
        host.deliver(m, t, {"scheduled_time": when})
    assert registry(app, "nightly", [f"schedule:{w}" for w in times]) == {f"schedule:{w}": {"mode": "full"} for w in times}
    assert sessions_total(app) == before + 3


def test_eventbridge_events_delivered_twice_start_one_session_each_and_others_none(served):
    host, m, port, app = served
    t = trigger(m, "audit")
    status, body = post(port, "/apps/trig/triggers/audit", json.dumps(
        {"Source": "my.app", "DetailType": "Order Placed", "Detail": {"kind": "order"}}).encode())
    assert status == 200 and body["matched"] is True
    assert post(port, "/apps/trig/triggers/audit", json.dumps(
        {"Source": "other.app", "DetailType": "x", "Detail": {"kind": "order"}}).encode())[1]["matched"] is False
    events = [{"version": "0", "id": f"ev-{i}", "detail-type": "Order Placed", "source": "my.app",
               "time": "2030-01-01T00:00:00Z", "detail": {"kind": "order", "n": i}} for i in range(3)]
    before = sessions_total(app)
    for e in twice(events):
        host.deliver(m, t, e)
    got = registry(app, "audit", [f"eventbridge:ev-{i}" for i in range(3)])
    assert {k: v["detail"]["n"] for k, v in got.items()} == {f"eventbridge:ev-{i}": i for i in range(3)}
    assert sessions_total(app) == before + 3


def test_the_background_threads_deliver_queue_storage_and_schedule(served, monkeypatch):
    host, m, port, app = served
    import unumctl.serve.triggers as trig
    first = datetime.fromtimestamp(int(time.time()) + 2, timezone.utc)
    real = trig.next_fire

    def soon(expression, tz, after):  # the schedule's first time brought near, then the real ones
        return first if after < first else real(expression, tz, after)

    monkeypatch.setattr(trig, "next_fire", soon)
    mid = post(port, "/apps/trig/triggers/orders", b'{"bg": true}')[1]["messageId"]
    d = host.watched_dir(m, trigger(m, "uploads"))
    (d / "bg.json").write_text("{}")
    host.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = registry(app, "orders", [f"queue:{mid}"])
        if got and host.queue(m).counts("orders")[0] == 0:
            break
        time.sleep(0.05)
    assert registry(app, "orders", [f"queue:{mid}"]) == {f"queue:{mid}": {"bg": True}}
    gen = (d / "bg.json").stat().st_mtime_ns
    while time.monotonic() < deadline and not registry(app, "uploads", [f"storage:uploads/bg.json#{gen}"]):
        time.sleep(0.05)
    assert registry(app, "uploads", [f"storage:uploads/bg.json#{gen}"])["storage:uploads/bg.json#" + str(gen)]["key"] == "bg.json"
    key = "schedule:" + first.strftime("%Y-%m-%dT%H:%M:%SZ")
    while time.monotonic() < deadline and not registry(app, "nightly", [key]):
        time.sleep(0.05)
    assert registry(app, "nightly", [key]) == {key: {"mode": "full"}}


def test_an_express_apps_triggers_are_refused_in_one_line(served, monkeypatch):
    _, m, port, _ = served
    monkeypatch.setattr(m, "type", "EXPRESS")
    status, body = post(port, "/apps/trig/triggers/web", b"{}", {"Idempotency-Key": "x"})
    assert status == 409 and "workflow.type is EXPRESS" in body["error"]


def test_unumctl_send_posts_to_the_trigger_of_the_serve_hosting_the_app(served, tmp_path):
    from typer.testing import CliRunner

    from unumctl.cli import app as cli
    _, _, _, app = served
    data = tmp_path / "in.json"
    data.write_text('{"sent": 1}')
    runner = CliRunner()
    first = runner.invoke(cli, ["send", str(app), "web", "--data", str(data), "--idempotency-key", "cli-1"])
    again = runner.invoke(cli, ["send", str(app), "web", "--data", str(data), "--idempotency-key", "cli-1"])
    assert first.exit_code == again.exit_code == 0, first.output
    assert json.loads(first.stdout) == json.loads(again.stdout)
    assert registry(app, "web", ["http:cli-1"]) == {"http:cli-1": {"sent": 1}}
    queued = runner.invoke(cli, ["send", str(app), "orders", "--data", str(data)])
    assert queued.exit_code == 0 and "messageId" in json.loads(queued.stdout)
    refused = runner.invoke(cli, ["send", str(app), "uploads", "--data", str(data)])
    assert refused.exit_code == 2 and "copy files into its directory" in refused.output
    unknown = runner.invoke(cli, ["send", str(app), "nope", "--data", str(data)])
    assert unknown.exit_code == 2 and "has no trigger 'nope'" in unknown.output


def test_a_planted_link_is_refused_for_the_watched_directory_and_the_queue_file(served, tmp_path):
    from unumctl.serve.trigger_queue import LocalQueue
    from unumctl.triggers import Trigger
    host, m, _, _ = served
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (m.runner.state / "storage" / "linked").symlink_to(elsewhere)
    with pytest.raises(OSError, match="is a symbolic link"):
        host.watched_dir(m, Trigger("linked", "storage", {"prefix": "", "suffix": ""}))
    (tmp_path / "q.sqlite").symlink_to(tmp_path / "target.sqlite")
    with pytest.raises(OSError):
        LocalQueue(tmp_path / "q.sqlite")
    assert not (tmp_path / "target.sqlite").exists()


def test_a_file_whose_start_failed_is_reported_again():
    import tempfile

    from unumctl.serve.watcher import DirectoryWatcher
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "a.json").write_text("{}")
        w = DirectoryWatcher(Path(d), "uploads")
        w.poll()
        assert [e["name"] for e in w.poll()] == ["a.json"] and w.poll() == []
        w.forget("a.json")
        assert [e["name"] for e in w.poll()] == ["a.json"]


def test_exact_value_patterns_match_nested_fields_and_array_values():
    from unumctl.serve.triggers import pattern_matches
    pattern = {"source": ["my.app"], "detail": {"kind": ["order", "refund"]}}
    assert pattern_matches(pattern, {"source": "my.app", "detail": {"kind": "refund", "n": 1}})
    assert pattern_matches({"resources": ["r2"]}, {"resources": ["r1", "r2"]})
    assert not pattern_matches(pattern, {"source": "my.app", "detail": {"kind": "other"}})
    assert not pattern_matches(pattern, {"source": "my.app"})


def test_a_pattern_with_operators_is_not_run_on_serve_and_says_so(served, monkeypatch):
    _, m, port, _ = served
    t = trigger(m, "audit")
    monkeypatch.setitem(t.options, "pattern", {"source": [{"prefix": "my."}]})
    status, body = post(port, "/apps/trig/triggers/audit", b'{"Source": "my.app", "DetailType": "x"}')
    assert status == 409 and "exact values only" in body["error"]
