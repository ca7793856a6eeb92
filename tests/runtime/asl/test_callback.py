"""SendTask* calls that race with the end of the session (issue 22, defect 3;
runtime/asl/callback.py, docs/stepfunctions.md "Timeouts, heartbeats and callbacks").

The session ends and is swept between the call's read of the session state and its write
(here: the datastore port ends the session just before it performs the callback's write,
as a scheduler could order it on any target). The call must report the end (TaskTimedOut,
as Step Functions does for a closed execution) and leave nothing behind but `result`:
before the fix, a heartbeat returned success and its `asl/hb/...` item stayed until expiry
(gc `safe`), and a success/failure claim stayed as well."""

from __future__ import annotations

import time

import pytest

from runtime.asl.attempts import token_key
from runtime.asl.callback import CallbackClient, CallbackError, Token
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.session import end, finish, success_item

SESSION = "s1"
NONCE = "ab" * 16


class EndsBeforeCallbackWrite(SqliteDatastore):
    """The local datastore; just before the first write to an `asl/hb/` or `asl/try/` item,
    the session ends (another branch creates `result` and sweeps, runtime/session.py)."""

    def __init__(self, path, blobs):
        super().__init__(path)
        self.blobs = blobs
        self.ended = False

    def _end_first(self, name: str) -> None:
        if not self.ended and name.startswith(("asl/hb/", "asl/try/")):
            self.ended = True
            result = finish(self, SESSION, success_item("Other", {"v": 1}), time.time() + 600)
            end(self, self.blobs, SESSION, result)

    def put(self, session, name, item, expires_at):
        self._end_first(name)
        return super().put(session, name, item, expires_at)

    def create_if_absent(self, session, name, item, expires_at):
        self._end_first(name)
        return super().create_if_absent(session, name, item, expires_at)


class Recorder(Invoker):  # the invoker port, recording the re-invocations
    def __init__(self):
        self.calls: list = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


@pytest.fixture
def waiting(tmp_path):
    """A datastore holding a waiting callback's token record (HeartbeatSeconds 60), and its token."""
    ds = EndsBeforeCallbackWrite(tmp_path / "db.sqlite", FileBlobStore(tmp_path / "blobs"))
    now = time.time()
    ds.create_if_absent(SESSION, token_key("W", 0), {"k": NONCE, "fn": "W", "p": {"Session": SESSION},
                                                      "t0": now, "to": 300, "hb": 60, "x": now + 600},
                        now + 600)
    return ds, Token("cb-app", SESSION, "W", 0, NONCE).encode()


@pytest.mark.parametrize("send", ["heartbeat", "success", "failure"])
def test_a_send_that_races_with_the_end_of_the_session(waiting, send):
    ds, token = waiting
    inv = Recorder()
    client = CallbackClient(ds, inv, app="cb-app")
    with pytest.raises(CallbackError) as err:
        if send == "heartbeat":
            client.send_task_heartbeat(token)
        elif send == "success":
            client.send_task_success(token, {"ok": True})
        else:
            client.send_task_failure(token, "E", "c")
    assert ds.ended
    assert err.value.code == "TaskTimedOut"
    assert ds.dump() == {SESSION: ["result"]}  # the write was deleted again
    assert inv.calls == []                     # nothing to resume in an ended session
    with pytest.raises(CallbackError) as again:  # and a retry of the call says the same
        client.send_task_heartbeat(token)
    assert again.value.code == "TaskTimedOut"


def test_a_heartbeat_in_a_live_session_is_kept(tmp_path):
    """The re-check costs one read and changes nothing while the session runs."""
    ds = SqliteDatastore(tmp_path / "db.sqlite")
    now = time.time()
    ds.create_if_absent(SESSION, token_key("W", 0), {"k": NONCE, "fn": "W", "p": {"Session": SESSION},
                                                      "t0": now, "to": 300, "hb": 60, "x": now + 600},
                        now + 600)
    CallbackClient(ds, Recorder(), app="cb-app").send_task_heartbeat(Token("cb-app", SESSION, "W", 0, NONCE).encode())
    assert ds.dump() == {SESSION: ["asl/cb/W/0", "asl/hb/W/0"]}


class EndsDuringTheLookup(SqliteDatastore):
    """The local datastore with `get_many` served item by item, `result` first (the order
    DynamoDB BatchGetItem may return, runtime/ports.py: not a snapshot), and the session
    ending (another branch creates `result`, then the final sweep) right after the
    `end_after`-th item read: issue 33, item 5."""

    def __init__(self, path, blobs, end_after: int):
        super().__init__(path)
        self.blobs = blobs
        self.end_after = end_after
        self.reads = 0
        self.ended = False

    def get_many(self, session, names):
        order = sorted(dict.fromkeys(names), key=lambda n: n != "result")
        found = {}
        for n in order:
            found[n] = super().get_many(session, [n])[0]
            self.reads += 1
            if not self.ended and self.reads == self.end_after:
                self.ended = True
                result = finish(self, SESSION, success_item("Other", {"v": 1}), time.time() + 600)
                end(self, self.blobs, SESSION, result)
        return [found[n] for n in names]


@pytest.mark.parametrize("end_after", [1, 2, 3, 4])
@pytest.mark.parametrize("send", ["heartbeat", "success", "failure"])
def test_a_genuine_token_of_a_session_that_ends_during_the_lookup_times_out(tmp_path, send, end_after):
    """The session ends while the send reads the token record and `result`: whichever item
    the end falls after, the answer is TaskTimedOut (the session's end), never InvalidToken
    (a token this app never issued). Before the fix, `result` and the token items were one
    read: `result` served first (absent), the sweep, then the record (gone): InvalidToken."""
    ds = EndsDuringTheLookup(tmp_path / "db.sqlite", FileBlobStore(tmp_path / "blobs"), end_after)
    now = time.time()
    ds.create_if_absent(SESSION, token_key("W", 0), {"k": NONCE, "fn": "W", "p": {"Session": SESSION},
                                                      "t0": now, "to": 300, "hb": 60, "x": now + 600},
                        now + 600)
    ds.reads = 0
    inv = Recorder()
    client = CallbackClient(ds, inv, app="cb-app")
    token = Token("cb-app", SESSION, "W", 0, NONCE).encode()
    with pytest.raises(CallbackError) as err:
        if send == "heartbeat":
            client.send_task_heartbeat(token)
        elif send == "success":
            client.send_task_success(token, {"ok": True})
        else:
            client.send_task_failure(token, "E", "c")
    assert ds.ended
    assert err.value.code == "TaskTimedOut", err.value
    assert ds.dump() == {SESSION: ["result"]}
    assert inv.calls == []
