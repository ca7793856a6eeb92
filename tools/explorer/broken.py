"""Deliberately broken datastores, used to show that the explorer's checks can fail
(tests/tools/test_explorer.py). Neither is used by the real exploration."""

from __future__ import annotations

import copy

from .scheduler import Op
from .stepped import SteppedDatastore, _call


class NonAtomicCreateDatastore(SteppedDatastore):
    """`create_if_absent` as two steps, a read then a blind write: two executions can both
    see the item absent and both "create" it, the second overwriting the first."""

    def create_if_absent(self, session, name, item, expires_at):
        stored = _call(Op("get", f"(non-atomic create) read {name}", reads=frozenset({"ds:" + name}),
                          fn=lambda: self.mem.read_one(session, name)))
        if stored is not None:
            return False, stored
        from .scheduler import current_exec
        ex = current_exec()

        def write():
            self.mem.put(session, name, item, expires_at)
            self.journal.created(name, copy.deepcopy(item), ex)
        _call(Op("put", f"(non-atomic create) write {name}", writes=frozenset({"ds:" + name}), fn=write))
        return True, item


class StaleReadDatastore(SteppedDatastore):
    """Reads of checkpoints lag one write behind: each item read returns the version that
    preceded the latest write of that item (absent right after its creation)."""

    def __init__(self, mem, journal):
        super().__init__(mem, journal)
        self.prev: dict[str, object] = {}
        self.cur: dict[str, object] = {}

    def _remember(self, session, name):
        now = self.mem.read_one(session, name)
        if self.cur.get(name, None) != now:
            self.prev[name] = self.cur.get(name)
            self.cur[name] = now

    def get_many(self, session, names):
        names = list(names)
        if not names:
            return []

        def read(n):
            self._remember(session, n)
            if n.startswith("ckpt/"):
                return copy.deepcopy(self.prev.get(n))
            return self.mem.read_one(session, n)
        op = Op("get_many", f"(stale) get_many{names}", parts=names, part_fn=read,
                results=[None] * len(names), remaining=set(range(len(names))))
        return _call(op)
