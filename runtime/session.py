"""The session contract: how a session starts, its `result` item, how it ends, item expiry.

Source: docs/architecture.md §3 ("Failures": GC, terminal outputs), docs/protocol.md and seed 000 Appendix
B.3 (the entry invocation). One place for what every starter of a session (each target's
`invoke`, the local queue's resume, the conformance runner, the explorer, the benchmarks)
and every writer of a session's outcome (the engine, the AWS error handler, the GCP and
local give-up paths, the explorer's model of them) must do:

- a session starts with `entry_payload`: the wire payload of the entry invocation, its
  input inline or, when larger than the invoker's limit, in blob `payload/input`;
- `result` is created with create-if-absent, so the first outcome wins and never changes;
  its value is inline (`v`) or in a content-addressed blob (`blob`);
- ending a session removes every item but `result` (and its redrive record, runtime/redrive.py)
  and every blob but the result's;
- items expire with the session's life (its start plus `session_timeout_seconds`, plus a
  margin), the result after `result_retention_seconds`, which must outlive the longest
  platform redelivery (Lambda async event age 6 h, Pub/Sub retention 7 days); every
  expiry is computed by `Retention` (items, results, history records, registries);
- a session's status (RUNNING, SUCCEEDED, FAILED, TIMED_OUT) is `session_status(result)`;
- a starter outside the platform (unumctl.client) starts a session once: `claim_start`
  creates its START_RECORD with create-if-absent, so a start sent again (the same
  idempotency key) finds the session and sends nothing (Step Functions' StartExecution
  with the same name and input; another input is SessionExistsError, ExecutionAlreadyExists).
"""

from __future__ import annotations

import hashlib
import json
import math
import time
from dataclasses import dataclass
from typing import Any

from .payload import RESULT_KEY, Payload, check_session_id
from .ports import BlobStore, Datastore
from .storage import item_blobs

__all__ = ["BLOBS_MARKER", "DAY", "ENTRY_INPUT_BLOB", "RECORD_FIELD", "Retention", "SESSION_CONTEXT",
           "SESSION_TIMEOUT_ERROR", "STATUSES", "create_result", "end", "entry_payload", "failure_item",
           "finish", "give_up", "read_result", "session_status", "success_item", "undo_late_writes",
           "REDRIVE_RECORD", "failed_where", "wait_result", "START_RECORD", "SessionExistsError",
           "canonical_input", "claim_start", "mark_sent", "start_once"]

DAY = 86400.0
MAX_REDELIVERY_SECONDS = 7 * DAY  # Pub/Sub's longest message retention; Lambda's is 6 h
SESSION_CONTEXT = "UnumSession"   # inherited context field: {"Start": unix seconds}


@dataclass(frozen=True)
class Retention:
    """Expiry policy (seconds). `session_timeout`: longest a session may run; items of a
    live session expire `margin` after it; the result `result` seconds after it is written
    (at least MAX_REDELIVERY_SECONDS + margin, so a redelivery always finds it)."""

    session_timeout: float = 7 * DAY
    result: float = 8 * DAY
    margin: float = DAY

    def item_expiry(self, session_start: float) -> float:
        """Expiry of a session's intermediate items (Unix seconds)."""
        return session_start + self.session_timeout + self.margin

    def result_expiry(self, now: float) -> float:
        """Expiry of the result item written at `now`."""
        return now + self.result_lifetime

    @property
    def result_lifetime(self) -> float:
        return max(self.result, MAX_REDELIVERY_SECONDS + self.margin)

    @property
    def window_open(self) -> float:
        """Longest a window across sessions stays open, from its first object (seconds):
        the result lifetime. An object that arrives later closes the window and fires it
        with what it holds (runtime/triggers/window.py, docs/ir.md "Windows across sessions")."""
        return self.result_lifetime

    @property
    def window_lifetime(self) -> float:
        """Lifetime of a window's items from the window's first object (seconds): the open
        bound, plus the consumer session's longest life and margin, plus its result's
        lifetime, so a window's slots outlive its firing, its consumer's read and the
        consumer's result (a window id is never reused while its consumer session's result
        may exist)."""
        return self.window_open + self.session_timeout + self.margin + self.result_lifetime

    @property
    def window_blob_expiry_days(self) -> int:
        """`blob_expiry_days` for an app with windows: a window's value blobs (values over the
        datastore item limit) live as long as the window's items."""
        return max(self.blob_expiry_days, math.ceil(self.window_lifetime / DAY))

    @property
    def blob_expiry_days(self) -> int:
        """Age in days after which a bucket lifecycle rule may delete any blob: a blob lives
        at most as long as the live session that wrote it or the result that names it."""
        return max(1, math.ceil(max(self.result_lifetime, self.session_timeout + self.margin) / DAY))


