"""unumctl.client: a session per idempotency key (runtime.payload.SessionId.for_key), the
conditional start of the deployed targets (runtime.session.claim_start / mark_sent through
unumctl.targets.start_session, over the local datastore with a fake entry function), and the
example script examples/client/start_many.py on the local target: 100 sessions, 20 starts
sent again, 100 results, exactly 100 sessions and one entry execution each in the datastore."""

from __future__ import annotations

import importlib.util
import shutil
import sqlite3
from pathlib import Path

import pytest

from runtime.errors import UnumError
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.payload import SESSION_ID_RE, SessionId
from runtime.session import (START_RECORD, Retention, SessionExistsError, claim_start, finish, mark_sent,
                             success_item)
from unumctl.client import Client, ClientError, SessionFailed
from unumctl.targets import SessionPorts, Target, TargetError

ROOT = Path(__file__).resolve().parents[2]


def _example():
    spec = importlib.util.spec_from_file_location("start_many", ROOT / "examples" / "client" / "start_many.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ---------------------------------------------------------------- ids from keys
def test_a_key_names_one_valid_session_and_other_keys_other_sessions():
    a, b = SessionId.for_key("order-1"), SessionId.for_key("order-2")
    assert a == SessionId.for_key("order-1") and a != b
    assert SESSION_ID_RE.fullmatch(a) and a.startswith("key-") and len(a) == 68
    assert SessionId.for_key("x" * 255) != SessionId.for_key("x" * 254)
    assert SESSION_ID_RE.fullmatch(SessionId.for_key("ä/../ b#?"))  # any text: hashed


@pytest.mark.parametrize("bad", ["", "x" * 256, "a\nb", "tab\t", None, 7])
def test_a_bad_key_is_refused_with_the_rule(bad):
    with pytest.raises(UnumError, match="idempotency key .* 1 to 255 characters with no control"):
        SessionId.for_key(bad)
    with pytest.raises(ClientError, match="idempotency key"):
        Client.session_for(bad)


# ---------------------------------------------------------------- the conditional start
def test_claim_start_creates_once_refuses_another_input_and_resends_an_unsent_claim(tmp_path):
    ds = SqliteDatastore(tmp_path / "unum.db")
    assert claim_start(ds, "s1", {"a": 1}, 1.0, 4e9) is True
    # the starter died before mark_sent: the next start sends again (a duplicate delivery)
    assert claim_start(ds, "s1", {"a": 1}, 2.0, 4e9) is True
    mark_sent(ds, "s1", {"a": 1}, 1.0, 4e9)
    assert claim_start(ds, "s1", {"a": 1}, 3.0, 4e9) is False
    with pytest.raises(SessionExistsError, match="ExecutionAlreadyExists"):
        claim_start(ds, "s1", {"a": 2}, 3.0, 4e9)
    # ended (record swept, result kept): nothing is sent and no record is left behind
    ds.sweep("s1", [])
    finish(ds, "s1", success_item("E", {"v": 1}), 4e9)
    assert claim_start(ds, "s1", {"a": 1}, 4.0, 4e9) is False
    assert ds.get("s1", START_RECORD) is None
    mark_sent(ds, "s1", {"a": 1}, 4.0, 4e9)  # after the end: undone (the late-write rule)
    assert ds.get("s1", START_RECORD) is None


class _Deployed(Target):
    """A deployed target whose entry function is this test: `send` records the payload and
    commits the result at once, or (`answer=False`) leaves the session running; `fail`
    makes the invoker refuse."""

    name = "toy"
    retention = Retention()

    def __init__(self, tmp_path, answer=True):
        super().__init__(app=None)
        self.ds = SqliteDatastore(tmp_path / "unum.db")
        self.blobs = FileBlobStore(tmp_path / "blobs")
        self.sent: list[dict] = []
        self.answer, self.fail = answer, False

    def session_ports(self) -> SessionPorts:
        def send(payload):
            if self.fail:
                raise TargetError("function toy-Entry does not exist")
            self.sent.append(payload)
            if self.answer:
                value = payload["Data"]["Value"]
                item = success_item("Entry", {"v": value}) if value != "boom" else \
                    {"status": "FAILED", "instance": "Entry", "error": "ValueError", "cause": "boom"}
                finish(self.ds, payload["Session"], item, 4e9)

        return SessionPorts(lambda: (self.ds, self.blobs), send, 1000, lambda: self.blobs,
                            lambda s, t: f"session {s}: no result after {t:g}s")


def test_a_start_sent_again_sends_nothing_and_another_input_is_refused(tmp_path):
    t = _Deployed(tmp_path, answer=False)
    c = Client.of_target(t)
    sid = c.start({"x": 1}, idempotency_key="req-1")
    assert c.start({"x": 1}, idempotency_key="req-1") == sid == SessionId.for_key("req-1")
    assert [p["Session"] for p in t.sent] == [sid] and c.status(sid) == "RUNNING"
    with pytest.raises(ClientError, match="ExecutionAlreadyExists"):
        c.start({"x": 2}, idempotency_key="req-1")
    assert len(t.sent) == 1


def test_the_resend_check_catches_an_unconditional_start(tmp_path, monkeypatch):
    """The count above fails when the claim is bypassed (the bug it guards against)."""
    import runtime.session
    monkeypatch.setattr(runtime.session, "claim_start", lambda *a, **k: True)
    t = _Deployed(tmp_path, answer=False)
    c = Client.of_target(t)
    c.start(1, idempotency_key="k")
    c.start(1, idempotency_key="k")
    assert len(t.sent) == 2


def test_a_refused_send_undoes_the_claim_so_a_retry_starts_the_session(tmp_path):
    t = _Deployed(tmp_path)
    t.fail = True
    with pytest.raises(ClientError, match="does not exist"):
        Client.of_target(t).start(5, session="run-1")
    assert t.ds.get("run-1", START_RECORD) is None
    t.fail = False
    c = Client.of_target(t)
    assert c.result(c.start(5, session="run-1"), timeout=5) == 5 and len(t.sent) == 1


def test_result_status_stop_and_the_errors_of_the_client(tmp_path):
    t = _Deployed(tmp_path)
    c = Client.of_target(t)
    ok, bad = c.start("fine"), c.start("boom")
    assert c.result(ok, timeout=5) == "fine" and c.status(ok) == "SUCCEEDED"
    with pytest.raises(SessionFailed, match="ValueError") as info:
        c.result(bad, timeout=5)
    assert (info.value.status, info.value.error, info.value.cause) == ("FAILED", "ValueError", "boom")
    with pytest.raises(ClientError, match="not both"):
        c.start(1, idempotency_key="k", session="s")
    with pytest.raises(ClientError, match="session id 'a b' is not valid"):
        c.status("a b")
    with pytest.raises(ClientError, match="not JSON"):
        c.start(float("nan"))
    (tmp_path / "q").mkdir()
    quiet = _Deployed(tmp_path / "q", answer=False)
    q = Client.of_target(quiet)
    run = q.start([1, 2])
    with pytest.raises(ClientError, match=f"session {run}: no result after 0.1s"):
        q.wait(run, timeout=0.1)
    assert q.stop(run, "Cancelled", "by the user") == "ABORTED"
    assert q.wait(run, timeout=1)["error"] == "Cancelled"
    assert q.stop(run) == "ABORTED"  # the first outcome stays
    assert quiet.ds.get(run, START_RECORD) is None  # ended: swept
    with pytest.raises(ClientError, match="no session never-1"):
        q.stop("never-1")


# ---------------------------------------------------------------- the example, on local
@pytest.mark.slow
def test_the_example_starts_100_sessions_resends_20_and_gets_100_results_on_local(tmp_path):
    app = tmp_path / "loop-counter"
    shutil.copytree(ROOT / "examples" / "loop-counter", app, ignore=shutil.ignore_patterns(".unum"))
    with Client(app, cloud="local") as client:
        summary = _example().run(client, 100, 20, timeout=300)
        listed = client.sessions(limit=1000)
    assert summary == {"started": 100, "resent": 20, "results": 100, "distinct_sessions": 100}
    assert len(listed) == 100 and {s["status"] for s in listed} == {"SUCCEEDED"}
    db = sqlite3.connect(app / ".unum" / "local" / "dev" / "unum.db")
    try:
        assert db.execute("SELECT COUNT(*) FROM local_sessions").fetchone()[0] == 100
        assert db.execute("SELECT COUNT(DISTINCT session) FROM items WHERE name='result'").fetchone()[0] == 100
        entries = db.execute("SELECT session, COUNT(*) FROM history_events WHERE kind='ran' AND "
                             "function='Init' GROUP BY session").fetchall()
    finally:
        db.close()
    assert len(entries) == 100 and {n for _, n in entries} == {1}, "a re-sent start ran the entry again"
