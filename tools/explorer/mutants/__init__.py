"""Engine mutations (issue 22): each one a small module that replaces a named function or
method of the runtime in the running process (monkeypatch style, no textual patch of the
source), so a mutant still applies after unrelated edits of runtime/engine.py or
runtime/local/datastore.py, and fails loudly (MutantNotApplicable) when what it replaces is
gone.

A mutant module defines:
  NAME       the mutation's name (used on the command line)
  ABOUT      one line: what the engine then does wrong
  WORKFLOWS  the explorer workflows that should catch it (tools/explorer/workflows)
  TESTS      the test files of the suite to run under it
  INVISIBLE  None when the mutation can change an outcome a user sees (the explorer must
             catch it), else why it cannot
  WITNESS    (optional) (workflow, schedule): a schedule replayed under the mutant when
             the search does not reach one within the budget (reported as such)
  BOUNDS     (optional) search bound overrides for its workflows, e.g. {"preemptions": 0}
  apply(p)   install the mutation through `p` (a Patcher)

`tools/explore.py --mutants` (`make mutants`) runs them (tools/explorer/mutants/run.py);
`UNUM_MUTANT=<name>` applies one in every Python process started with
tools/explorer/mutants/site on PYTHONPATH (the test suite's local worker processes too).
"""

from __future__ import annotations

import importlib
import threading
from typing import Any, Callable

ORDER = ["plain_put_commit", "ingress_ignores_result", "attempts_not_recorded",
         "blob_delete_before_tombstone", "fanin_add_not_idempotent", "loser_keeps_blobs",
         "late_write_cleanup_off", "transition_count_from_payload", "wait_timer_without_delay",
         "quorum_claim_not_atomic", "shuffle_fires_early", "fused_commits_intermediate",
         "fused_parallel_reversed", "shuffle_gc_before_invoke", "quorum_slots_freed_on_firing",
         "gc_set_size_off_by_one", "fused_parallel_shared_input", "ingress_result_with_checkpoint_batch",
         "batched_map_ignores_offset"]


class MutantNotApplicable(RuntimeError):
    """What a mutant replaces no longer exists (renamed or removed)."""


class Patcher:
    """Replaces attributes and restores them on `undo()` (or on leaving a `with`)."""

    def __init__(self):
        self._undo: list[tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, make: Callable[[Any], Any]) -> None:
        """Set `owner.name` to `make(original)`; MutantNotApplicable when it is missing."""
        if not hasattr(owner, name):
            raise MutantNotApplicable(f"{getattr(owner, '__name__', owner)}.{name} does not exist")
        old = owner.__dict__[name] if name in getattr(owner, "__dict__", {}) else getattr(owner, name)
        self._undo.append((owner, name, old))
        setattr(owner, name, make(getattr(owner, name)))

    def undo(self) -> None:
        while self._undo:
            owner, name, old = self._undo.pop()
            setattr(owner, name, old)

    def __enter__(self) -> "Patcher":
        return self

    def __exit__(self, *exc) -> None:
        self.undo()


_phase = threading.local()


def in_phase(name: str) -> bool:
    """Is the calling thread inside an engine method marked with `mark_phase(name)`?"""
    return name in getattr(_phase, "names", ())


def mark_phase(p: Patcher, owner: Any, method: str, name: str) -> None:
    """While `owner.method` runs in a thread, `in_phase(name)` is true in that thread."""
    def make(orig):
        def marked(*a, **k):
            names = getattr(_phase, "names", ())
            _phase.names = names + (name,)
            try:
                return orig(*a, **k)
            finally:
                _phase.names = names
        return marked
    p.replace(owner, method, make)


class PortProxy:
    """A port that forwards every call to `inner` except the methods defined on a subclass."""

    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class DatastoreProxy(PortProxy):
    """A datastore proxy whose `get` goes through its own `get_many` (as the port's does)."""

    def get(self, session, name):
        return self.get_many(session, [name])[0]


def wrap_engine_ports(p: Patcher, ds: Callable[[Any], Any] | None = None,
                      blobs: Callable[[Any], Any] | None = None,
                      invoker: Callable[[Any], Any] | None = None) -> None:
    """Every Engine built from now on gets its ports wrapped (datastore, invoker, blobs are
    its 3rd-5th constructor arguments, runtime/engine.py)."""
    from runtime.engine import Engine

    def make(orig):
        def init(self, ir, handler, datastore, inv, blob_store, *a, **k):
            orig(self, ir, handler, ds(datastore) if ds else datastore,
                 invoker(inv) if invoker else inv, blobs(blob_store) if blobs else blob_store, *a, **k)
        return init
    p.replace(Engine, "__init__", make)


def load(name: str):
    """The mutant module called `name` (its NAME, or its file name)."""
    for m in ORDER:
        mod = importlib.import_module(f"{__name__}.{m}")
        if name in (m, mod.NAME):
            return mod
    raise KeyError(f"unknown mutant {name!r}; known: "
                   f"{', '.join(importlib.import_module(f'{__name__}.{m}').NAME for m in ORDER)}")


def apply(name: str) -> Patcher:
    """Install mutant `name` in this process; returns the Patcher that undoes it."""
    p = Patcher()
    load(name).apply(p)
    return p
