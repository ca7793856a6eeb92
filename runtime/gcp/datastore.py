"""`Datastore` on Cloud Firestore (native mode), through google-cloud-firestore.

Source: seed 001 §4.2 (Unum on GCP: Firestore as the strongly consistent store),
runtime/ports.py (the contract), Firestore API: `documents.create` (fails with
ALREADY_EXISTS), transactions, `documents.batchGet`, TTL policies.

Layout (one collection per app, documented in docs/gcp.md):
    collection  `unum-<app>`                          (configurable)
    document id `<quote(session)>|<quote(name)>`      ('%', '/', '|' percent-escaped)
    fields      session: str, name: str, expires_at: timestamp (the TTL policy's field),
                item: str  (the item as compact JSON; keeps every JSON value exact, which
                            Firestore's own types cannot: nested arrays, big ints)
                size: int                (a set's counter document `<id>`)
                member: str              (one document `<id>|<quote(member)>` per member)
A flat collection keeps the TTL policy and index exemptions per app (a collection group id
is database-wide) and a session is swept with one equality query on `session`.

Every method raises google.api_core exceptions on infrastructure errors; the platform
(gen2 retry policy) redelivers the message.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import Counter
from typing import Any, Iterable, Sequence

from google.api_core import exceptions as gexc
from google.cloud import firestore

from ..payload import RESULT_KEY
from ..ports import Datastore

__all__ = ["FirestoreDatastore", "doc_id"]

_ESC = {"%": "%25", "/": "%2F", "|": "%7C"}
MAX_DOC_BYTES = 1_048_576  # Firestore document limit (1 MiB)
_BATCH = 400               # writes per commit (Firestore allows 500)
_IN_LIMIT = 30             # values of one `in` filter (Firestore's limit)


def _quote(s: str) -> str:
    return "".join(_ESC.get(c, c) for c in s)


def doc_id(session: str, name: str) -> str:
    """Document id of item `name` of `session` (injective; ≤ 1500 bytes for names the
    runtime produces: instance names are capped at 200 characters, runtime/payload.py)."""
    return f"{_quote(session)}|{_quote(name)}"


def _ts(unix: float) -> _dt.datetime:
    return _dt.datetime.fromtimestamp(unix, tz=_dt.timezone.utc)


class FirestoreDatastore(Datastore):
    """Datastore on one Firestore collection.

    `client`: a google.cloud.firestore.Client (honours FIRESTORE_EMULATOR_HOST);
    `collection`: collection id, by convention `unum-<app>`;
    `txn_attempts`: attempts of a contended set_add transaction (ABORTED is retried).
    `usage` counts billed operations: reads, writes, deletes (Firestore pricing units)."""

    max_item_bytes = 1_000_000  # leaves room for the document name and the other fields

    def __init__(self, client: "firestore.Client", collection: str, txn_attempts: int = 50):
        self.client = client
        self.coll = client.collection(collection)
        self.txn_attempts = txn_attempts
        self.usage: Counter[str] = Counter()

    def _ref(self, session: str, name: str):
        return self.coll.document(doc_id(session, name))

    def _doc(self, session: str, name: str, item: dict[str, Any], expires_at: float) -> dict[str, Any]:
        return {"session": session, "name": name, "expires_at": _ts(expires_at),
                "item": json.dumps(item, separators=(",", ":"), ensure_ascii=False)}

    @staticmethod
    def _item(snap) -> dict[str, Any] | None:
        if snap is None or not snap.exists:
            return None
        data = snap.to_dict()
        if "item" in data:
            return json.loads(data["item"])
        return {"size": int(data.get("size", 0))}  # a set's counter document

    # ------------------------------------------------------------------ reads
    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        """The distinct names are read with one query per `_IN_LIMIT` of them, a filter
        `__name__ in [document references]` (no transaction). A query is billed one read
        per document it returns, at least one per query; a batchGet (`Client.get_all`) is
        billed one read per document asked, found or not: a query of names that are all
        absent costs one read instead of one per name. A query is strongly consistent: it sees every write that
        completed before it started (runtime/ports.py asks no more, and no snapshot across
        queries). Results are mapped back by id; order and duplicates kept."""
        uniq = list(dict.fromkeys(names))
        if not uniq:
            return []
        found: dict[str, dict[str, Any] | None] = {}
        for i in range(0, len(uniq), _IN_LIMIT):
            refs = [self._ref(session, n) for n in uniq[i:i + _IN_LIMIT]]
            q = self.coll.where(filter=firestore.FieldFilter("__name__", "in", refs))
            snaps = list(q.stream())
            for snap in snaps:
                found[snap.id] = self._item(snap)
            self.usage["reads"] += max(1, len(snaps))  # a query costs at least one read
        return [found.get(doc_id(session, n)) for n in names]

    # ------------------------------------------------------------------ writes
    def create_if_absent(self, session, name, item, expires_at):
        """`create()` (precondition: does not exist); on ALREADY_EXISTS read the stored item
        and return it. If the stored item is deleted between the two calls (GC), try again.
        A create refused with ALREADY_EXISTS is not billed (a failed RPC is not billed:
        googleapis/google-cloud-go#2765, Firestore maintainer), so it counts no write."""
        ref = self._ref(session, name)
        for _ in range(5):
            try:
                ref.create(self._doc(session, name, item, expires_at))
                self.usage["writes"] += 1
                return True, item
            except gexc.Conflict:  # 409 ALREADY_EXISTS
                pass
            stored = self._item(ref.get())
            self.usage["reads"] += 1
            if stored is not None:
                return False, stored
        raise RuntimeError(f"create_if_absent({session!r}, {name!r}): item keeps disappearing")

    def set_add(self, session, name, member, expires_at):
        """One atomic commit of two writes: `create` the member document
        `<set id>|<quote(member)>` and `Increment(1)` the set's `size` field; the commit
        response carries the incremented value (WriteResult.transform_results), so the
        resulting size comes back in the same round trip. If the member already exists the
        whole commit fails with ALREADY_EXISTS (nothing is incremented, nothing billed) and
        the current size is read (one read). No read-modify-write transaction: concurrent
        branches of a fan-in never contend for a lock, and each add costs O(1) whatever the
        fan-in width (an array rewritten in a transaction would move O(N^2) bytes for N
        branches).

        Priced against the alternatives (docs/gcp.md "What a transition costs"): 2 writes
        per add; a transaction that reads the counter costs 1 read + 2 writes; a member
        document plus a count() aggregation costs 1 write + 1 read per 1,000 members
        counted, cheaper up to ~2,000 members but O(N) per add (O(N^2) reads per fan-in of
        N) and without the exact size the port documents for this adapter."""
        ref = self._ref(session, name)
        member_ref = self.coll.document(f"{doc_id(session, name)}|{_quote(member)}")
        exp = _ts(expires_at)
        batch = self.client.batch()
        batch.create(member_ref, {"session": session, "name": name, "member": member,
                                  "expires_at": exp})
        batch.set(ref, {"session": session, "name": name, "size": firestore.Increment(1),
                        "expires_at": exp}, merge=True)
        try:
            results = batch.commit()
        except gexc.Conflict:  # already a member
            snap = ref.get()
            self.usage["reads"] += 1
            return int(snap.get("size")) if snap.exists else 0
        self.usage["writes"] += 2
        return int(results[1].transform_results[0].integer_value)

    def put(self, session, name, item, expires_at):
        self._ref(session, name).set(self._doc(session, name, item, expires_at))
        self.usage["writes"] += 1

    def _delete_refs(self, refs: list) -> None:
        for i in range(0, len(refs), _BATCH):
            batch = self.client.batch()
            for ref in refs[i:i + _BATCH]:
                batch.delete(ref)
            batch.commit()
            self.usage["deletes"] += len(refs[i:i + _BATCH])

    def delete(self, session, names: Iterable[str]):
        """Batched deletes of only what exists, plus the checkpoints and `result` by id
        (items, never sets: runtime/payload.py names them). Every other name may be a set
        (a counter document and one document per member, all carrying `name`) or an item:
        one query `session == s AND name IN [up to 30 names]` (ids only) finds them all,
        billed one read per document found, at least one per query. Equality and `in`
        filters only: served by single-field indexes, no composite index."""
        refs: dict[str, Any] = {}
        other: list[str] = []
        for n in dict.fromkeys(names):
            if n.startswith("ckpt/") or n == RESULT_KEY:
                ref = self._ref(session, n)
                refs[ref.id] = ref
            else:
                other.append(n)
        for i in range(0, len(other), _IN_LIMIT):
            q = (self.coll.where(filter=firestore.FieldFilter("session", "==", session))
                 .where(filter=firestore.FieldFilter("name", "in", other[i:i + _IN_LIMIT])).select([]))
            found = [snap.reference for snap in q.stream()]
            self.usage["reads"] += max(1, len(found))
            refs.update((r.id, r) for r in found)
        self._delete_refs(list(refs.values()))

    def sweep(self, session, keep):
        """Query the session's documents (id and `name` only) and delete all but `keep` (a
        kept set keeps its member documents). Returns the number of items and sets deleted
        (a set counts once, whatever its number of member documents)."""
        keep_set = set(keep)
        snaps = list(self.coll.where(filter=firestore.FieldFilter("session", "==", session))
                     .select(["name"]).stream())
        self.usage["reads"] += max(1, len(snaps))  # a query costs at least one read
        doomed = [s for s in snaps if s.get("name") not in keep_set]
        self._delete_refs([s.reference for s in doomed])
        return len({s.get("name") for s in doomed})

    # ------------------------------------------------------------------ helpers
    def dump(self, session: str | None = None) -> dict[str, list[str]]:
        """Names of every item and set, per session (tests and inspection)."""
        q = self.coll if session is None else self.coll.where(
            filter=firestore.FieldFilter("session", "==", session))
        out: dict[str, list[str]] = {}
        for snap in q.select(["session", "name", "member"]).stream():
            d = snap.to_dict() or {}
            if "member" not in d:
                out.setdefault(d["session"], []).append(d["name"])
        return out
