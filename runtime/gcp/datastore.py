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

from ..ports import Datastore

_ESC = {"%": "%25", "/": "%2F", "|": "%7C"}
MAX_DOC_BYTES = 1_048_576  # Firestore document limit (1 MiB)
_BATCH = 400               # writes per commit (Firestore allows 500)


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
        """One BatchGetDocuments call (`Client.get_all`, no transaction): each document is
        read strongly consistently, after every write that completed before the call, but
        the documents are not promised to be one snapshot (runtime/ports.py); the response
        order is arbitrary, so results are mapped back by id. Order and duplicates kept."""
        uniq = list(dict.fromkeys(names))
        if not uniq:
            return []
        refs = [self._ref(session, n) for n in uniq]
        found: dict[str, dict[str, Any] | None] = {}
        for snap in self.client.get_all(refs):
            found[snap.id] = self._item(snap)
        self.usage["reads"] += len(refs)
        return [found.get(doc_id(session, n)) for n in names]

    # ------------------------------------------------------------------ writes
    def create_if_absent(self, session, name, item, expires_at):
        """`create()` (precondition: does not exist); on ALREADY_EXISTS read the stored item
        and return it. If the stored item is deleted between the two calls (GC), try again."""
        ref = self._ref(session, name)
        for _ in range(5):
            try:
                ref.create(self._doc(session, name, item, expires_at))
                self.usage["writes"] += 1
                return True, item
            except gexc.Conflict:  # 409 ALREADY_EXISTS
                self.usage["writes"] += 1
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
        whole commit fails with ALREADY_EXISTS (nothing is incremented) and the current size
        is read. No read-modify-write transaction: concurrent branches of a fan-in never
        contend for a lock, and each add costs O(1) whatever the fan-in width (an array
        rewritten in a transaction would move O(N^2) bytes for N branches)."""
        ref = self._ref(session, name)
        member_ref = self.coll.document(f"{doc_id(session, name)}|{_quote(member)}")
        exp = _ts(expires_at)
        batch = self.client.batch()
        batch.create(member_ref, {"session": session, "name": name, "member": member,
                                  "expires_at": exp})
        batch.set(ref, {"session": session, "name": name, "size": firestore.Increment(1),
                        "expires_at": exp}, merge=True)
        self.usage["writes"] += 2
        try:
            results = batch.commit()
        except gexc.Conflict:  # already a member
            snap = ref.get()
            self.usage["reads"] += 1
            return int(snap.get("size")) if snap.exists else 0
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
        """Batched deletes (a delete of an absent document succeeds). A set's member
        documents are found with one query per set name (prefix `fanin/` or `gc/`, or any
        name that is a set: the query is cheap when it matches nothing)."""
        refs = []
        for n in dict.fromkeys(names):
            refs.append(self._ref(session, n))
            if not n.startswith("ckpt/") and n != "result":
                q = (self.coll.where(filter=firestore.FieldFilter("session", "==", session))
                     .where(filter=firestore.FieldFilter("name", "==", n)).select([]))
                # equality filters only: served by single-field indexes, no composite index
                found = [snap.reference for snap in q.stream() if snap.id != refs[-1].id]
                self.usage["reads"] += max(1, len(found))
                refs += found
        self._delete_refs(refs)

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
            d = snap.to_dict()
            if "member" not in d:
                out.setdefault(d["session"], []).append(d["name"])
        return out
