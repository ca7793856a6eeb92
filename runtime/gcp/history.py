"""The GCP target's `Events` adapter (runtime.ports.Events): structured log lines for Cloud
Logging, and the records the CLI reads in Firestore (docs/observability.md, docs/gcp.md).

Source: Cloud Logging structured logging (one JSON object per stdout line; `severity`,
`message`, `logging.googleapis.com/labels`); Firestore `documents.create` (ALREADY_EXISTS
when the document exists) and TTL policies.

Where things go
  Cloud Logging  one JSON line per event on stdout (level full) and one per session start
                 and end (full and session-only): {"severity", "message", "unum_event": {...}}
                 labelled unum_session / unum_function / unum_instance. Cloud Logging has no
                 emulator: the lines are for `gcloud logging read` and log-based metrics.
  Firestore      collection `<collection>-history` (`history_collection`, next to the
                 datastore's `unum-<app>`; its own TTL policy on `expires_at`):
                   `<session>|start`  {session, function, started_at (Unix s), input (JSON
                                       text, or {"omitted", "bytes"} when large), expires_at;
                                       at level full also t0 and events: the first
                                       execution's events, written in the same document}
                   `<session>|end`    {session, ended_at, status, result (JSON), expires_at}
                   `<session>|e|<h>`  {session, t0, events (JSON list of one execution's
                                       events), expires_at}  (level full)
                 Both session documents are created, never overwritten: first call wins
                 (runtime.ports.Events). One events document per `record` call, i.e. per
                 execution (plus one per platform event: a redelivery, a give-up, an injected
                 duplicate); its id hashes the last event's key (session, instance, kind,
                 request_id, attempt, t0), so recording the same execution twice keeps the
                 first. Only start documents have `started_at`: ordering the collection by it
                 lists the sessions (a single-field index, no composite index needed).

Costs: full = one Firestore write per execution + 1 per session, plus the log lines: the
engine reports a session's start just before the first execution's events (runtime/engine.py
`_emit_parts`), so `session_started` holds the start record and the next `record` call writes
both in the start document (if that document already exists, a redelivered first execution,
its events get their own document; a start record still held when `session_ended` comes is
written then). The end record stays its own document: the engine reports it after the last
execution's events, which are written before the final sweep (the platform may stop the
instance once the result exists), so they cannot wait for it. The execution that ends a
session records itself twice, early and on return: the process remembers the batch ids it
created lately and skips the second write. session-only = 2 writes per session; off = no
adapter. A create refused because the document exists is not billed and counts no write.
Counted in `usage` (bench/gcp_calls.py).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import sys
import time
from collections import Counter, OrderedDict
from typing import Any, Sequence

from ..ports import Events
from ..session import Retention
from .output import structured_line

__all__ = ["FirestoreHistory", "end_id", "history_collection", "read_session"]

MAX_INLINE_BYTES = 64 * 1024  # larger session inputs/outputs are stored as a size only
ERROR_KINDS = ("failed", "crashed", "timed_out", "out_of_memory", "gave_up")
WARNING_KINDS = ("retried", "redelivered", "duplicated", "dropped")


def history_collection(collection: str) -> str:
    """The history collection of the datastore collection `collection` (one place)."""
    return f"{collection}-history"


def _quote(s: str) -> str:
    return s.replace("%", "%25").replace("/", "%2F").replace("|", "%7C")


def start_id(session: str) -> str:
    """Document id of a session's start record."""
    return f"{_quote(session)}|start"


def end_id(session: str) -> str:
    """Document id of a session's end record."""
    return f"{_quote(session)}|end"


def event_key(e: dict[str, Any]) -> tuple:
    """The identity of an event (runtime.ports.Events.record: kept once)."""
    return (e.get("session"), e.get("instance"), e.get("kind"), e.get("request_id"), e.get("attempt"),
            e.get("t0"))


def batch_id(session: str, last: dict[str, Any]) -> str:
    """Document id of an events batch whose last event is `last`."""
    digest = hashlib.sha1(json.dumps(event_key(last), default=str).encode()).hexdigest()[:20]
    return f"{_quote(session)}|e|{digest}"


def _small(value: Any) -> Any:
    text = json.dumps(value, separators=(",", ":"), default=str)
    if len(text) > MAX_INLINE_BYTES:
        return {"omitted": True, "bytes": len(text)}
    return value


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), default=str, ensure_ascii=False)