ENTRY_INPUT_BLOB = "payload/input"  # blob key of an entry input too large to travel inline


def entry_payload(session: str, value: Any, blobs: BlobStore | None = None,
                  max_bytes: int | None = None, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The wire payload (a JSON object, runtime/payload.py) that starts session `session` with
    input `value` at the entry function: {"Version", "Session", "Data": {"Source": "http",
    "Value": value}} plus the inherited `context` fields (e.g. the ASL {"AslExec": {"Start":
    unix seconds}}). With `blobs` and `max_bytes` (the invoker's `max_payload_bytes`), an input
    whose compact JSON is longer than `max_bytes` bytes is written to blob `payload/input` of
    the session and passed by reference ({"Source": "blob", "Value": <blob key>}).

    Raises UnumError when `session` is not a valid id (payload.SESSION_ID_RE), TypeError or
    ValueError when `value` is not JSON (only when it is measured). Every target's `invoke`
    and every other starter of a session builds its payload here."""
    p = Payload(check_session_id(session), "http", value, extra=dict(context or {}))
    if blobs is not None and max_bytes is not None:
        data = json.dumps(value, separators=(",", ":")).encode()
        if len(data) > max_bytes:
            p.source, p.value = "blob", blobs.put(session, ENTRY_INPUT_BLOB, data)
    return p.encode()


class SessionExistsError(Exception):
    """A session id is reused with a different input (Step Functions' ExecutionAlreadyExists)."""


def canonical_input(value: Any) -> tuple[str, str]:
    """(canonical JSON text, its SHA-256 hex digest) of a session input: keys sorted, no
    spaces, UTF-8. Raises TypeError/ValueError when `value` is not JSON (NaN included)."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text, hashlib.sha256(text.encode()).hexdigest()


# item: {"input_sha256", "started_at", "sent"} of a session started by `claim_start`; an
# ordinary item of the session: the final sweep (`end`) removes it with the others, or its
# expiry (under `runtime.gc: none`)
START_RECORD = "start"


def claim_start(ds: Datastore, session: str, value: Any, now: float, expires_at: float) -> bool:
    """Whether the caller must send the entry invocation of session `session` with input
    `value` (`now`: Unix s). The session's START_RECORD is created with create-if-absent:
    True when this call created it, or when it exists with the same input but its starter
    has not marked it sent (`mark_sent`: it may have died between the two; the entry sent
    twice is a duplicate delivery, which the protocol absorbs) and the session has no
    result; False when the session exists (its record is marked sent) or has ended (its
    record swept, its result kept). Raises SessionExistsError when the record holds another
    input, TypeError/ValueError when `value` is not JSON."""
    digest = canonical_input(value)[1]
    created, rec = ds.create_if_absent(session, START_RECORD,
                                       {"input_sha256": digest, "started_at": now, "sent": False}, expires_at)
    if not created and rec.get("input_sha256") != digest:
        raise SessionExistsError(f"session {session} already exists with a different input "
                                 "(ExecutionAlreadyExists); use another idempotency key or session id")
    if ds.get(session, RESULT_KEY) is not None:  # ended: its sweep may have removed the record
        if created:
            ds.delete(session, [START_RECORD])
        return False
    return created or not rec.get("sent")


def mark_sent(ds: Datastore, session: str, value: Any, now: float, expires_at: float) -> None:
    """After the entry invocation of `session` was sent: mark its START_RECORD sent, so a
    start sent again sends nothing (`claim_start`). When the session has ended meanwhile,
    the record is deleted again (the late-write rule, `undo_late_writes`)."""
    ds.put(session, START_RECORD, {"input_sha256": canonical_input(value)[1], "started_at": now,
                                   "sent": True}, expires_at)
    undo_late_writes(ds, session, [START_RECORD])


def start_once(ds: Datastore, send: Any, session: str, value: Any, now: float, expires_at: float,
               blobs: BlobStore | None = None, max_bytes: int | None = None,
               context: dict[str, Any] | None = None) -> bool:
    """Start session `session` with input `value` once: claim its START_RECORD (`claim_start`),
    `send(payload)` the entry payload (`entry_payload`: the input inline, or in blob
    `payload/input` of `blobs` beyond `max_bytes`; `context`: inherited context fields), then
    `mark_sent`. Returns whether the entry was sent (False: a start sent again, or the session
    ended). The one start of every starter outside the platform: unumctl/targets.py
    `start_session` (the client, `unumctl invoke`) and the triggers' adapters
    (runtime/aws/sources.py, runtime/gcp/sources.py). When `send` raises, the claim is
    undone (a retry is not blocked) and the error propagates; SessionExistsError for the
    same id with another input; TypeError/ValueError when `value` is not JSON."""
    if not claim_start(ds, session, value, now, expires_at):
        return False
    try:
        send(entry_payload(session, value, blobs, max_bytes, context))
    except BaseException:
        ds.delete(session, [START_RECORD])
        raise
    mark_sent(ds, session, value, now, expires_at)
    return True


def success_item(instance: str, piece: dict[str, Any]) -> dict[str, Any]:
    """The result of a session that ended at `instance` with value `piece` ({"v"} or {"blob"})."""
    return {"status": "SUCCEEDED", "instance": instance, **piece}


def failed_where(instance: str, state: str | None) -> str:
    """Where a session failed, for its one-line messages: `state STATE (INSTANCE)` when the
    ASL state that failed is not the function of `instance` itself (a Task in a Parallel
    branch runs in a synthesized function), else `INSTANCE`."""
    if not state or state == str(instance).partition("-")[0]:
        return str(instance)
    return f"state {state} ({instance})"


def failure_item(instance: str, error: str, cause: str, trace: list[str] | None = None,
                 state: str | None = None) -> dict[str, Any]:
    """The result of a failed session (ASL-style Error and Cause; `trace` as Lambda reports
    it; `state`: for a Step Functions app, the ASL state that failed, e.g. the Task `Record`
    in a Parallel branch whose compiled function `instance` names a synthesized function)."""
    item: dict[str, Any] = {"status": "FAILED", "instance": instance, "error": error,
                            "cause": str(cause)[:4000]}
    if trace:
        item["trace"] = list(trace)[-20:]
    if state:
        item["state"] = str(state)
    return item


def finish(ds: Datastore, session: str, item: dict[str, Any], expires_at: float) -> dict[str, Any]:
    """Create `result` unless it exists; returns the stored (winning) result item."""
    return create_result(ds, session, item, expires_at)[1]


def create_result(ds: Datastore, session: str, item: dict[str, Any],
                  expires_at: float) -> tuple[bool, dict[str, Any]]:
    """Create `result` unless it exists: (True, item) when this call created it, else
    (False, the stored item). The commit point of a function with no edge (runtime/engine.py)."""
    return ds.create_if_absent(session, RESULT_KEY, item, expires_at)


# a field of the item handed to `create_result` that is not part of the result: the session
# record's attributes an Events adapter asks to write in the same request as the result
# (runtime.ports.Events `result_fields`; only a datastore whose result item is that record
# honours it: runtime/aws/datastore.py); the engine adds it, the datastore removes it
RECORD_FIELD = "session_record"

# item: the session's redrive count and dates (runtime/redrive.py); kept with `result` by `end`
REDRIVE_RECORD = "redrive"

BLOBS_MARKER = "blobs"  # item: this session may have blobs (written before any blob; engine)


def end(ds: Datastore, blobs: BlobStore, session: str, result: dict[str, Any] | None,
        all_blobs: bool = False) -> None:
    """Remove everything of the ended session but `result` and the blob it names.

    The blob store is listed only when item BLOBS_MARKER exists (every execution that writes a
    blob creates it first), when listing it is cheap (`BlobStore.sweep_is_cheap`: the local
    directory, where the marker can be lost with a killed transaction while the blob written
    after it stays, runtime/local/datastore.py) or with `all_blobs`: a stale execution (one that finds the session
    ended) and a platform give-up sweep every blob, because an execution that crashed after
    writing past the end may have written its marker after this read (docs/protocol.md).

    The items go first, the blobs after them (as a GC tombstone goes before the delete of
    its blob, runtime/gc.py): no readable item ever names a blob that is already gone. A
    crash between the two leaves blobs that no item names; the redelivery finds `result`
    and, as a stale execution, sweeps every blob."""
    sweep_blobs = all_blobs or blobs.sweep_is_cheap or ds.get(session, BLOBS_MARKER) is not None
    ds.sweep(session, [RESULT_KEY, REDRIVE_RECORD])
    if sweep_blobs:
        blobs.sweep(session, keep=tuple(item_blobs(result)))


def undo_late_writes(ds: Datastore, session: str, items: list[str], blobs: BlobStore | None = None,
                     written: list[str] | tuple[str, ...] = ()) -> dict[str, Any] | None:
    """The late-write rule (docs/protocol.md "One execution", 5): called after a writer
    created `items` of `session` (and blobs `written` of `blobs`), off its critical path.
    Reads `result` once; when the session has ended, its final sweep may already have run
    and nothing else would remove what was written before its expiry, so the items and
    every blob of `written` that the result does not name are deleted again. Returns the
    result item, or None while the session runs: then the writes completed before the
    result was created, so the final sweep, which follows that create, removes them.

    One place for every writer that can write after the final sweep: the engine's
    executions (runtime/engine.py, including a wrapper's items such as the Step Functions
    attempt records of runtime/asl/attempts.py) and SendTask* calls (runtime/asl/callback.py)."""
    result = ds.get(session, RESULT_KEY)
    if result is None:
        return None
    if items:
        ds.delete(session, list(items))
    if blobs is not None:
        keep = set(item_blobs(result))
        mine = [b for b in written if b not in keep]
        if mine:
            blobs.delete(session, mine)
    return result


def give_up(ds: Datastore, blobs: BlobStore, session: str, instance: str, error: str, cause: str,
            retention: Retention, now: float, sweep: bool = True) -> dict[str, Any]:
    """The platform gave up on an invocation after its delivery attempts (Lambda's
    on-failure destination, a Pub/Sub message past its give-up age, the local platform's
    retries): record the session as FAILED unless it already has a result, and end it
    (`sweep=False` with `runtime.gc: none`). Returns the stored result item."""
    result = finish(ds, session, failure_item(instance, error, cause), retention.result_expiry(now))
    if sweep:
        end(ds, blobs, session, result, all_blobs=True)
    return result


STATUSES = ("RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT")
SESSION_TIMEOUT_ERROR = "Unum.SessionTimeout"  # the engine's error past runtime.session_timeout_seconds


def session_status(result: dict[str, Any] | None) -> str:
    """A session's status (one of STATUSES) from its `result` item: None is RUNNING, a FAILED
    result whose error is Unum.SessionTimeout is TIMED_OUT (as Step Functions reports an
    execution past its TimeoutSeconds). Used by every history writer and every reader."""
    if result is None:
        return "RUNNING"
    if result.get("status") == "FAILED" and result.get("error") == SESSION_TIMEOUT_ERROR:
        return "TIMED_OUT"
    return str(result.get("status") or "FAILED")


def wait_result(ds: Datastore, blobs: BlobStore, session: str, timeout: float, poll: float = 0.05,
                max_poll: float = 1.0) -> dict[str, Any] | None:
    """Poll `read_result` until the session has a result item (returned) or `timeout`
    seconds have passed (None). The pause starts at `poll` s and grows by half each time up to
    `max_poll` s. The one wait of every target that reads the result from its datastore
    (unumctl/targets.py `Target.invoke`) and of the emulated platforms."""
    deadline = time.monotonic() + timeout
    delay = poll
    while time.monotonic() < deadline:
        item = read_result(ds, blobs, session)
        if item is not None:
            return item
        time.sleep(min(delay, max(0.0, deadline - time.monotonic())))
        delay = min(delay * 1.5, max_poll)
    return None


def read_result(ds: Datastore, blobs: BlobStore, session: str) -> dict[str, Any] | None:
    """The session's `result` item ({"status", "v"} or {"status", "error", "cause", ...}) with
    a blob-stored value loaded into "v" (its JSON decoded), or None while the session runs.
    A value whose blob is gone (expired) reads as "v": None. Used by every target and reader."""
    item = ds.get(session, RESULT_KEY)
    if item is not None and "blob" in item:
        item = dict(item)
        try:
            item["v"] = json.loads(blobs.get(session, item.pop("blob")))
        except KeyError:
            item["v"] = None
    return item
