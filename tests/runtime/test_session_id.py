"""The session id type (runtime.payload.SessionId: one validator, parsed once at the edge) and
the one session loop of the deployed targets (unumctl.targets: Target.invoke / result over the
SessionPorts a target hands over), run here over the local datastore and blob store."""

from __future__ import annotations

import json

import pytest

from runtime.errors import UnumError
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.payload import SESSION_ID_RE, Payload, SessionId, check_session_id
from runtime.session import ENTRY_INPUT_BLOB, Retention, finish, success_item
from unumctl.targets import SessionPorts, Target, TargetError, session_id


@pytest.mark.parametrize("good", ["a", "run-42", "A_b-9", "0" * 80, "0b7c6f1e-2a4d-4c8e-9f00-123456789abc"])
def test_a_valid_id_parses_to_itself(good):
    sid = SessionId(good)
    assert sid == good and isinstance(sid, str) and isinstance(sid, SessionId)
    assert json.dumps({"s": sid}) == json.dumps({"s": good})


@pytest.mark.parametrize("bad", ["", "-run", "_run", "run 42", "run/42", "../x", "a#b", "0" * 81, "ü", None, 42,
                                 ["run"]])
def test_an_invalid_id_is_refused_with_the_rule(bad):
    with pytest.raises(UnumError, match="1 to 80 letters, digits, '-' or '_', starting with a letter or digit"):
        SessionId(bad)


def test_the_type_and_the_regex_agree_and_the_check_returns_the_type():
    for s in ["x", "x" * 80, "x" * 81, "x.y", "9-_"]:
        ok = SESSION_ID_RE.fullmatch(s) is not None
        try:
            SessionId(s)
            parsed = True
        except UnumError:
            parsed = False
        assert ok == parsed, s
    assert type(check_session_id("run-1")) is SessionId


def test_a_parsed_id_is_not_parsed_again():
    sid = SessionId("run-1")
    assert SessionId(sid) is sid and check_session_id(sid) is sid and SessionId.of(sid) is sid


def test_new_ids_are_valid_and_distinct_and_of_none_is_new():
    ids = {SessionId.new() for _ in range(100)} | {SessionId.of(None)}
    assert len(ids) == 101 and all(SESSION_ID_RE.fullmatch(s) for s in ids)


def test_a_decoded_payload_carries_the_type():
    p = Payload.decode({"Version": 1, "Session": "run-7", "Data": {"Source": "http", "Value": 1}},
                       new_session=lambda: "unused")
    assert type(p.session) is SessionId


def test_session_id_names_the_flag_and_the_fix():
    with pytest.raises(TargetError, match=r"^SESSION: session id 'a b' is not valid: .*\(e.g. run-42\)$"):
        session_id("a b", "SESSION")


class _Deployed(Target):
    """A target whose entry function is this test: `send` records the payload and, unless
    told to stay silent, commits the session's result as a function with no edge does."""

    name = "toy"
    retention = Retention()  # (no app)

    def __init__(self, tmp_path, answer=True, limit=1000):
        super().__init__(app=None)
        self.ds = SqliteDatastore(tmp_path / "unum.db")
        self.blobs = FileBlobStore(tmp_path / "blobs")
        self.sent: list[dict] = []
        self.answer = answer
        self.limit = limit
        self.blob_lookups = 0

    def session_ports(self) -> SessionPorts:
        def send(payload):
            self.sent.append(payload)
            if self.answer:
                finish(self.ds, payload["Session"], success_item("Entry", {"v": payload["Data"]}), 4e9)

        def input_blobs():
            self.blob_lookups += 1
            return self.blobs

        return SessionPorts(lambda: (self.ds, self.blobs), send, self.limit, input_blobs,
                            lambda s, t: f"session {s}: no result after {t:g}s")


def test_invoke_starts_waits_and_returns_the_result(tmp_path):
    t = _Deployed(tmp_path)
    sid, item = t.invoke({"x": 1}, True, 5.0, "run-1")
    assert sid == "run-1" and type(sid) is SessionId
    assert t.sent[0]["Session"] == "run-1" and t.sent[0]["Data"] == {"Source": "http", "Value": {"x": 1}}
    assert item == {"status": "SUCCEEDED", "instance": "Entry", "v": {"Source": "http", "Value": {"x": 1}}}
    assert t.result("run-1") == item and t.blob_lookups == 0


def test_invoke_without_an_id_makes_one_and_without_wait_returns_none(tmp_path):
    t = _Deployed(tmp_path)
    sid, item = t.invoke(1, False, 5.0)
    assert item is None and SESSION_ID_RE.fullmatch(sid) and t.sent[0]["Session"] == sid


def test_a_large_input_travels_by_reference_through_the_blob_store(tmp_path):
    t = _Deployed(tmp_path, limit=10)
    sid, _ = t.invoke("x" * 50, True, 5.0, "big")
    data = t.sent[0]["Data"]
    assert data["Source"] == "blob" and t.blob_lookups == 1
    assert json.loads(t.blobs.get(sid, data["Value"])) == "x" * 50 and ENTRY_INPUT_BLOB in data["Value"]


def test_no_result_in_time_is_the_targets_line_and_a_bad_id_is_refused_before_sending(tmp_path):
    t = _Deployed(tmp_path, answer=False)
    with pytest.raises(TargetError, match=r"^session run-2: no result after 0.2s$"):
        t.invoke(1, True, 0.2, "run-2")
    assert t.result("run-2") is None
    with pytest.raises(TargetError, match="^--session: session id"):
        t.invoke(1, True, 1.0, "bad id")
    with pytest.raises(TargetError, match="^SESSION: session id"):
        t.result("bad/id")
    with pytest.raises(TargetError, match="--faults is only available on --cloud local"):
        t.invoke(1, True, 1.0, "run-3", "crash=1")
    assert [p["Session"] for p in t.sent] == ["run-2"]
