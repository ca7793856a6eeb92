"""Garbage collection of checkpoints, sets and blobs (seed 001 §3.5, docs/protocol.md).

Runs after an execution's continuations are invoked, so it is off the critical path:
- each parent checkpoint is collected once all of its consumers have checkpointed: directly
  when it has one consumer (a chain), through the set `gc/<parent>` otherwise, where the
  consumer whose add completes the set collects; the parent's blobs go with it;
- a fan-in target deletes its `fanin/` set (its inputs are its parents);
- a consumer that checkpointed deletes the blob its input came in (`payload/...`).

Modes (`runtime.gc`): `safe` replaces a collected checkpoint by a tombstone `{"gc": true}`,
so a duplicate delivered arbitrarily late is recognised and dropped; `eager` deletes it (seed
001 §3.5: a duplicate delivered after collection runs again); `none` collects nothing and
leaves it all to item expiry.
"""

from __future__ import annotations

from typing import Callable

from .payload import Parent, checkpoint_key, gc_key
from .ports import BlobStore, Datastore

__all__ = ["Collector", "GC_MODES"]

GC_MODES = ("safe", "eager", "none")


class Collector:
    """Collects what one execution's checkpoint made unnecessary.

    `expiry()` gives the expiry (Unix seconds) of the items it writes; `created` (a list
    owned by the execution) receives the names of items it may have created, so that the
    execution can delete them again if the session ended meanwhile."""

    def __init__(self, ds: Datastore, blobs: BlobStore, mode: str):
        self.ds = ds
        self.blobs = blobs
        self.mode = mode

    def collect(self, session: str, instance: str, parents: list[Parent], own_set: str | None,
                input_blob: str | None, expiry: Callable[[], float], created: list[str]) -> None:
        """Collect `parents` of the checkpointed invocation `instance`; delete its fan-in
        set `own_set` and its input blob `input_blob` (when given)."""
        if self.mode == "none":
            return
        if own_set is not None:
            self.ds.delete(session, [own_set])
        if input_blob is not None:
            self.blobs.delete(session, [input_blob])
        for parent in parents:
            if parent.consumers > 1:
                size = self.ds.set_add(session, gc_key(parent.name), instance, expiry())
                created.append(gc_key(parent.name))  # (maybe) created: deleted again if late
                if size < parent.consumers:
                    continue
            if self.mode == "safe":
                self.ds.put(session, checkpoint_key(parent.name), {"gc": True}, expiry())
                created.append(checkpoint_key(parent.name))
            else:
                self.ds.delete(session, [checkpoint_key(parent.name)])
            if parent.blobs:
                self.blobs.delete(session, parent.blobs)
            if parent.consumers > 1:
                self.ds.delete(session, [gc_key(parent.name)])
