"""The local platform as a faithful FaaS: the manifest's `timeout` and `memory` are enforced
per execution (a failed delivery attempt, retried, then a clear FAILED session), every
accepted invocation is in the durable queue until it completes, and a new platform delivers
what a stopped one left queued."""

from __future__ import annotations

import json
import os
import sqlite3
import time

import pytest

from runtime.errors import UnumError
import yaml

from runtime.local.queue import DurableQueue, SessionExistsError, canonical_input, new_owner, owner_alive
from runtime.local.datastore import SqliteDatastore
from unumctl.local import LocalRunner
from unumctl.local.platform import PlatformError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

HANG = """
import os, time
def handler(event, context):
    marker = event.get("marker")
    if marker is None or not os.path.exists(marker):  # hang (on the first attempt only)
        if marker is not None:
            open(marker, "w").write(str(os.getpid()))
        while True:
            time.sleep(1)
    return event["n"] + 1
"""

HOG = """
import os
def handler(event, context):
    marker = event.get("marker")
    if marker is None or not os.path.exists(marker):
        if marker is not None:
            open(marker, "w").write("1")
        block = bytearray(event["mb"] * 1024 * 1024)  # touches every page
        return len(block)
    return -1
"""


def limited_app(tmp_path, code: str, *, timeout=None, memory=None, attempts=2):
    root = make_app(tmp_path / "app", "limits-app", {
        "Start": ({"Start": True, "Next": {"Name": "Work"}}, "def handler(e, c):\n    return e\n"),
        "Work": ({}, code)}, runtime={"max_delivery_attempts": attempts})
    m = root / "unumctl.yaml"
    doc = yaml.safe_load(m.read_text())
    if timeout is not None:
        doc["functions"]["Work"]["timeout"] = timeout
    if memory is not None:
        doc["functions"]["Work"]["memory"] = memory
    m.write_text(yaml.safe_dump(doc))
    return load_app(root)


def queue_rows(state) -> int:
    db = sqlite3.connect(state / "unum.db")
    try:
        return db.execute("SELECT count(*) FROM local_queue").fetchone()[0]
    finally:
        db.close()


def test_timeout_kills_the_instance_retries_and_fails_the_session(tmp_path):
    app = limited_app(tmp_path, HANG, timeout=2, attempts=2)
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"n": 1}, "hang-1", timeout=120)
        r.platform.wait_idle()
        stats = dict(r.platform.stats)
    assert item["status"] == "FAILED" and item["instance"] == "Work"
    assert item["error"] == "Unum.Timeout"
    assert item["cause"].startswith("Work timed out after 2 s (delivery attempt 2 of 2)")
    assert stats["timeouts"] == 2 and stats["redeliveries"] == 1
    assert queue_rows(tmp_path / "state") == 0  # given up: removed from the durable queue


def test_hang_on_the_first_attempt_only_succeeds_on_redelivery(tmp_path):
    app = limited_app(tmp_path, HANG, timeout=2, attempts=3)
    marker = tmp_path / "hung"
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"n": 41, "marker": str(marker)}, timeout=120)
        r.platform.wait_idle()
        stats = dict(r.platform.stats)
    assert item["status"] == "SUCCEEDED" and item["v"] == 42
    assert stats["timeouts"] == 1 and stats["redeliveries"] == 1
    hung_pid = int(marker.read_text())
    with pytest.raises(ProcessLookupError):  # the timed-out instance was killed
        os.kill(hung_pid, 0)


def test_memory_limit_is_a_failed_attempt_then_out_of_memory(tmp_path):
    app = limited_app(tmp_path, HOG, memory=128, attempts=2)
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"mb": 400}, timeout=120)
        r.platform.wait_idle()
        stats = dict(r.platform.stats)
    assert item["status"] == "FAILED" and item["instance"] == "Work"
    assert item["error"] == "Runtime.OutOfMemory"
    assert "exceeded its memory limit of 128 MB; runtime exited" in item["cause"]
    assert stats["out_of_memory"] == 2


def test_memory_limit_follows_the_manifest(tmp_path):
    """The same 300 MB allocation fits in `memory: 512`, and an attempt that ran out of memory
    is retried like a crash (the second attempt here allocates nothing)."""
    app = limited_app(tmp_path, HOG, memory=512, attempts=2)
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        assert r.run({"mb": 300}, timeout=120)["v"] == 300 * 1024 * 1024
    app = limited_app(tmp_path / "b", HOG, memory=128, attempts=2)
    with LocalRunner(app, state=tmp_path / "b" / "state", quiet=True) as r:
        item = r.run({"mb": 400, "marker": str(tmp_path / "oom-once")}, timeout=120)
        assert r.platform.stats["out_of_memory"] == 1
    assert item["status"] == "SUCCEEDED" and item["v"] == -1


