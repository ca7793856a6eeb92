"""Execution history on the local target (docs/observability.md): the engine's and the
platform's events through the `Events` port, session records, captured output, and the
commands `unumctl sessions`, `describe`, `history` and `logs`.

- a succeeding and a failing session are listed, described, and their events and output
  lines are there;
- under injected faults the history is complete: one execution event per delivery, and the
  redeliveries, crashes and duplicated deliveries the platform counted are all recorded;
- `runtime.history` session-only / off record less; an Events adapter that fails never
  fails an execution."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from runtime.engine import Engine, Options
from runtime.ir import load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.faults import FaultSpec
from runtime.ports import Events, Invoker
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app
from unumctl.observe import LocalHistoryReader

from unumctl_testing.apps import make_app
from tests.unumctl.test_cli import cli, one_error

START = """
def handler(event, context):
    print("start with", len(event), "items")
    return event
"""
WORK = """
import logging
def handler(event, context):
    print("work", event)
    logging.warning("warned about %s", event)
    if event == "boom":
        raise ValueError("cannot work on boom")
    return event.upper()
"""
JOIN = """
def handler(event, context):
    print("join", len(event))
    return "".join(event)
"""
EXECUTED = ("ran", "adopted", "dropped", "failed", "crashed", "suspended")


def hist_app(root, runtime=None):
    return make_app(root, "hist-app", {
        "Start": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}}, START),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, WORK),
        "Join": ({}, JOIN)}, runtime=runtime)


def _json(code_out_err):
    code, out, err = code_out_err
    assert code == 0, err
    return json.loads(out)


SLOW_WORK = """
import os, time
def handler(event, context):
    kind, marker = event.split(":", 1)
    if kind == "boom":  # fail the session only once the slow branch is running
        deadline = time.time() + 30
        while not os.path.exists(marker) and time.time() < deadline:
            time.sleep(0.01)
        raise ValueError("cannot work on boom")
    open(marker, "w").close()
    time.sleep(1.5)
    return kind.upper()
