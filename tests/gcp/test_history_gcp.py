"""Execution history on gcp, against the Firestore and Pub/Sub emulators with the functions
run by functions-framework (unumctl/gcp/emulate/platform.py): the runtime's GCP Events adapter
(runtime/gcp/history.py), the functions' labelled output (runtime/gcp/output.py) and the
CLI's `sessions`, `describe`, `history` and `logs --cloud gcp` (unumctl/gcp/history.py).

- a succeeding and a failing session are listed, described, and their events and output
  lines are there;
- under injected faults the history records one `crashed` and one `retried` event per
  injected crash and one `duplicated` event per injected duplicate publish, as counted from
  the fault injector's own record (its `unum_fault` lines in the functions' logs);
- an unknown session id is one line, exit 2."""

from __future__ import annotations

import json
import time
from collections import Counter

import pytest

from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app
from tests.unumctl.test_cli import cli_process as cli, one_error  # the cloud tests run the CLI as a child process
from tests.unumctl.observe.test_history import JOIN, START, WORK

pytestmark = pytest.mark.timeout(420)
EXECUTED = ("ran", "adopted", "dropped", "failed", "crashed", "suspended")


def hist_app(root, name, runtime=None):
    """tests/unumctl/observe/test_history.py's app (Start -> Map of Work -> Join) under its own name: one
    Firestore collection per app, and the emulators are shared by the whole test session."""
    return make_app(root, name, {
        "Start": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}}, START),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, WORK),
        "Join": ({}, JOIN)}, runtime=runtime)


def _json(res):
    code, out, err = res
    assert code == 0, err
    return json.loads(out)


def _settle(app_dir, sid, quiet=3.0, timeout=60.0):
    """Wait until the session's history stops growing (duplicates and late records are
    written after the result); returns its events."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    while time.monotonic() < deadline:
        events = _json(cli("history", str(app_dir), sid, "--cloud", "gcp", "--json"))
        if events != last:
            last, since = events, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return events
        time.sleep(0.5)
    return last


def _fault_records(plat, sid):
    """The fault injector's own record: its {"unum_fault": ...} lines for session `sid`."""
    out = []
    for p in plat.servers.values():
        for line in p.log.read_text().splitlines():
            if line.startswith('{"unum_fault"'):
                rec = json.loads(line)["unum_fault"]
                if rec["session"] == sid:
                    out.append(rec)
    return out


