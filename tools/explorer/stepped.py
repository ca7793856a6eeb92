"""Port adapters that turn every datastore operation, blob operation and invoke into one
scheduler step (tools.explorer.scheduler). They implement runtime.ports exactly, on top
of tools.explorer.memstore; a multi-item `get_many` is served item by item, one step per
item, in the order the scheduler chooses (DynamoDB BatchGetItem and Firestore get_all are
not snapshots).

`Journal` receives what the invariant checker needs to know about each op (commits of
checkpoints, the result item, blob writes)."""

from __future__ import annotations

import copy
from typing import Any, Iterable, Sequence

from runtime.ports import BlobStore, Datastore, Invoker

from .memstore import MemBlobStore, MemDatastore
from .scheduler import Op, World, current_exec
from .txn import Txn, opens_txn


class Journal:
    """Hook called by the stepped ports after each effective write (overridden by the
    checker). `created(name, item, exec)` after a successful create_if_absent,
    `wrote(name, item, exec, prev)` after put (`prev`: the item it replaced, or None)."""

    def created(self, name: str, item: dict[str, Any], ex) -> None:
        return None

    def wrote(self, name: str, item: dict[str, Any], ex, prev: dict[str, Any] | None = None) -> None:
        return None


def _call(op: Op) -> Any:
    ex = current_exec()
    if ex is None:
        raise RuntimeError("a port was called outside an execution")
    return ex.call(op)


class SteppedDatastore(Datastore):
    """runtime.ports.Datastore over a MemDatastore, one scheduler step per operation."""

    def __init__(self, mem: MemDatastore, journal: Journal, world: World | None = None):
        self.mem = mem
        self.journal = journal
        self.max_item_bytes = mem.max_item_bytes
        self.world = world  # with world.txn_mode: the local target's deferred transaction

    # ---- the deferred transaction (tools.explorer.txn), when the world models it
    def _txn(self, ex, kind: str, name: str):
        """The transaction `ex` writes in (opening it at its commit point), or None."""
        w = self.world
        if w is None or not w.txn_mode or ex is None:
            return None
        if w.txn is None and opens_txn(kind, name):
            w.txn = Txn(ex.id)
        return w.txn if w.txn is not None and w.txn.holder == ex.id else None

    def _read(self, session: str, name: str, ex) -> dict[str, Any] | None:
        w = self.world
        if w is not None and w.txn is not None and (ex is None or w.txn.holder != ex.id):
            return w.txn.committed_item(self.mem, (session, name))
        return self.mem.read_one(session, name)

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        names = list(names)
        if not names:
            return []
        ex = current_exec()
        if self.world is not None and self.world.txn_mode:  # SQLite: one statement, one snapshot
            return _call(Op("get_many", f"get_many{names} (snapshot)",
                            reads=frozenset("ds:" + n for n in names),
                            fn=lambda: [self._read(session, n, ex) for n in names]))
        op = Op("get_many", f"get_many{names}", parts=names,
                part_fn=lambda n: self._read(session, n, ex),
                results=[None] * len(names), remaining=set(range(len(names))))
        return _call(op)

    def create_if_absent(self, session, name, item, expires_at):
        ex = current_exec()

        def do():
            txn = self._txn(ex, "create", name)
            if txn is not None:
                txn.touch(self.mem, "item", (session, name))
            created, stored = self.mem.create_if_absent(session, name, item, expires_at)
            if created:
                self.journal.created(name, copy.deepcopy(item), ex)
            return created, stored
        return _call(Op("create", f"create_if_absent {name}", writes=frozenset({"ds:" + name}), fn=do))

    def set_add(self, session, name, member, expires_at):
        ex = current_exec()

        def do():
            txn = self._txn(ex, "set_add", name)
            if txn is not None:
                txn.touch(self.mem, "set", (session, name))
            return self.mem.set_add(session, name, member, expires_at)
        return _call(Op("set_add", f"set_add {name} += {member}", writes=frozenset({"ds:" + name}), fn=do))

    def put(self, session, name, item, expires_at):
        ex = current_exec()

        def do():
            txn = self._txn(ex, "put", name)
            if txn is not None:
                txn.touch(self.mem, "item", (session, name))
            prev = self.mem.read_one(session, name)
            self.mem.put(session, name, item, expires_at)
            self.journal.wrote(name, copy.deepcopy(item), ex, prev)
        return _call(Op("put", f"put {name} {item if item.get('gc') else '{...}'}",
                        writes=frozenset({"ds:" + name}), fn=do))

    def delete(self, session, names: Iterable[str]):
        names = list(names)
        ex = current_exec()

        def do():
            txn = self._txn(ex, "delete", "")
            if txn is not None:
                for n in names:
                    txn.touch(self.mem, "item", (session, n))
                    txn.touch(self.mem, "set", (session, n))
            return self.mem.delete(session, names)
        return _call(Op("delete", f"delete {names}", writes=frozenset("ds:" + n for n in names), fn=do))

    def sweep(self, session, keep):
        keep = list(keep)
        ex = current_exec()

        def do():
            txn = self._txn(ex, "sweep", "")
            if txn is not None:
                txn.touch_session(self.mem, session, keep)
            return self.mem.sweep(session, keep)
        return _call(Op("sweep", f"sweep keep={keep}", writes=frozenset({"ds:*"}), fn=do))