"""


def test_invoke_returns_after_the_sessions_last_executions(tmp_path):
    """A branch fails (the session is FAILED) while another still runs: `invoke` waits for
    the running one before closing the platform, so its execution is in the history (a
    platform closed at the result kills the busy worker and the event is lost)."""
    app = make_app(tmp_path / "app", "hist-slow", {
        "Start": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}}, START),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, SLOW_WORK),
        "Join": ({}, JOIN)})
    marker = tmp_path / "slow-started"
    (tmp_path / "in.json").write_text(json.dumps([f"boom:{marker}", f"slow:{marker}"]))
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--session", "s-1")
    assert code == 1 and any("cannot work on boom" in ln for ln in err), err
    assert marker.exists()
    events = _json(cli("history", str(app), "s-1", "--json"))
    slow = [e for e in events if e.get("instance") == "Work-UnumIndex-1"]
    assert len(slow) == 1 and slow[0]["t1"] - slow[0]["t0"] >= 1.4, events


def test_sessions_describe_history_logs(tmp_path):
    app = hist_app(tmp_path / "app")
    (tmp_path / "ok.json").write_text('["a", "b", "c"]')
    (tmp_path / "bad.json").write_text('["a", "boom"]')
    code, out, err = cli("invoke", str(app), "--data", str(tmp_path / "ok.json"), "--session", "ok-1")
    assert code == 0 and json.loads(out) == "ABC", err
    code, _, err = cli("invoke", str(app), "--data", str(tmp_path / "bad.json"), "--session", "bad-1")
    assert code == 1, err

    rows = _json(cli("sessions", str(app), "--json"))
    assert {r["session"]: r["status"] for r in rows} == {"ok-1": "SUCCEEDED", "bad-1": "FAILED"}
    assert rows[0]["session"] == "bad-1"  # newest first
    assert {r["session"]: r["invocations"] for r in rows}["ok-1"] == 5  # Start, 3 x Work, Join
    assert all(r["duration"] is not None and r["duration"] >= 0 for r in rows)
    assert [r["session"] for r in _json(cli("sessions", str(app), "--status", "FAILED", "--json"))] == ["bad-1"]
    assert len(_json(cli("sessions", str(app), "--limit", "1", "--json"))) == 1
    code, out, _ = cli("sessions", str(app))
    assert code == 0 and "ok-1" in out and "SUCCEEDED" in out and "bad-1" in out

    ok = _json(cli("describe", str(app), "ok-1", "--json"))
    assert ok["status"] == "SUCCEEDED" and ok["output"] == "ABC" and ok["input"] == ["a", "b", "c"]
    assert ok["function"] == "Start" and ok["end"] >= ok["start"]
    assert ok["counts"]["invocations"] == 5 and ok["counts"]["retries"] == 0
    bad = _json(cli("describe", str(app), "bad-1", "--json"))
    assert bad["status"] == "FAILED" and bad["error"] == "ValueError"
    assert bad["failed_in"] == "Work-UnumIndex-1" and "cannot work on boom" in bad["cause"]
    code, out, _ = cli("describe", str(app), "bad-1")
    assert code == 0 and "FAILED" in out and "ValueError" in out

    events = _json(cli("history", str(app), "ok-1", "--json"))
    ran = [e for e in events if e["kind"] == "ran"]
    assert sorted(e["instance"] for e in ran) == ["Join", "Start", "Work-UnumIndex-0",
                                                  "Work-UnumIndex-1", "Work-UnumIndex-2"]
    assert [e["t0"] for e in events] == sorted(e["t0"] for e in events)
    # the first invoke may stop while Join still runs (after the result): the next platform
    # redelivers it and the redelivery drops itself
    dropped = [e for e in events if e["kind"] == "dropped"]
    assert ok["counts"]["duplicates_dropped"] == len(dropped)
    assert all(e["detail"] == "session already finished" for e in dropped)
    for e in ran:
        assert e["attempt"] == 1 and e["request_id"] and e["t1"] >= e["t0"]
        for k in ("user_ms", "runtime_ms", "datastore_ms", "invoke_ms", "payload_bytes", "checkpoint_bytes"):
            assert e[k] >= 0, (k, e)
    assert next(e for e in ran if e["instance"] == "Work-UnumIndex-1")["output"] == "B"
    failed = [e for e in _json(cli("history", str(app), "bad-1", "--json")) if e["kind"] == "failed"]
    assert [e["instance"] for e in failed] == ["Work-UnumIndex-1"] and "ValueError" in failed[0]["detail"]
    code, out, _ = cli("history", str(app), "ok-1")
    assert code == 0 and "Work-UnumIndex-2" in out and "ran" in out

    code, out, _ = cli("logs", str(app), "--session", "ok-1", "--function", "Work")
    assert code == 0
    lines = out.splitlines()
    assert "[Work Work-UnumIndex-0] work a" in lines
    assert "[Work Work-UnumIndex-2] WARNING:root:warned about c" in lines
    assert all(ln.startswith("[Work Work-UnumIndex-") for ln in lines)
    code, out, _ = cli("logs", str(app), "--session", "ok-1", "--follow")  # ends: the session ended
    assert code == 0 and "[Join Join] join 3" in out.splitlines()
    recs = [json.loads(ln) for ln in cli("logs", str(app), "--json")[1].splitlines()]
    assert {r["session"] for r in recs} == {"ok-1", "bad-1"}

    for cmd in ("describe", "history"):
        code, out, err = cli(cmd, str(app), "never-was")
        assert code == 2 and out == "" and "no session never-was" in one_error(err)
    code, _, err = cli("logs", str(app), "--session", "never-was")
    assert code == 2 and "no session never-was" in one_error(err)
    code, _, err = cli("sessions", str(app), "--status", "DONE")
    assert code == 2 and "--status" in one_error(err)


@pytest.mark.parametrize("seed", [3, 11])
def test_history_complete_under_faults(tmp_path, seed):
    spec = FaultSpec.parse(f"seed={seed},crash=0.15,duplicate=0.3,delay=0.2")
    # the draws depend on the schedule (a crash changes the attempts that follow): run fresh
    # apps until one session got a duplicate, as tests/aws/test_history_aws.py does
    for k in range(5):
        app_dir = hist_app(tmp_path / f"app{k}")
        with LocalRunner(load_app(app_dir), faults=spec) as runner:
            item = runner.run(list("abcdefgh"), "faulty", timeout=120)
            runner.platform.wait_idle(60)  # every duplicate finished: its event is written
            stats = dict(runner.platform.stats)
        assert item["status"] == "SUCCEEDED" and item["v"] == "ABCDEFGH"
        if stats.get("duplicated", 0) > 0:
            break
    r = LocalHistoryReader(load_app(app_dir))
    events = r.history("faulty")
    kinds = Counter(e["kind"] for e in events)
    # one execution event per delivery (a delivery that wrote the result and then crashed
    # records both)
    deliveries = {(e["request_id"], e["attempt"]) for e in events if e["kind"] in EXECUTED}
    assert len(deliveries) == stats["deliveries"], (kinds, stats)
    assert kinds["retried"] == stats["redeliveries"] and kinds["crashed"] == stats["crashes"]
    assert kinds["duplicated"] == stats["duplicated"] > 0
    assert kinds["adopted"] + kinds["dropped"] >= 1  # the duplicates were recognised
    d = r.describe("faulty")
    assert d["status"] == "SUCCEEDED" and d["counts"]["invocations"] == 10
    assert d["counts"]["retries"] == stats["redeliveries"]
    assert d["counts"]["duplicates_dropped"] == kinds["dropped"]
    # each retried event names the attempt it starts and the error of the failed one
    for e in events:
        if e["kind"] == "retried":
            assert e["attempt"] >= 2 and "InjectedCrash" in e["detail"]
    r.close()


def test_history_levels(tmp_path):
    for level in ("session-only", "off"):
        app_dir = hist_app(tmp_path / level, runtime={"history": level})
        with LocalRunner(load_app(app_dir)) as runner:
            assert runner.run(["x"], "s-" + level, timeout=60)["status"] == "SUCCEEDED"
            runner.platform.wait_idle(30)
        r = LocalHistoryReader(load_app(app_dir))
        assert r.history("s-" + level) == []
        rows = r.sessions()
        assert [(x["session"], x["status"]) for x in rows] == [("s-" + level, "SUCCEEDED")]
        d = r.describe("s-" + level)
        assert d["status"] == "SUCCEEDED" and d["output"] == "X" and d["history"] == level
        lines = [x["line"] for x in r.logs("s-" + level)[0]]
        assert lines == ([] if level == "off" else ["start with 1 items", "work x",
                                                    "WARNING:root:warned about x", "join 1"])
        r.close()


class Broken(Events):
    def record(self, events):
        raise OSError("history store down")

    def session_started(self, session, function, start, input):
        raise OSError("history store down")

    def session_ended(self, session, status, end, result):
        raise OSError("history store down")


class Recorder(Invoker):
    def __init__(self):
        self.calls = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


def test_failing_events_never_fail_an_execution(tmp_path):
    ir = load_function({"Name": "A", "Start": True, "Next": {"Name": "B"}})
    logged = []
    inv = Recorder()
    eng = Engine(ir, lambda e, c: e + 1, SqliteDatastore(tmp_path / "db"), inv, FileBlobStore(tmp_path / "b"),
                 Options(), events=Broken(), log=logged.append)
    out = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": 1}}, {"attempt": 1})
    assert out.status == "ran" and len(inv.calls) == 1
    again = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": 1}}, {"attempt": 1})
    assert again.status == "adopted"  # the checkpoint protocol is unchanged
    assert any("history store down" in m for m in logged)


def test_events_from_engine(tmp_path):
    """IR Retry attempts are recorded with their error; a duplicate is recorded as adopted or
    dropped; the session's end is recorded once with the first outcome."""
    from runtime.local.history import SqliteHistory
    ds = SqliteDatastore(tmp_path / "db")
    ev = SqliteHistory(ds)
    tries = []

    def flaky(e, c):
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError("try again")
        return e * 2

    ir = load_function({"Name": "F", "Start": True,
                        "Retry": {"MaxAttempts": 3, "IntervalSeconds": 0, "ErrorEquals": ["ConnectionError"]}})
    eng = Engine(ir, flaky, ds, Recorder(), FileBlobStore(tmp_path / "b"), Options(), events=ev)
    payload = {"Session": "s1", "Data": {"Source": "http", "Value": 21}}
    assert eng.handle(payload, {"attempt": 1, "request_id": "r1"}).status == "ran"
    assert eng.handle(payload, {"attempt": 1, "request_id": "r2"}).status == "dropped"
    events = ev.events("s1")
    # ordered by start time: the execution, then the retries inside it, then the duplicate
    assert [e["kind"] for e in events] == ["ran", "retried", "retried", "dropped"]
    assert events[1]["error"] == "ConnectionError" and "IR Retry 1/3" in events[1]["detail"]
    assert events[0]["output"] == 42 and events[0]["user_ms"] >= 0
    row = ev.session_row("s1")
    assert row["status"] == "SUCCEEDED" and row["input"] == 21 and row["result"]["v"] == 42