def test_history_on_gcp(emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app_dir = hist_app(tmp_path / "app", "gcp-hist", runtime={"max_delivery_attempts": 4})
    app = load_app(app_dir)
    with EmulatorPlatform(app, emulators, tmp_path / "plat") as plat:
        plat.start_session(["a", "b", "c"], session="ok-1")
        assert plat.wait_result("ok-1", 120)["v"] == "ABC"
        plat.start_session(["a", "boom"], session="bad-1")
        assert plat.wait_result("bad-1", 120)["status"] == "FAILED"
        ok_events = _settle(app_dir, "ok-1")
        _settle(app_dir, "bad-1")

        rows = _json(cli("sessions", str(app_dir), "--cloud", "gcp", "--json"))
        assert {r["session"]: r["status"] for r in rows} == {"ok-1": "SUCCEEDED", "bad-1": "FAILED"}
        assert rows[0]["session"] == "bad-1"  # newest first
        assert {r["session"]: r["invocations"] for r in rows}["ok-1"] == 5
        assert all(r["duration"] is not None and r["duration"] >= 0 for r in rows)
        failed = _json(cli("sessions", str(app_dir), "--cloud", "gcp", "--status", "FAILED", "--json"))
        assert [r["session"] for r in failed] == ["bad-1"]
        assert len(_json(cli("sessions", str(app_dir), "--cloud", "gcp", "--limit", "1", "--json"))) == 1

        ok = _json(cli("describe", str(app_dir), "ok-1", "--cloud", "gcp", "--json"))
        assert ok["status"] == "SUCCEEDED" and ok["output"] == "ABC" and ok["input"] == ["a", "b", "c"]
        assert ok["function"] == "Start" and ok["end"] >= ok["start"] and ok["history"] == "full"
        assert ok["counts"]["invocations"] == 5 and ok["counts"]["retries"] == 0
        bad = _json(cli("describe", str(app_dir), "bad-1", "--cloud", "gcp", "--json"))
        assert bad["status"] == "FAILED" and bad["error"] == "ValueError"
        assert bad["failed_in"] == "Work-UnumIndex-1" and "cannot work on boom" in bad["cause"]

        ran = [e for e in ok_events if e["kind"] == "ran"]
        assert sorted(e["instance"] for e in ran) == ["Join", "Start", "Work-UnumIndex-0",
                                                      "Work-UnumIndex-1", "Work-UnumIndex-2"]
        assert [e["t0"] for e in ok_events] == sorted(e["t0"] for e in ok_events)
        for e in ran:  # request_id: the Pub/Sub message id of the delivery
            assert e["request_id"] and e["t1"] >= e["t0"] and e["function"] == e["instance"].split("-")[0]
            for k in ("user_ms", "runtime_ms", "datastore_ms", "invoke_ms", "payload_bytes"):
                assert e[k] >= 0, (k, e)
        assert next(e for e in ran if e["instance"] == "Work-UnumIndex-1")["output"] == "B"
        bad_events = _json(cli("history", str(app_dir), "bad-1", "--cloud", "gcp", "--json"))
        assert [e["instance"] for e in bad_events if e["kind"] == "failed"] == ["Work-UnumIndex-1"]

        code, out, err = cli("logs", str(app_dir), "--cloud", "gcp", "--session", "ok-1", "--function", "Work")
        assert code == 0, err
        lines = out.splitlines()
        assert "[Work Work-UnumIndex-0] work a" in lines
        assert "[Work Work-UnumIndex-2] WARNING:root:warned about c" in lines
        assert all(ln.startswith("[Work Work-UnumIndex-") for ln in lines), lines
        code, out, err = cli("logs", str(app_dir), "--cloud", "gcp", "--session", "ok-1", "--follow")
        assert code == 0 and "[Join Join] join 3" in out.splitlines(), err
        recs = [json.loads(ln) for ln in cli("logs", str(app_dir), "--cloud", "gcp", "--json")[1].splitlines()]
        assert {r["session"] for r in recs} == {"ok-1", "bad-1"}
        assert any(r["line"] == "work boom" and r["instance"] == "Work-UnumIndex-1" for r in recs)

    # injected faults: crashes at the engine's crash points and duplicated publishes
    with EmulatorPlatform(app, emulators, tmp_path / "faulty",
                          env={"UNUM_FAULTS": "seed=5,crash=0.15,duplicate=0.3"}) as plat:
        plat.start_session(list("abcdefgh"), session="faulty-1")
        item = plat.wait_result("faulty-1", 180)
        assert item["status"] == "SUCCEEDED" and item["v"] == "ABCDEFGH"
        events = _settle(app_dir, "faulty-1", quiet=5.0)
        faults = Counter(r["kind"] for r in _fault_records(plat, "faulty-1"))
    kinds = Counter(e["kind"] for e in events)
    assert faults["crash"] + faults["duplicate"] > 0, "the seed injected nothing"
    assert kinds["crashed"] == faults["crash"], (kinds, faults)
    assert kinds["retried"] == faults["crash"], (kinds, faults)  # each crash is redelivered
    assert kinds["duplicated"] == faults["duplicate"], (kinds, faults)
    if faults["duplicate"]:
        assert kinds["adopted"] + kinds["dropped"] >= 1  # the duplicates were recognised
    for e in events:
        if e["kind"] == "retried":
            assert e["attempt"] >= 2 and "InjectedCrash" in e["detail"]
        if e["kind"] == "crashed":
            assert e["error"] == "InjectedCrash" and e["attempt"] >= 1
    d = _json(cli("describe", str(app_dir), "faulty-1", "--cloud", "gcp", "--json"))
    assert d["status"] == "SUCCEEDED" and d["counts"]["invocations"] == 10
    assert d["counts"]["retries"] == faults["crash"] and d["counts"]["crashes"] == faults["crash"]
    assert d["counts"]["duplicated_deliveries"] == faults["duplicate"]
    assert d["counts"]["duplicates_dropped"] == kinds["dropped"]

    for cmd in ("describe", "history"):
        code, out, err = cli(cmd, str(app_dir), "never-was", "--cloud", "gcp")
        assert code == 2 and out == "" and "no session never-was" in one_error(err)
    code, _, err = cli("logs", str(app_dir), "--cloud", "gcp", "--session", "never-was")
    assert code == 2 and "no session never-was" in one_error(err)


@pytest.mark.parametrize("level", ["session-only", "off"])
def test_history_levels_on_gcp(emulators, tmp_path, level):
    """session-only: session records and labelled output, no events; off: nothing recorded,
    `describe` still answers from the result item, and the output is not labelled."""
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app_dir = hist_app(tmp_path / "app", f"gcp-hist-{level}", runtime={"history": level})
    sid = f"lvl-{level}"
    with EmulatorPlatform(load_app(app_dir), emulators, tmp_path / "plat") as plat:
        plat.start_session(["x"], session=sid)
        assert plat.wait_result(sid, 120)["v"] == "X"
        time.sleep(1.0)
    d = _json(cli("describe", str(app_dir), sid, "--cloud", "gcp", "--json"))
    assert d["status"] == "SUCCEEDED" and d["output"] == "X" and d["history"] == level
    assert _json(cli("history", str(app_dir), sid, "--cloud", "gcp", "--json")) == []
    rows = _json(cli("sessions", str(app_dir), "--cloud", "gcp", "--json"))
    lines = [json.loads(ln)["line"] for ln in
             cli("logs", str(app_dir), "--cloud", "gcp", "--session", sid, "--json")[1].splitlines()]
    if level == "session-only":
        assert [(r["session"], r["status"]) for r in rows] == [(sid, "SUCCEEDED")]
        assert d["input"] == ["x"] and d["end"] >= d["start"]
        assert lines == ["start with 1 items", "work x", "WARNING:root:warned about x", "join 1"]
    else:  # no session records: the session is known from its result item only
        assert rows == [] and lines == []


def test_labelled_output_and_log_source(tmp_path, monkeypatch):
    """runtime/gcp/output.py writes one structured line per output line, labelled, merging
    into a line that is already JSON; unumctl/gcp/logs.py reads them back as the logging
    agent would, skipping the runtime's own records, with a cursor that never splits a line."""
    import io
    import sys

    from runtime.gcp.output import LABELS_FIELD, execution_output
    from unumctl.gcp.logs import EmulatorLogSource, to_entry

    buf = io.StringIO()
    monkeypatch.setattr(sys, "stdout", buf)
    labels = {"unum_session": "s1", "unum_function": "F", "unum_instance": None}
    print("before")  # outside an execution: unchanged
    with execution_output(lambda: labels, clock=lambda: 1_700_000_000.5):
        print("hello", "world")
        labels["unum_instance"] = "F-UnumIndex-2"  # known later: evaluated per line
        print('{"message": "structured", "k": 1}')
        sys.stdout.write("no newline")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "before" and len(lines) == 4
    first, second, last = (json.loads(x) for x in lines[1:])
    assert first["message"] == "hello world" and first["severity"] == "INFO"
    assert first[LABELS_FIELD] == {"unum_session": "s1", "unum_function": "F"}
    assert second["k"] == 1 and second[LABELS_FIELD]["unum_instance"] == "F-UnumIndex-2"
    assert last["message"] == "no newline" and last["time"].startswith("2023-11-14T22:13:20.5")
    entry = to_entry(lines[1], "F")
    assert entry["severity"] == "INFO" and entry["timestamp"] == 1_700_000_000.5
    assert entry["jsonPayload"] == {"message": "hello world"}
    assert to_entry("plain text", "F")["textPayload"] == "plain text"

    logs = tmp_path / "logs"
    logs.mkdir()
    record = json.dumps({"unum_event": {"kind": "ran"}, LABELS_FIELD: {"unum_session": "s1"}})
    (logs / "app-F.log").write_text("\n".join([lines[0], lines[1], record, lines[2]]) + "\n"
                                    + lines[3][:10])  # the last line is still being written
    src = EmulatorLogSource(logs, "app")
    rows, cursor = src.read("s1")
    assert [r["line"] for r in rows] == ["hello world", '{"message":"structured","k":1}']
    assert [r["instance"] for r in rows] == [None, "F-UnumIndex-2"]
    with open(logs / "app-F.log", "a") as fh:
        fh.write(lines[3][10:] + "\n")
    more, cursor2 = src.read("s1", cursor=cursor)
    assert [r["line"] for r in more] == ["no newline"] and cursor2 != cursor
    assert src.read("other")[0] == [] and src.read("s1", function="G")[0] == []


def test_history_writes_per_session_on_firestore(emulators):
    """Level full: the start record shares the first execution's document (one write per
    execution + one per session); a redelivered first execution keeps its events in their
    own document; refused creates are not counted; every event reads back once."""
    from google.cloud import firestore

    from runtime.gcp.history import FirestoreHistory, history_collection, read_session

    client = firestore.Client(project=emulators.project)
    h = FirestoreHistory(client, "unum-hist-writes", "full", stream=open("/dev/null", "w"))

    def ev(inst, kind="ran", t0=1.0):
        return {"session": "w-1", "instance": inst, "function": inst, "kind": kind,
                "request_id": f"m-{inst}", "attempt": 1, "t0": t0}

    h.session_started("w-1", "A", 1.0, {"x": 1})  # as runtime/engine.py `_emit_parts` reports
    h.record([ev("A")])
    assert h.usage["writes"] == 1
    h.record([ev("B", t0=2.0)])
    h.record([ev("C", t0=3.0)])  # the last execution, early (before the final sweep)
    h.session_ended("w-1", "SUCCEEDED", 4.0, {"status": "SUCCEEDED", "v": 7})
    h.record([ev("C", t0=3.0)])  # the same execution on return: skipped
    assert h.usage["writes"] == 4  # 3 executions + 1 per session
    again = FirestoreHistory(client, "unum-hist-writes", "full", stream=open("/dev/null", "w"))
    again.session_started("w-1", "A", 1.5, {"x": 1})  # a redelivery of the first execution
    again.record([ev("A", "dropped", t0=5.0)])
    assert again.usage["writes"] == 1  # its events on their own; the refused start not billed
    info = read_session(client.collection(history_collection("unum-hist-writes")), "w-1")
    assert info["start"]["function"] == "A" and info["start"]["input"] == {"x": 1}
    assert info["start"]["started_at"] == 1.0 and "events" not in info["start"]
    assert info["end"]["status"] == "SUCCEEDED" and info["end"]["result"]["v"] == 7
    assert [(e["instance"], e["kind"]) for e in info["events"]] == [
        ("A", "ran"), ("B", "ran"), ("C", "ran"), ("A", "dropped")]
    only = FirestoreHistory(client, "unum-hist-writes", "session-only", stream=open("/dev/null", "w"))
    only.session_started("w-2", "A", 1.0, None)
    only.record([ev("A")])
    assert only.usage["writes"] == 1  # session-only: the start on its own, no events
