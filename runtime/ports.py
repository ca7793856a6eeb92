"""The ports through which the runtime core reaches the platform.

Source: seed 001 §4 (a FaaS platform with asynchronous invocation and a strongly consistent
data store with atomic create and set operations). Every adapter (local SQLite, DynamoDB,
Firestore) implements `Datastore` and must pass unumctl_testing/conformance/datastore_suite.py.

Items are JSON objects addressed by (session, name). Every write carries `expires_at`
(Unix seconds) so that a TTL policy removes what a crash left behind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Iterable, Sequence

__all__ = ["BlobStore", "Datastore", "Events", "Invoker", "emit_safely"]



class Datastore(ABC):
    """A strongly consistent key-value store with atomic create and set-add.

    `max_item_bytes`: largest JSON item (encoded) the store accepts; bigger checkpoint values
    go to the BlobStore with a pointer in the item.
    """

    max_item_bytes: int = 350_000
    # largest value kept inline in an item when the blob store is cheaper beyond it (None:
    # only the item limit decides); runtime/storage.py ValueStore.inline_limit
    inline_value_bytes: int | None = None

    def stored_bytes(self, data: bytes) -> int:
        """Bytes an item field holding the encoded value `data` takes in this store (what
        `inline_value_bytes` is compared with): `len(data)` unless the store compresses."""
        return len(data)

    @abstractmethod
    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        """Read the items `names` of `session`; returns them in the order asked, duplicates
        kept, None for absent ones (a list of the same length as `names`).

        Promised: each item is read strongly consistently, after every write (create, put,
        delete, sweep) that completed before the call started; an item is never older than
        that.
        NOT promised: a snapshot. The items may be read one at a time, in any order, and a
        write that completes while the call is in flight may be visible in some items and
        not in others (DynamoDB BatchGetItem and the Firestore adapter's chunked `in`
        queries read items independently). Callers must stay correct when the items are served item by item in
        an adversarial order: unumctl_testing/conformance/adversarial.py does exactly that.
        Reading a set's name returns an adapter-specific item or None (not part of the
        contract; use `set_add`)."""

    def get(self, session: str, name: str) -> dict[str, Any] | None:
        """Read one item (None when absent)."""
        return self.get_many(session, [name])[0]

    @abstractmethod
    def create_if_absent(self, session: str, name: str, item: dict[str, Any],
                         expires_at: float) -> tuple[bool, dict[str, Any]]:
        """Atomically create the item unless it exists.

        Returns (True, item) when this call created it, else (False, stored item): the
        caller adopts the stored value (seed 001 §3.3, Figure 3)."""

    @abstractmethod
    def set_add(self, session: str, name: str, member: str, expires_at: float) -> int:
        """Atomically add `member` (a string) to the set `name` (created when absent) and
        return the set's size (an int >= 1) after the add.

        Atomic: the member and the size change together or not at all (a crash cannot
        leave a member that is not counted). Idempotent: adding an existing member changes
        nothing and returns the current size, so duplicate executions are harmless.
        The returned size counts this member and every add that completed before it; it may
        also count adds that overlap with this call (adapters that read the size back after
        the add, DynamoDB), never more than the set's final size. Hence the add that
        completes a set of expected size always sees it complete, no add sees it complete
        early, and overlapping adds may both see it complete (callers dedupe what follows).
        SQLite and Firestore return exactly the size right after this add.
        The size, not the member list, is returned, and each add moves O(1) bytes whatever
        the set's size; sets have no size bound (docs/sets.md): callers only add members
        that belong to a known expected set, so size == expected size means complete, and a
        10,000-branch fan-in does not move O(N^2) names."""

    @abstractmethod
    def put(self, session: str, name: str, item: dict[str, Any], expires_at: float) -> None:
        """Create or overwrite an item (used for GC tombstones)."""

    @abstractmethod
    def delete(self, session: str, names: Iterable[str]) -> None:
        """Delete items or sets (a set with all its members); absent names are ignored.
        A set must not be added to while it is being deleted."""

    @abstractmethod
    def sweep(self, session: str, keep: Sequence[str]) -> int:
        """Delete every item and set (with all members) of `session` except those named in
        `keep`; returns how many items and sets were deleted (a set counts once)."""


class BlobStore(ABC):
    """Object storage for values too large for a datastore item or an invocation payload.

    `sweep_is_cheap`: sweeping a session that has no blobs costs no more than reading an item
    (a local directory), so ending a session sweeps it without consulting the session's
    `blobs` marker (runtime.session.end); object stores list a prefix, and keep it False."""

    sweep_is_cheap: bool = False

    @abstractmethod
    def put(self, session: str, key: str, data: bytes) -> str:
        """Store bytes; returns the reference to put in the item or payload."""

    @abstractmethod
    def get(self, session: str, ref: str) -> bytes:
        """Read bytes stored by put; raises KeyError when absent."""

    @abstractmethod
    def delete(self, session: str, refs: Iterable[str]) -> None:
        """Delete blobs by reference; absent ones are ignored."""

    @abstractmethod
    def sweep(self, session: str, keep: Sequence[str] = ()) -> None:
        """Delete every blob of the session except the keys in `keep`."""


class Invoker(ABC):
    """Asynchronous invocation of a function by name (Lambda Event invoke, Pub/Sub publish,
    local queue). `max_payload_bytes`: larger payload values are passed by reference."""

    max_payload_bytes: int = 200_000

    @abstractmethod
    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        """Invoke every (function, payload) concurrently and return once all are accepted by
        the platform (no fire-and-forget: a lost publish would stall the workflow)."""


HISTORY_LEVELS = ("full", "session-only", "off")


class Events(ABC):
    """Where the runtime and the platform report what happened (the execution history).

    Observations only: never read by the commit protocol, written outside it (except the
    session-start attributes an adapter returns from `result_fields`, which ride along in
    the result's create request and are never read by the protocol), and a failed
    write must not fail the execution (callers go through `emit_safely`). Adapters: the local
    target's SQLite tables (runtime/local/history.py); AWS (CloudWatch structured log lines +
    an index of sessions) and GCP (structured logs + Firestore) fit the same two methods.

    `level` is the app's `runtime.history`: "full" (execution events and session records),
    "session-only" (session records only) or "off" (nothing).

    An execution event is a dict with keys: `kind` ("ran", "adopted", "dropped", "failed",
    "suspended", "crashed", "retried", "redelivered", "timed_out", "out_of_memory",
    "gave_up", "duplicated", "quorum_fired", "fired": a shuffle stage's or a window's firing, runtime/triggers/shuffle.py, runtime/triggers/window.py), `session`, `instance` (invocation name), `function`, `attempt`
    (delivery attempt, 1-based, or None), `t0`/`t1` (Unix seconds, start and end),
    `detail` (reason or error text), `error` (error type or None), `request_id` (the
    platform's id of the delivery), and when measured `user_ms`, `runtime_ms`,
    `datastore_ms`, `invoke_ms` (milliseconds), `payload_bytes`, `checkpoint_bytes`,
    `invoked` (continuations invoked), `input`/`output` (small JSON values, else omitted).
    An adapter with `derived_fields = True` also receives `input_of` (the instance whose
    recorded `output` this execution's `input` equals: its parent sent its own value) and
    `ends` (True on the event of the execution that created the session's result), so that
    it may leave out what its reader derives (runtime/aws/history.py).
    """

    level: str = "full"
    derived_fields: bool = False

    @abstractmethod
    def record(self, events: Sequence[dict[str, Any]]) -> None:
        """Append execution events (in order). Idempotent where it can be: the same event
        recorded twice (same `session`, `instance`, `kind`, `request_id`, `attempt`, `t0`)
        is kept once."""

    @abstractmethod
    def session_started(self, session: str, function: str, start: float, input: Any) -> None:
        """Record that `session` started at `start` (Unix s) at entry `function` with `input`
        (the adapter stores it, or a reference to it when large). First call wins."""

    def result_fields(self, session: str, function: str, start: float, input: Any) -> Any:
        """What `session_started` would record, in a form the datastore writes in the same
        request as the result it creates, or None (the default: record it separately). Asked by
        the entry execution that is about to create the session's result; the engine hands a
        non-None answer to `create_result` as the item's runtime.session.RECORD_FIELD and, when
        that create succeeds, does not call `session_started`. Only an adapter whose session
        record is the datastore's result item answers (runtime/aws/history.py: one DynamoDB
        write instead of two for a session its entry execution ends). Must not raise."""
        return None

    @abstractmethod
    def session_ended(self, session: str, status: str, end: float, result: dict[str, Any]) -> None:
        """Record the end of `session`: `status` SUCCEEDED, FAILED or TIMED_OUT at `end` (Unix
        s); `result` is the session's result item ({"v"} or {"blob"}, or {"error",
        "cause"}). First call wins (the result item is first-outcome-wins too)."""


def emit_safely(fn, *args: Any, log=None) -> None:
    """Call an Events method and swallow any exception (history is an observation: it must
    never fail or retry an execution); `log(msg)` is told about the failure."""
    try:
        fn(*args)
    except Exception as exc:  # noqa: BLE001  (any adapter error)
        if log is not None:
            try:
                log(f"history: could not record events: {type(exc).__name__}: {exc}")
            except Exception:  # noqa: BLE001
                pass