def test_queue_is_empty_after_a_session_and_refuses_bad_session_ids(tmp_path):
    app = load_app(make_app(tmp_path / "app", "queue-app", {
        "A": ({"Start": True, "Next": {"Name": "B", "Type": "Map"}}, "def handler(e, c):\n    return [e] * 5\n"),
        "B": ({"Next": {"Name": "C", "Type": "Fan-in", "Values": ["B-UnumIndex-*"],
                        "Payload Modifiers": ["Pop"]}},
              "def handler(e, c):\n    return e * 2\n"),
        "C": ({}, "def handler(e, c):\n    return sum(e)\n")}))
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as r:
        assert r.run(3, "q-1", timeout=60)["v"] == 30
        r.platform.wait_idle()
        r.platform._flush_finished()
        with pytest.raises(PlatformError, match="not valid"):
            r.platform.invoke("A", {"Session": "../../x", "Data": {"Source": "http", "Value": 1}})
        with pytest.raises(UnumError, match="not valid"):  # parsed at the edge (runtime.payload.SessionId)
            r.start(1, "/tmp/x")
    assert queue_rows(tmp_path / "state") == 0


def test_a_new_platform_delivers_what_a_stopped_one_left_queued(tmp_path):
    """The first platform stops while Work hangs (its instance is killed, the invocation stays
    queued); the second one claims it at start and finishes the session."""
    app = limited_app(tmp_path, HANG, timeout=60, attempts=3)
    marker = tmp_path / "hung"
    state = tmp_path / "state"
    with LocalRunner(app, state=state, quiet=True) as r:
        r.start({"n": 1, "marker": str(marker)}, "stopped-1")
        for _ in range(600):
            if marker.exists() and marker.read_text():
                break
            time.sleep(0.05)
        assert marker.exists()
    assert queue_rows(state) == 1  # the Work invocation, released by the clean close
    with LocalRunner(app, state=state, quiet=True) as r:
        assert r.platform.stats["recovered"] == 1
        item = r.resume("stopped-1", timeout=60)
        r.platform.wait_idle()
    assert item["status"] == "SUCCEEDED" and item["v"] == 2
    assert queue_rows(state) == 0


def test_session_registry_is_idempotent_and_refuses_a_different_input(tmp_path):
    ds = SqliteDatastore(tmp_path / "unum.db")
    q = DurableQueue(ds)
    status, qid = q.start_session("s-1", "A", {"b": 1, "a": [1, 2]}, None, 10**12)
    assert status == "started" and qid is not None
    # same input (key order does not matter): resumed, nothing queued again while one is queued
    assert q.start_session("s-1", "A", {"a": [1, 2], "b": 1}, None, 10**12) == ("resumed", None)
    with pytest.raises(SessionExistsError, match="ExecutionAlreadyExists"):
        q.start_session("s-1", "A", {"a": [1, 2], "b": 2}, None, 10**12)
    q.delete([qid])
    again = q.resume_session("s-1", None)  # no message and no result: the entry is queued again
    assert again is not None and q.get(again).payload["Data"]["Value"] == {"a": [1, 2], "b": 1}
    q.delete([again])
    ds.put("s-1", "result", {"status": "SUCCEEDED", "v": 1}, 10**12)
    assert q.resume_session("s-1", None) is None  # finished: nothing to do
    with pytest.raises(KeyError):
        q.resume_session("never", None)
    assert canonical_input({"b": 1, "a": 2})[1] == canonical_input({"a": 2, "b": 1})[1]
    ds.close()


def test_claim_takes_only_rows_of_dead_or_no_owners(tmp_path):
    ds = SqliteDatastore(tmp_path / "unum.db")
    q = DurableQueue(ds)
    me, live = new_owner(), new_owner()
    assert owner_alive(live) and not owner_alive("999999999:1:x") and not owner_alive("junk")
    p = {"Session": "s", "Data": {"Source": "http", "Value": 1}}
    q.add([("A", p)], live)
    dead = q.add([("B", p)], "999999999:1:x")
    free = q.add([("C", p)], None)
    got = q.claim(me)
    assert sorted(m.id for m in got) == sorted(dead + free)
    assert q.release(me) == 2 and q.pending("s") == 3
    ds.close()


def test_queued_rows_survive_as_json(tmp_path):
    ds = SqliteDatastore(tmp_path / "unum.db")
    q = DurableQueue(ds)
    (i,) = q.add([("A", {"Session": "s", "Data": {"Source": "http", "Value": [1, "x"]}})], None, 7, delay=5)
    row = q.get(i)
    assert row.function == "A" and row.payload["Data"]["Value"] == [1, "x"] and row.attempts == 0
    q.failed_attempt(i)
    assert q.get(i).attempts == 1
    assert [m.id for m in q.children(None, 7)] == []  # owner NULL never matches
    assert json.loads(ds.db.execute("SELECT payload FROM local_queue").fetchone()[0])["Session"] == "s"
    ds.close()
