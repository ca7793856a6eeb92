"""Writes that an execution makes after the session's final sweep are deleted again
(issue 22, defect 3 family; runtime.session.undo_late_writes, docs/protocol.md "One
execution", 5), also when the execution then suspends or is dropped instead of committing.

Each test runs the real Engine on the local target's datastore (SQLite) and blob store
(files). The datastore ends the session (another branch creates `result` and sweeps,
runtime/session.py `end`) just before the write named by the test, as a scheduler could
order it on any target. Afterwards nothing of the session may be left but `result`: before
the fix, the waiting Task's `asl/cbs/<instance>/0` (runtime/asl/attempts.py) and a dropped
execution's blobs marker stayed until their expiry (the explorer found the first:
tests/tools/test_explorer.py::test_defect_3_family_fixed). A Task attempt also reads `result`
before its Lambda call and drops when the session has ended (runtime/asl/attempts.py)."""

from __future__ import annotations

import time

import pytest

from runtime.engine import Engine, Options
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.session import BLOBS_MARKER, end, entry_payload, finish, success_item
from runtime.wrappers import make_wrapper

SESSION = "s1"
ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


class EndsBeforeWrite(SqliteDatastore):
    """The local datastore; just before the first write (create, put) of an item whose name
    starts with `prefix`, the session ends: `result` is created and the session swept (with
    `all_blobs`, blobs too, as when the session's blobs marker exists)."""

    def __init__(self, path, blobs, prefix: str, all_blobs: bool = False):
        super().__init__(path)
        self.blobs, self.prefix, self.ended, self.all_blobs = blobs, prefix, False, all_blobs

    def _end_first(self, name: str) -> None:
        if not self.ended and name.startswith(self.prefix):
            self.ended = True
            result = finish(self, SESSION, success_item("Other", {"v": 1}), time.time() + 600)
            end(self, self.blobs, SESSION, result, all_blobs=self.all_blobs)

    def put(self, session, name, item, expires_at):
        self._end_first(name)
        return super().put(session, name, item, expires_at)

    def create_if_absent(self, session, name, item, expires_at):
        self._end_first(name)
        return super().create_if_absent(session, name, item, expires_at)


class Recorder(Invoker):
    """The invoker port, recording calls (the waiting Task's timer, continuations)."""

    supports_delay = True

    def __init__(self):
        self.calls: list = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


def _callback_function():
    """The compiled function of a one-state machine whose Task waits for a callback
    (`.waitForTaskToken`, HeartbeatSeconds 600): (ir, handler, lambda calls)."""
    from unumctl.asl import compile_definition, resolver
    from unumctl.asl.compiler import to_workflow
    machine = {"StartAt": "Ask", "States": {"Ask": {
        "Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
        "Parameters": {"FunctionName": ARN + "Ask", "Payload": {"token.$": "$$.Task.Token"}},
        "HeartbeatSeconds": 600, "End": True}}}
    comp = compile_definition(machine, resolver({"Ask": {}}), ["Ask"], source="late", machine="late-app")
    wf = to_workflow(comp, "late-app")
    (name, ir), = [(n, ir) for n, ir in wf.functions.items() if ir.start]
    assert comp.code[name] == "Ask"
    calls: list = []
    return ir, (lambda event, context: calls.append(event) or {"asked": True}), calls


@pytest.mark.parametrize("prefix,status,lambda_calls", [
    # the session ends during the Lambda call: the execution writes asl/cbs late, suspends
    ("asl/cbs/", "suspended", 1),
    # it ends before the token record is written: the execution writes asl/cb late, then
    # finds the session ended before its Lambda call (TaskAttempts.live) and drops
    ("asl/cb/", "dropped", 0),
])
def test_a_waiting_task_that_writes_after_the_sweep_leaves_nothing(tmp_path, prefix, status, lambda_calls):
    """The Task's execution writes its token record (asl/cb) or its "call returned" item
    (asl/cbs) after the session ended; it deletes what it wrote whether it suspends or drops."""
    blobs = FileBlobStore(tmp_path / "blobs")
    ds = EndsBeforeWrite(tmp_path / "db.sqlite", blobs, prefix)
    ir, handler, calls = _callback_function()
    engine = Engine(ir, handler, ds, Recorder(), blobs, Options(), wrapper=make_wrapper(ir.wrapper))
    out = engine.handle(entry_payload(SESSION, {"job": 1}))
    assert ds.ended
    assert out.status == status, out
    assert len(calls) == lambda_calls  # no user code for a session that is over
    assert ds.dump() == {SESSION: ["result"]}  # before the fix: ['asl/cbs/Ask/0', 'result'] (and asl/cb)


def test_a_waiting_task_in_a_live_session_keeps_its_records(tmp_path):
    """The check costs one read and deletes nothing while the session runs."""
    blobs = FileBlobStore(tmp_path / "blobs")
    ds = EndsBeforeWrite(tmp_path / "db.sqlite", blobs, "never/")
    ir, handler, calls = _callback_function()
    inv = Recorder()
    engine = Engine(ir, handler, ds, inv, blobs, Options(), wrapper=make_wrapper(ir.wrapper))
    out = engine.handle(entry_payload(SESSION, {"job": 1}))
    assert out.status == "suspended" and len(calls) == 1
    left = ds.dump()[SESSION]
    assert "asl/cb/" + out.instance + "/0" in left and "asl/cbs/" + out.instance + "/0" in left
    assert "result" not in left
    assert len(inv.calls) == 1  # the HeartbeatSeconds timer (a delayed re-invocation)


def test_a_dropped_execution_removes_its_late_blobs_marker(tmp_path):
    """A late duplicate of an entry invocation whose input is a blob (`payload/input`): it
    reads `result` as absent, then the session ends and the final sweep removes the marker
    and the blobs (the first execution had created the marker); the duplicate creates the
    blobs marker again before it reads its input, finds the input gone and drops: the
    marker is deleted again."""
    from runtime.ir import load_function
    blobs = FileBlobStore(tmp_path / "blobs")
    ds = EndsBeforeWrite(tmp_path / "db.sqlite", blobs, BLOBS_MARKER, all_blobs=True)
    ir = load_function({"Name": "A", "Start": True}, "late#A")
    ran: list = []
    engine = Engine(ir, lambda e, c: ran.append(e) or e, ds, Recorder(), blobs, Options())
    payload = entry_payload(SESSION, {"big": "x" * 200}, blobs, max_bytes=100)
    assert payload["Data"]["Source"] == "blob"
    out = engine.handle(payload)
    assert ds.ended and ran == []
    assert out.status == "dropped", out
    assert ds.dump() == {SESSION: ["result"]}  # before the fix: ['blobs', 'result']
    assert not [f for f in (tmp_path / "blobs").rglob("*") if f.is_file()]  # the input blob was swept
