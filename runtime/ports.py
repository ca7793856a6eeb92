"""The ports through which the runtime core reaches the platform.

Source: seed 001 §4 (a FaaS platform with asynchronous invocation and a strongly consistent
data store with atomic create and set operations). Every adapter (local SQLite, DynamoDB,
Firestore) implements `Datastore` and must pass tests/conformance/datastore_suite.py.

Items are JSON objects addressed by (session, name). Every write carries `expires_at`
(Unix seconds) so that a TTL policy removes what a crash left behind.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Iterable, Sequence


class Datastore(ABC):
    """A strongly consistent key-value store with atomic create and set-add.

    `max_item_bytes`: largest JSON item (encoded) the store accepts; bigger checkpoint values
    go to the BlobStore with a pointer in the item.
    """

    max_item_bytes: int = 350_000

    @abstractmethod
    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        """Read `names` as one consistent snapshot; returns items in the order asked (None for
        absent ones). Strongly consistent: sees every write that completed before the call."""

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
        """Atomically add `member` to the set `name` (created when absent) and return the
        number of members of the resulting set, in the same round trip.

        Adding an existing member changes nothing (idempotent, so duplicate executions are
        harmless). The size, not the member list, is returned: callers only add members that
        belong to a known expected set, so size == expected size means complete, and a
        10,000-branch fan-in does not move O(N^2) names."""

    @abstractmethod
    def put(self, session: str, name: str, item: dict[str, Any], expires_at: float) -> None:
        """Create or overwrite an item (used for GC tombstones)."""

    @abstractmethod
    def delete(self, session: str, names: Iterable[str]) -> None:
        """Delete items or sets; absent names are ignored."""

    @abstractmethod
    def sweep(self, session: str, keep: Sequence[str]) -> int:
        """Delete every item of `session` except `keep`; returns how many were deleted."""


class BlobStore(ABC):
    """Object storage for values too large for a datastore item or an invocation payload."""

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
