"""Adversarial reads: a `Datastore` wrapper that serves `get_many` item by item.

runtime/ports.py promises that `get_many` reads each item strongly consistently (after every
write that completed before the call) but NOT that the items form one snapshot: DynamoDB
BatchGetItem and Firestore `get_all` read items independently. `AdversarialReads` makes the
weakest behaviour the contract allows happen on purpose, so that code above the port (the
engine, tests) and the conformance suite itself can be run against it:

- every distinct name is read with its own `inner.get_many(session, [name])` call;
- in an adversarial order: `reverse` (last asked, first read) or `shuffle` (seeded);
- between two item reads the `between` hook runs; a test uses it to complete a write
  (from another thread or another client) while the multi-item read is in flight.

Usage:

    ds = AdversarialReads(store, order="reverse", between=lambda session, done, nxt: ...)
    ds.get_many(session, ["a", "b"])   # reads b, calls between(session, ["b"], "a"), reads a
"""

from __future__ import annotations

import random
import threading
from typing import Any, Callable, Iterable, Sequence

from runtime.ports import Datastore

Hook = Callable[[str, list, str], None]


class AdversarialReads(Datastore):
    """Delegates to `inner`, except that `get_many` is served one item per inner call.

    `order`: "reverse" or "shuffle"; `seed`: the shuffle's seed; `between(session, done,
    next_name)`: called before each item read but the first (`done` = names read so far).
    `item_calls` counts the inner single-item reads (tests check the mode is really on)."""

    def __init__(self, inner: Datastore, order: str = "reverse", seed: int = 0,
                 between: Hook | None = None):
        if order not in ("reverse", "shuffle"):
            raise ValueError(f"order must be 'reverse' or 'shuffle', not {order!r}")
        self.inner = inner
        self.order = order
        self.rng = random.Random(seed)
        self.between = between
        self.max_item_bytes = inner.max_item_bytes
        self.item_calls = 0
        self._lock = threading.Lock()

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        uniq = list(dict.fromkeys(names))
        if self.order == "reverse":
            uniq.reverse()
        else:
            with self._lock:
                self.rng.shuffle(uniq)
        found: dict[str, dict[str, Any] | None] = {}
        for i, n in enumerate(uniq):
            if i and self.between is not None:
                self.between(session, list(uniq[:i]), n)
            found[n] = self.inner.get_many(session, [n])[0]
            with self._lock:
                self.item_calls += 1
        return [found[n] for n in names]

    def create_if_absent(self, session, name, item, expires_at):
        return self.inner.create_if_absent(session, name, item, expires_at)

    def set_add(self, session, name, member, expires_at):
        return self.inner.set_add(session, name, member, expires_at)

    def put(self, session, name, item, expires_at):
        return self.inner.put(session, name, item, expires_at)

    def delete(self, session, names: Iterable[str]):
        return self.inner.delete(session, names)

    def sweep(self, session, keep):
        return self.inner.sweep(session, keep)


def run_concurrently(fn: Callable[[], Any]) -> Any:
    """Run `fn` on another thread and wait for it (a write that is concurrent with the
    caller's in-flight read and has completed when this returns); re-raises its error."""
    out: dict[str, Any] = {}

    def target():
        try:
            out["v"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            out["e"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join()
    if "e" in out:
        raise out["e"]
    return out.get("v")