class FirestoreHistory(Events):
    """Events adapter writing structured log lines and Firestore history documents.

    `client`: google.cloud.firestore.Client; `collection`: the datastore collection
    (`unum-<app>`; history goes to `history_collection(collection)`); `level`:
    runtime.history; `retention`: the app's expiry policy (runtime/session.py): the
    documents live as long as the result; `stream`: where log lines go (None: the current
    sys.stdout, i.e. Cloud Logging). Raises google.api_core exceptions on store errors
    (the engine swallows them: runtime.ports.emit_safely)."""

    def __init__(self, client: Any, collection: str, level: str = "full",
                 retention: Retention = Retention(), stream: Any = None):
        self.client = client
        self.coll = client.collection(history_collection(collection))
        self.level = level
        self.retention = retention
        self.stream = stream
        self.usage: Counter[str] = Counter()  # writes (Firestore), log_bytes (Cloud Logging)
        # batch ids this process created lately: the execution that ends a session records
        # itself early (before the final sweep) and again when it returns; skip the second
        self._recent: OrderedDict[str, None] = OrderedDict()
        # level full: start records waiting for the session's first events (`record`)
        self._pending_start: dict[str, dict[str, Any]] = {}

    # ------------------------------------------------------------------ helpers
    def _expires(self) -> _dt.datetime:
        return _dt.datetime.fromtimestamp(self.retention.result_expiry(time.time()), tz=_dt.timezone.utc)

    def _log(self, severity: str, message: str, labels: dict[str, Any], **fields: Any) -> None:
        line = structured_line({"severity": severity, "message": message, **fields}, labels) + "\n"
        stream = self.stream if self.stream is not None else sys.stdout
        stream.write(line)
        stream.flush()
        self.usage["log_bytes"] += len(line.encode())

    def _create(self, doc_id: str, doc: dict[str, Any]) -> bool:
        """Create a document unless it exists (first write wins); True when created."""
        from google.api_core import exceptions as gexc
        try:
            self.coll.document(doc_id).create({**doc, "expires_at": self._expires()})
        except gexc.Conflict:  # ALREADY_EXISTS: an earlier call recorded it (not billed)
            return False
        self.usage["writes"] += 1
        return True

    def _remember(self, bid: str) -> None:
        self._recent[bid] = None
        if len(self._recent) > 1000:
            self._recent.popitem(last=False)

    def _flush_start(self, session: str) -> None:
        """Write a start record still held for `session` on its own."""
        start = self._pending_start.pop(session, None)
        if start is not None:
            self._create(start_id(session), start)

    # ------------------------------------------------------------------ the port
    def record(self, events: Sequence[dict[str, Any]]) -> None:
        if self.level != "full" or not events:
            return
        by_session: dict[str, list[dict[str, Any]]] = {}
        for e in events:
            e = {k: v for k, v in e.items() if v is not None}
            by_session.setdefault(str(e.get("session")), []).append(e)
        for session, evs in by_session.items():
            bid = batch_id(session, evs[-1])
            if bid in self._recent:
                self._flush_start(session)
                continue
            for e in evs:
                kind = e.get("kind")
                sev = "ERROR" if kind in ERROR_KINDS else "WARNING" if kind in WARNING_KINDS else "INFO"
                self._log(sev, f"unum {kind} {e.get('instance') or e.get('function')}"
                               + (f": {e['detail'][:200]}" if e.get("detail") else ""),
                          {"unum_session": e.get("session"), "unum_function": e.get("function"),
                           "unum_instance": e.get("instance")}, unum_event=e)
            batch = {"session": session, "t0": min((e.get("t0") or 0) for e in evs), "events": _dumps(evs)}
            start = self._pending_start.pop(session, None)
            if start is None or not self._create(start_id(session), {**start, **batch}):
                self._create(bid, batch)
            self._remember(bid)

    def session_started(self, session: str, function: str, start: float, input: Any) -> None:
        if self.level == "off":
            return
        inp = _small(input)
        self._log("INFO", f"unum session {session} started at {function}",
                  {"unum_session": session, "unum_function": function},
                  unum_session_record={"session": session, "function": function, "started_at": start})
        doc = {"session": session, "function": function, "started_at": float(start), "input": _dumps(inp)}
        for other in [s for s in self._pending_start if s != session]:
            self._flush_start(other)  # (not expected: each start is followed by its events)
        if self.level == "full":
            self._pending_start[session] = doc  # written with the first events (`record`)
        else:
            self._create(start_id(session), doc)

    def session_ended(self, session: str, status: str, end: float, result: dict[str, Any]) -> None:
        if self.level == "off":
            return
        self._flush_start(session)
        res = dict(result)
        if "v" in res:
            res["v"] = _small(res["v"])
        self._log("ERROR" if status != "SUCCEEDED" else "INFO", f"unum session {session} {status}",
                  {"unum_session": session},
                  unum_session_record={"session": session, "status": status, "ended_at": end,
                                       "error": res.get("error")})
        self._create(end_id(session), {"session": session, "ended_at": float(end), "status": status,
                                       "result": _dumps(res)})


def read_session(coll: Any, session: str) -> dict[str, Any]:
    """Every history document of `session` in collection `coll` (one equality query):
    {"start": dict|None, "end": dict|None, "events": [events in order, each kept once]}
    with `input`/`result` decoded. Used by the CLI's reader (unumctl/gcp/history.py)."""
    from google.cloud import firestore
    start = end = None
    events: list[dict[str, Any]] = []
    for snap in coll.where(filter=firestore.FieldFilter("session", "==", session)).stream():
        d = snap.to_dict()
        if snap.id.endswith("|start"):
            start = {k: v for k, v in d.items() if k not in ("events", "t0")}
            start["input"] = json.loads(d["input"]) if d.get("input") else None
            events.extend(json.loads(d["events"]) if d.get("events") else [])
        elif snap.id.endswith("|end"):
            end = {**d, "result": json.loads(d["result"]) if d.get("result") else None}
        elif d.get("events"):
            events.extend(json.loads(d["events"]))
    seen: set = set()
    uniq = []
    for e in sorted(events, key=lambda e: (e.get("t0") or 0)):
        k = event_key(e)
        if k in seen:
            continue
        seen.add(k)
        uniq.append(e)
    return {"start": start, "end": end, "events": uniq}
