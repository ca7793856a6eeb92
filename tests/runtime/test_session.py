"""The session contract (runtime/session.py, issue 11 item 2): one builder of the entry
payload, one writer of a FAILED result, one expiry rule, one builder of the platform's
history events. The behavioural tests run the real engine on the local ports; the source
scans fail when a module builds an entry payload or a FAILED result by hand again."""

from __future__ import annotations

import ast
import json
import subprocess
from pathlib import Path

import pytest

from runtime.engine import Engine, Options
from runtime.errors import UnumError
from runtime.ir import build_workflow, load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.local.history import SqliteHistory
from runtime.payload import Frame, Payload
from runtime.platform_events import platform_event, record_platform_event
from runtime.ports import Invoker
from runtime.session import (ENTRY_INPUT_BLOB, SESSION_CONTEXT, Retention, entry_payload, give_up, read_result,
                             session_status)

ROOT = Path(__file__).resolve().parents[2]


def _source_files() -> list[str]:
    """The checkout's Python sources, as paths relative to ROOT: what git tracks or would
    track (`git ls-files --cached --others --exclude-standard`), so that what .gitignore
    names (`pip wheel`'s build/lib copy of the runtime, dist/, an app's .unum/ bundles) is
    not scanned; without git, every *.py outside dot-folders, venvs, build/ and dist/."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard", "--", "*.py"], capture_output=True, check=True).stdout
        return sorted(p for p in out.decode().split("\0") if p and (ROOT / p).is_file())
    except (OSError, subprocess.CalledProcessError):
        return sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.py")
                      if not any(part.startswith(".") or "venv" in part or part in ("build", "dist")
                                 for part in p.relative_to(ROOT).parts[:-1]))


FILES = _source_files()
# every top-level source folder but the tests and their harness (which build malformed
# payloads and results on purpose: the datastore conformance suite, unumctl_testing/conformance)
SOURCES = sorted({f.split("/")[0] for f in FILES if "/" in f} - {"tests", "unumctl_testing"})
CONTRACT = {"runtime/session.py", "runtime/payload.py"}
# dict literals {"status": "FAILED", ...} that are not a session's result item
NOT_A_RESULT = {
    # the inline ASL interpreter's report of one corpus case, compared with Step Functions'
    # expected status; it never reaches a datastore
    "tools/asl_conformance.py",
    # serve's TestState response (one state run on an input, API_TestState's `status`); no
    # session, nothing written
    "unumctl/serve/teststate.py",
}


class Collect(Invoker):
    max_payload_bytes = 1000

    def __init__(self):
        self.calls = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


def _engine(tmp_path, handler, options=None, events=None):
    wf = build_workflow([(load_function({"Name": "A", "Start": True}), "test")])
    ds, blobs = SqliteDatastore(tmp_path / "db"), FileBlobStore(tmp_path / "blobs")
    return Engine(wf.functions["A"], handler, ds, Collect(), blobs, options or Options(), events=events), ds, blobs


# ---------------------------------------------------------------- the entry payload
def test_entry_payload_decodes_to_the_session_and_input():
    raw = json.loads(json.dumps(entry_payload("s-1", {"k": [1, "x"]}, context={"AslExec": {"Start": 5}})))
    p = Payload.decode(raw, new_session=lambda: pytest.fail("the entry payload names its session"))
    assert (p.session, p.source, p.value, p.frames, p.iteration) == ("s-1", "http", {"k": [1, "x"]}, (), 0)
    assert p.extra == {"AslExec": {"Start": 5}}


def test_entry_payload_refuses_an_unsafe_session_id():
    with pytest.raises(UnumError, match="is not valid"):
        entry_payload("../../etc", 1)


@pytest.mark.parametrize("size", [10, 5000])
def test_the_engine_runs_an_entry_payload_inline_and_by_reference(tmp_path, size):
    """Every target's entry (aws handler, gcp push, local worker) hands the payload to
    Engine.handle; a large input travels as blob `payload/input` and arrives unchanged."""
    seen = []
    eng, ds, blobs = _engine(tmp_path, lambda e, c: seen.append(e) or {"n": len(e)})
    value = "x" * size
    payload = entry_payload("s1", value, blobs, Collect.max_payload_bytes)
    assert payload["Data"]["Source"] == ("blob" if size > Collect.max_payload_bytes else "http")
    if size > Collect.max_payload_bytes:
        assert payload["Data"]["Value"] == blobs.put("s1", ENTRY_INPUT_BLOB, json.dumps(value).encode())
    assert eng.handle(json.loads(json.dumps(payload))).status == "ran"
    assert seen == [value]
    assert read_result(ds, blobs, "s1") == {"status": "SUCCEEDED", "instance": "A", "v": {"n": size}}


# ---------------------------------------------------------------- recording a failure
def test_give_up_records_failed_once_and_ends_the_session(tmp_path):
    ds, blobs = SqliteDatastore(tmp_path / "db"), FileBlobStore(tmp_path / "blobs")
    ds.put("s1", "ckpt/A", {"v": 1}, 10**12)
    ref = blobs.put("s1", "payload/x", b"1")
    first = give_up(ds, blobs, "s1", "A", "Unum.RetriesExhausted", "A failed 3 delivery attempts",
                    Retention(), 1000.0)
    again = give_up(ds, blobs, "s1", "B", "Other", "later", Retention(), 2000.0)
    assert first == again == {"status": "FAILED", "instance": "A", "error": "Unum.RetriesExhausted",
                              "cause": "A failed 3 delivery attempts"}
    assert ds.get("s1", "ckpt/A") is None
    with pytest.raises(KeyError):
        blobs.get("s1", ref)


# ---------------------------------------------------------------- reading a result
def test_session_status():
    assert session_status(None) == "RUNNING"
    assert session_status({"status": "SUCCEEDED", "v": 1}) == "SUCCEEDED"
    assert session_status({"status": "FAILED", "error": "Unum.RetriesExhausted"}) == "FAILED"
    assert session_status({"status": "FAILED", "error": "Unum.SessionTimeout"}) == "TIMED_OUT"


def test_a_session_past_its_timeout_is_recorded_timed_out(tmp_path):
    """The engine fails a session past runtime.session_timeout_seconds; the history and
    every reader call it TIMED_OUT (session_status), not FAILED."""
    ds = SqliteDatastore(tmp_path / "events")
    history = SqliteHistory(ds)
    eng, store, blobs = _engine(tmp_path, lambda e, c: e, Options(session_timeout_seconds=60), history)
    eng.handle(entry_payload("s1", 1, context={SESSION_CONTEXT: {"Start": 1000.0}}))
    result = read_result(store, blobs, "s1")
    assert result["status"] == "FAILED" and result["error"] == "Unum.SessionTimeout", result
    row = ds.db.execute("SELECT status FROM history_sessions WHERE session='s1'").fetchone()
    assert tuple(row) == ("TIMED_OUT",)


# ---------------------------------------------------------------- expiry
def test_expiry_rule():
    r = Retention(session_timeout=100, result=10, margin=5)
    assert r.item_expiry(1000) == 1105
    assert r.result_expiry(1000) == 1000 + 7 * 86400 + 5  # outlives the longest redelivery


# ---------------------------------------------------------------- platform events
def test_platform_event_names_the_instance_from_the_payload():
    raw = Payload("s1", value=1, frames=(Frame(2, 3),), iteration=1).encode()
    ev = platform_event("retried", "F", raw, 2, "x" * 3000, "Boom", "req-1", t=7.0)
    assert ev == {"session": "s1", "kind": "retried", "instance": "F-UnumIndex-2@0-UnumIter-1",
                  "function": "F", "attempt": 2, "t0": 7.0, "t1": 7.0, "detail": "x" * 2000,
                  "error": "Boom", "request_id": "req-1"}
    assert platform_event("gave_up", "F", {"Session": "s1", "Data": 1}, None, "")["instance"] == "F"
    assert platform_event("gave_up", "F", {"Data": {}}, None, "") is None
    assert platform_event("gave_up", "F", "not a payload", None, "") is None


def test_record_platform_event_keeps_to_level_full(tmp_path):
    ds = SqliteDatastore(tmp_path / "db")
    for level, session in (("full", "s-full"), ("session-only", "s-only")):
        record_platform_event(SqliteHistory(ds, level), "duplicated", "A", entry_payload(session, 1), None, "d")
    record_platform_event(None, "duplicated", "A", entry_payload("s-none", 1), None, "d")  # no history: no-op
    rows = ds.db.execute("SELECT session, kind, instance FROM history_events").fetchall()
    assert [tuple(r) for r in rows] == [("s-full", "duplicated", "A")]


# ---------------------------------------------------------------- source scans
def _modules():
    assert {"runtime", "unumctl", "tools", "bench"} <= set(SOURCES)
    for rel in FILES:
        if rel.split("/")[0] in SOURCES:
            yield rel, ast.parse((ROOT / rel).read_text(), filename=rel)


def _const_keys(node: ast.Dict) -> dict[str, ast.AST]:
    return {k.value: v for k, v in zip(node.keys, node.values)
            if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def _hand_payloads(tree: ast.AST) -> list[int]:
    """Lines of dict literals {"Data": {"Source": ...}}: an invocation payload built by hand."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            data = _const_keys(node).get("Data")
            if isinstance(data, ast.Dict) and "Source" in _const_keys(data):
                out.append(node.lineno)
    return out


