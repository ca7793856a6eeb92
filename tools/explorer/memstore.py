"""In-memory, strongly consistent implementations of the runtime ports' storage side.

`MemDatastore` implements runtime.ports.Datastore exactly (items and sets share one name
space per session, as in runtime/local/datastore.py: `delete` removes items and sets,
`sweep` removes both except `keep`). `MemBlobStore` implements runtime.ports.BlobStore.
Both also keep an expiry time per entry and offer `purge_expired(now)`, the model of a TTL
policy (DynamoDB TTL, Firestore TTL) and of a bucket lifecycle rule.

These classes are plain and synchronous: the explorer's scheduler (tools.explorer.stepped)
decides *when* each operation happens; the operations themselves are atomic here.
"""

from __future__ import annotations

import copy
import threading
from typing import Any, Iterable, Sequence

from runtime.ports import BlobStore, Datastore


class MemDatastore(Datastore):
    """Datastore port on dicts. `max_item_bytes` is per instance so a workflow can make it small.

    State: `items[(session, name)] = (item, expires_at)` and
    `sets[(session, name)] = (members: set, expires_at)`."""

    def __init__(self, max_item_bytes: int = 350_000):
        self.max_item_bytes = max_item_bytes
        self.items: dict[tuple[str, str], tuple[dict[str, Any], float]] = {}
        self.sets: dict[tuple[str, str], tuple[set[str], float]] = {}
        self._lock = threading.RLock()  # the conformance suite calls from several threads

    # ---- single-item primitives (the stepped proxy serves get_many item by item with these)
    def read_one(self, session: str, name: str) -> dict[str, Any] | None:
        """A deep copy of one item, or None."""
        got = self.items.get((session, name))
        return copy.deepcopy(got[0]) if got is not None else None

    # ---- the port
    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        with self._lock:  # a snapshot here; the stepped proxy serves it item by item
            return [self.read_one(session, n) for n in names]

    def create_if_absent(self, session, name, item, expires_at):
        with self._lock:
            key = (session, name)
            if key in self.items:
                return False, copy.deepcopy(self.items[key][0])
            self.items[key] = (copy.deepcopy(item), expires_at)
            return True, item

    def set_add(self, session, name, member, expires_at):
        with self._lock:
            key = (session, name)
            members, exp = self.sets.get(key, (set(), expires_at))
            members = set(members) | {member}
            self.sets[key] = (members, exp)
            return len(members)

    def put(self, session, name, item, expires_at):
        with self._lock:
            self.items[(session, name)] = (copy.deepcopy(item), expires_at)

    def delete(self, session, names: Iterable[str]):
        with self._lock:
            for n in list(names):
                self.items.pop((session, n), None)
                self.sets.pop((session, n), None)

    def sweep(self, session, keep):
        with self._lock:
            keep = set(keep)
            gone = [k for k in self.items if k[0] == session and k[1] not in keep]
            gone_sets = [k for k in self.sets if k[0] == session and k[1] not in keep]
            for k in gone:
                del self.items[k]
            for k in gone_sets:
                del self.sets[k]
            return len(gone) + len(gone_sets)

    # ---- model helpers (not part of the port)
    def purge_expired(self, now: float) -> list[str]:
        """TTL policy: remove items and sets whose expires_at < now; returns their names."""
        gone = [k for k, (_, exp) in self.items.items() if exp < now]
        gone += [k for k, (_, exp) in self.sets.items() if exp < now]
        for k in gone:
            self.items.pop(k, None)
            self.sets.pop(k, None)
        return [n for _, n in gone]

    def names(self, session: str) -> list[str]:
        """Every item and set name of `session`, sorted."""
        return sorted({n for s, n in self.items if s == session} | {n for s, n in self.sets if s == session})


class MemBlobStore(BlobStore):
    """BlobStore port on a dict `blobs[(session, key)] = (bytes, expires_at)`.

    `retention(key)` gives a blob's lifetime in seconds (the model of a bucket lifecycle
    rule: intermediate blobs like intermediate items, `result/...` like the result);
    `clock()` gives the current virtual time."""

    def __init__(self, clock, retention):
        self.clock = clock
        self.retention = retention
        self.blobs: dict[tuple[str, str], tuple[bytes, float]] = {}

    def put(self, session, key, data):
        self.blobs[(session, key)] = (bytes(data), self.clock() + self.retention(key))
        return key

    def get(self, session, ref):
        got = self.blobs.get((session, ref))
        if got is None:
            raise KeyError(f"blob {session}/{ref} not found")
        return got[0]

    def delete(self, session, refs):
        for ref in refs:
            self.blobs.pop((session, ref), None)

    def sweep(self, session, keep=()):
        keep = set(keep)
        for k in [k for k in self.blobs if k[0] == session and k[1] not in keep]:
            del self.blobs[k]

    def purge_expired(self, now: float) -> list[str]:
        """Lifecycle rule: remove blobs whose expiry < now; returns their keys."""
        gone = [k for k, (_, exp) in self.blobs.items() if exp < now]
        for k in gone:
            del self.blobs[k]
        return [key for _, key in gone]

    def keys(self, session: str) -> list[str]:
        """Every blob key of `session`, sorted."""
        return sorted(k for s, k in self.blobs if s == session)
