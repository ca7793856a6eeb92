"""Execution history on gcp, against the Firestore and Pub/Sub emulators with the functions
run by functions-framework (unumctl/gcp/platform.py): the runtime's GCP Events adapter
(runtime/gcp/history.py), the functions' labelled output (runtime/gcp/output.py) and the
CLI's `sessions`, `describe`, `history` and `logs --cloud gcp` (unumctl/observe/gcp.py).

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

from unumctl.manifest import load_app

from ..test_cli import cli, one_error
from ..test_history import hist_app

pytestmark = pytest.mark.timeout(420)
EXECUTED = ("ran", "adopted", "dropped", "failed", "crashed", "suspended")


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
    from unumctl.gcp.platform import EmulatorPlatform

    app_dir = hist_app(tmp_path / "app", runtime={"max_delivery_attempts": 4})
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