def _failed_results(tree: ast.AST) -> list[int]:
    """Lines of dict literals {"status": "FAILED", ...}."""
    return [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Dict)
            and getattr(_const_keys(node).get("status"), "value", None) == "FAILED"]


def _result_writes(tree: ast.AST) -> list[int]:
    """Lines of `<x>.create_if_absent(session, RESULT_KEY|"result", ...)` or `.put(...)`."""
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("create_if_absent", "put") and len(node.args) >= 2):
            key = node.args[1]
            if (isinstance(key, ast.Name) and key.id == "RESULT_KEY") or \
                    (isinstance(key, ast.Constant) and key.value == "result"):
                out.append(node.lineno)
    return out


def test_no_entry_payload_is_built_outside_the_session_contract():
    """Every starter of a session (each target's invoke, the local queue's resume, the
    conformance runner, the explorer, the benchmarks) uses runtime.session.entry_payload;
    the engine builds its invocations with runtime.payload.Payload."""
    found = [f"{rel}:{line}" for rel, tree in _modules() if rel not in CONTRACT for line in _hand_payloads(tree)]
    assert found == [], f"invocation payloads built by hand (use runtime.session.entry_payload): {found}"


def test_no_failed_result_is_written_outside_the_session_contract():
    """A FAILED result is made only by runtime.session.failure_item (through finish or
    give_up), and only runtime/session.py writes the `result` item."""
    failed = [f"{rel}:{line}" for rel, tree in _modules()
              if rel not in CONTRACT | NOT_A_RESULT for line in _failed_results(tree)]
    writes = [f"{rel}:{line}" for rel, tree in _modules() if rel not in CONTRACT for line in _result_writes(tree)]
    assert failed == [], f"FAILED results built outside runtime/session.py: {failed}"
    assert writes == [], f"result items written outside runtime/session.py: {writes}"


def test_the_scans_find_what_they_look_for():
    """The scans are not vacuous: they find the hand-built forms this change removed, and
    the contract module itself holds the FAILED item and the result write."""
    removed = ast.parse(
        'payload = {"Session": s, "Data": {"Source": "http", "Value": v}}\n'
        'item = {"status": "FAILED", "error": "Unum.RetriesExhausted", "cause": c, "instance": f}\n'
        'self.mem.create_if_absent(SESSION, RESULT_KEY, item, now + RESULT_RETENTION)\n')
    assert (_hand_payloads(removed), _failed_results(removed), _result_writes(removed)) == ([1], [2], [3])
    contract = ast.parse((ROOT / "runtime/session.py").read_text())
    assert _failed_results(contract) and _result_writes(contract)


@pytest.mark.parametrize("bad", ["run-1\n", "run-1\r\n", "../x", "", "a" * 81])
def test_session_ids_match_the_whole_string(bad):
    """`$` in SESSION_ID_RE also matches before a trailing newline: the check must match
    the whole id, or 'run-1\\n' reaches file names, keys and URLs."""
    with pytest.raises(UnumError, match="is not valid"):
        entry_payload(bad, 1)