class SteppedBlobStore(BlobStore):
    """runtime.ports.BlobStore over a MemBlobStore, one step per operation."""

    def __init__(self, mem: MemBlobStore, world: World | None = None, deferred_deletes: bool = False):
        self.mem = mem
        self.world = world
        self.deferred_deletes = deferred_deletes  # deletes inside a deferred transaction wait for it

    def put(self, session, key, data):
        data = bytes(data)
        return _call(Op("blob_put", f"blob put {key} ({len(data)} B)", writes=frozenset({"blob:" + key}),
                        fn=lambda: self.mem.put(session, key, data)))

    def get(self, session, ref):
        return _call(Op("blob_get", f"blob get {ref}", reads=frozenset({"blob:" + ref}),
                        fn=lambda: self.mem.get(session, ref)))

    def delete(self, session, refs):
        refs = list(refs)
        ex = current_exec()

        def do():
            w = self.world
            if self.deferred_deletes and w is not None and w.txn is not None and ex is not None \
                    and w.txn.holder == ex.id:
                w.txn.blob_deletes.append((session, refs))
                return None
            return self.mem.delete(session, refs)
        return _call(Op("blob_delete", f"blob delete {refs}", writes=frozenset("blob:" + r for r in refs),
                        fn=do))

    def sweep(self, session, keep=()):
        keep = list(keep)
        return _call(Op("blob_sweep", f"blob sweep keep={keep}", writes=frozenset({"blob:*"}),
                        fn=lambda: self.mem.sweep(session, keep)))


class SteppedInvoker(Invoker):
    """runtime.ports.Invoker: `invoke_many` is one step that posts one message per call to
    the platform queue (accepted atomically). `delay` is ignored (delivery order is chosen
    by the scheduler anyway) unless the world has a clock (`clock_mode`): then the message
    waits for the virtual clock, and the invoker has timers (`supports_delay`)."""

    def __init__(self, world: World, max_payload_bytes: int = 200_000):
        self.world = world
        self.max_payload_bytes = max_payload_bytes

    @property
    def supports_delay(self) -> bool:
        return bool(self.world.clock_mode)

    def invoke_many(self, calls, delay: float = 0.0) -> None:
        calls = [(fn, copy.deepcopy(p)) for fn, p in calls]
        ex = current_exec()

        def do():
            for fn, payload in calls:
                self.world.post(fn, payload, ex, delay)
        return _call(Op("invoke", f"invoke {[fn for fn, _ in calls]}", fn=do))