def test_trace_html(tmp_path):
    """`unumctl trace` writes one self-contained page (no external URL) whose script renders one
    timeline bar per event and one box per function (run in Node with a DOM stub: no browser
    needed; tests/unumctl/observe/test_trace.py opens the page in headless chromium)."""
    import re
    import shutil
    import subprocess

    app = hist_app(tmp_path / "app")
    (tmp_path / "in.json").write_text('["a", "b"]')
    assert cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--session", "t-1")[0] == 0
    out = tmp_path / "t.html"
    code, _, err = cli("trace", str(app), "t-1", "-o", str(out))
    assert code == 0, err
    page = out.read_text()
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "") and "https://" not in page
    data = json.loads(re.search(r'<script type="application/json" id="data">(.*?)</script>', page, re.S)[1])
    assert {n["name"]: n["outcome"] for n in data["nodes"]} == {"Start": "ran", "Work": "ran", "Join": "ran"}
    assert cli("trace", str(app), "nope", "-o", str(out))[0] == 2
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed: the page's script was not run")
    res = subprocess.run([node, str(Path(__file__).resolve().parents[2] / "trace_dom_stub.js"), str(out)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    drawn = json.loads(res.stdout)
    assert drawn["bars"] == len([e for e in data["events"] if e.get("t0") is not None])
    assert drawn["nodes"] == 3


def test_timeouts_and_give_up_are_recorded(tmp_path):
    """A function that overruns its timeout: each attempt is a `timed_out` event, the
    redelivery a `retried` one, the last a `gave_up`, and the session record is FAILED with
    Unum.Timeout (written by the platform, not the engine)."""
    import yaml
    app_dir = make_app(tmp_path / "app", "slow-hist", {
        "Slow": ({"Start": True}, "import time\ndef handler(e, c):\n    print('sleeping')\n"
                                  "    time.sleep(30)\n")}, runtime={"max_delivery_attempts": 2})
    doc = yaml.safe_load((app_dir / "unumctl.yaml").read_text())
    doc["functions"]["Slow"]["timeout"] = 1
    (app_dir / "unumctl.yaml").write_text(yaml.safe_dump(doc))
    with LocalRunner(load_app(app_dir), quiet=True) as runner:
        item = runner.run(1, "slow-1", timeout=60)
    assert item["status"] == "FAILED" and item["error"] == "Unum.Timeout"
    r = LocalHistoryReader(load_app(app_dir))
    kinds = [(e["kind"], e.get("attempt")) for e in r.history("slow-1")]
    assert kinds == [("timed_out", 1), ("retried", 2), ("timed_out", 2), ("gave_up", 2)], kinds
    d = r.describe("slow-1")
    assert d["status"] == "FAILED" and d["error"] == "Unum.Timeout" and d["counts"]["timeouts"] == 2
    assert r.store.session_row("slow-1")["status"] == "FAILED"
    r.close()
