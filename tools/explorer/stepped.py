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


class Journal:
    """Hook called by the stepped ports after each effective write (overridden by the
    checker). `created(name, item, exec)` after a successful create_if_absent,
    `wrote(name, item, exec)` after put."""

    def created(self, name: str, item: dict[str, Any], ex) -> None:
        return None

    def wrote(self, name: str, item: dict[str, Any], ex) -> None:
        return None


def _call(op: Op) -> Any:
    ex = current_exec()
    if ex is None:
        raise RuntimeError("a port was called outside an execution")
    return ex.call(op)


class SteppedDatastore(Datastore):
    """runtime.ports.Datastore over a MemDatastore, one scheduler step per operation."""

    def __init__(self, mem: MemDatastore, journal: Journal):
        self.mem = mem
        self.journal = journal
        self.max_item_bytes = mem.max_item_bytes

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        names = list(names)
        if not names:
            return []
        op = Op("get_many", f"get_many{names}", parts=names,
                part_fn=lambda n: self.mem.read_one(session, n),
                results=[None] * len(names), remaining=set(range(len(names))))
        return _call(op)

    def create_if_absent(self, session, name, item, expires_at):
        ex = current_exec()

        def do():
            created, stored = self.mem.create_if_absent(session, name, item, expires_at)
            if created:
                self.journal.created(name, copy.deepcopy(item), ex)
            return created, stored
        return _call(Op("create", f"create_if_absent {name}", writes=frozenset({"ds:" + name}), fn=do))

    def set_add(self, session, name, member, expires_at):
        return _call(Op("set_add", f"set_add {name} += {member}", writes=frozenset({"ds:" + name}),
                        fn=lambda: self.mem.set_add(session, name, member, expires_at)))

    def put(self, session, name, item, expires_at):
        ex = current_exec()

        def do():
            self.mem.put(session, name, item, expires_at)
            self.journal.wrote(name, copy.deepcopy(item), ex)
        return _call(Op("put", f"put {name} {item if item.get('gc') else '{...}'}",
                        writes=frozenset({"ds:" + name}), fn=do))

    def delete(self, session, names: Iterable[str]):
        names = list(names)
        return _call(Op("delete", f"delete {names}", writes=frozenset("ds:" + n for n in names),
                        fn=lambda: self.mem.delete(session, names)))

    def sweep(self, session, keep):
        keep = list(keep)
        return _call(Op("sweep", f"sweep keep={keep}", writes=frozenset({"ds:*"}),
                        fn=lambda: self.mem.sweep(session, keep)))


class SteppedBlobStore(BlobStore):
    """runtime.ports.BlobStore over a MemBlobStore, one step per operation."""

    def __init__(self, mem: MemBlobStore):
        self.mem = mem

    def put(self, session, key, data):
        data = bytes(data)
        return _call(Op("blob_put", f"blob put {key} ({len(data)} B)", writes=frozenset({"blob:" + key}),
                        fn=lambda: self.mem.put(session, key, data)))

    def get(self, session, ref):
        return _call(Op("blob_get", f"blob get {ref}", reads=frozenset({"blob:" + ref}),
                        fn=lambda: self.mem.get(session, ref)))

    def delete(self, session, refs):
        refs = list(refs)
        return _call(Op("blob_delete", f"blob delete {refs}", writes=frozenset("blob:" + r for r in refs),
                        fn=lambda: self.mem.delete(session, refs)))

    def sweep(self, session, keep=()):
        keep = list(keep)
        return _call(Op("blob_sweep", f"blob sweep keep={keep}", writes=frozenset({"blob:*"}),
                        fn=lambda: self.mem.sweep(session, keep)))


class SteppedInvoker(Invoker):
    """runtime.ports.Invoker: `invoke_many` is one step that posts one message per call to
    the platform queue (accepted atomically). `delay` is ignored: delivery order is chosen
    by the scheduler anyway."""

    def __init__(self, world: World, max_payload_bytes: int = 200_000):
        self.world = world
        self.max_payload_bytes = max_payload_bytes

    def invoke_many(self, calls, delay: float = 0.0) -> None:
        calls = [(fn, copy.deepcopy(p)) for fn, p in calls]
        ex = current_exec()

        def do():
            for fn, payload in calls:
                self.world.post(fn, payload, ex)
        return _call(Op("invoke", f"invoke {[fn for fn, _ in calls]}", fn=do))
