"""The local target's deferred transaction, modelled for the explorer (docs/local.md
"Transactions", runtime/local/datastore.py `defer_from` / `commit_deferred`).

An execution's first create of a name starting with `ckpt/` or equal to `result` (its commit
point) opens a write transaction that every later datastore write of the execution joins;
the instance commits it when the execution ends (an execution that raises commits what it
wrote before the exception). While it is open:

- a multi-item read is one snapshot (one SQLite statement), one step;
- the holder reads its own writes; every other execution reads the last committed state;
- other executions' datastore writes wait for the lock (they are not enabled);
- a kill of the holder (the explorer's `crash` action, including the one on its final
  `txn_commit` step: "kill before commit") rolls every write of the transaction back;
- the queue rows of its continuations join it (the platform hears of them at the commit);
- blob operations are files, outside the transaction: they take effect at once, unless the
  workflow sets `deferred_blob_deletes` (blob deletes made inside the transaction then take
  effect at its commit and are lost with it).

`Txn` keeps an undo log: for each (kind, key) the holder wrote, the entry it had before the
transaction's first write of it (MISSING when absent). The committed view for other readers
and the rollback both come from that log, so no snapshot of the store is needed.
"""

from __future__ import annotations

import copy
from typing import Any

MISSING = object()
DEFER_PREFIX, DEFER_NAMES = "ckpt/", ("result",)


def opens_txn(kind: str, name: str) -> bool:
    """Does a datastore write of `kind` on `name` open the deferred transaction?"""
    return kind == "create" and (name.startswith(DEFER_PREFIX) or name in DEFER_NAMES)


class Txn:
    """One open deferred transaction, held by execution `holder` (an exec id)."""

    def __init__(self, holder: str):
        self.holder = holder
        self.undo: dict[tuple[str, tuple[str, str]], Any] = {}
        self.blob_deletes: list[tuple[str, list[str]]] = []
        self.msgs: list = []  # queue rows of continuations (scheduler.Message), posted at commit

    def touch(self, mem, kind: str, key: tuple[str, str]) -> None:
        """Before the holder writes entry `key` ('item' or 'set') of MemDatastore `mem`."""
        if (kind, key) in self.undo:
            return
        table = mem.items if kind == "item" else mem.sets
        self.undo[(kind, key)] = copy.deepcopy(table[key]) if key in table else MISSING

    def touch_session(self, mem, session: str, keep) -> None:
        """Before a sweep of `session` that keeps the names in `keep`."""
        keep = set(keep)
        for k in [k for k in mem.items if k[0] == session and k[1] not in keep]:
            self.touch(mem, "item", k)
        for k in [k for k in mem.sets if k[0] == session and k[1] not in keep]:
            self.touch(mem, "set", k)

    def committed_item(self, mem, key: tuple[str, str]) -> dict[str, Any] | None:
        """The item at `key` as another execution reads it (the committed state)."""
        if ("item", key) in self.undo:
            prev = self.undo[("item", key)]
            return None if prev is MISSING else copy.deepcopy(prev[0])
        got = mem.items.get(key)
        return copy.deepcopy(got[0]) if got is not None else None

    def rollback(self, mem) -> list[str]:
        """Undo every write of the transaction; returns the item names restored."""
        names = []
        for (kind, key), prev in self.undo.items():
            table = mem.items if kind == "item" else mem.sets
            if prev is MISSING:
                table.pop(key, None)
            else:
                table[key] = prev
            names.append(key[1])
        return names
