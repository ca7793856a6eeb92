"""Datastore conformance suite: every `runtime.ports.Datastore` implementation must pass it.

Use it from an adapter's test module:

    from tests.conformance.datastore_suite import DatastoreSuite

    class TestMyStore(DatastoreSuite):
        @pytest.fixture
        def store(self):
            yield MyStore(...)

Each test uses a fresh session id, so a shared backing store is fine.
"""

from __future__ import annotations

import threading
import time
import uuid

import pytest

EXP = time.time() + 3600


class DatastoreSuite:
    """The behaviour the Unum protocol relies on (seed 001 §3.3-3.5, runtime/ports.py)."""

    @pytest.fixture
    def session(self):
        return f"s-{uuid.uuid4()}"

    def test_get_absent_is_none(self, store, session):
        assert store.get(session, "ckpt/A") is None
        assert store.get_many(session, ["a", "b"]) == [None, None]

    def test_create_if_absent_then_conflict_returns_stored(self, store, session):
        created, item = store.create_if_absent(session, "ckpt/A", {"v": {"x": 1}, "consumers": 2}, EXP)
        assert created and item["v"] == {"x": 1}
        created, item = store.create_if_absent(session, "ckpt/A", {"v": {"x": 2}, "consumers": 1}, EXP)
        assert not created
        assert item["v"] == {"x": 1} and item["consumers"] == 2
        assert store.get(session, "ckpt/A")["v"] == {"x": 1}

    def test_values_round_trip_json_types(self, store, session):
        value = {"s": "é☃", "i": 12345678901, "f": 1.5, "b": True, "n": None,
                 "l": [1, "two", [3.0]], "d": {"nested": {"k": []}}, "empty": {}}
        store.create_if_absent(session, "ckpt/J", {"v": value}, EXP)
        assert store.get(session, "ckpt/J")["v"] == value

    def test_get_many_keeps_order_and_duplicates(self, store, session):
        for n in ("x", "y", "z"):
            store.create_if_absent(session, n, {"v": n}, EXP)
        got = store.get_many(session, ["z", "missing", "x", "y", "x"])
        assert [g and g["v"] for g in got] == ["z", None, "x", "y", "x"]

    def test_get_many_large_batch(self, store, session):
        names = [f"ckpt/M-UnumIndex-{i}" for i in range(250)]
        for i, n in enumerate(names):
            store.put(session, n, {"v": i}, EXP)
        got = store.get_many(session, list(reversed(names)))
        assert [g["v"] for g in got] == list(reversed(range(250)))

    def test_sessions_are_isolated(self, store, session):
        other = session + "-other"
        store.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        assert store.get(other, "ckpt/A") is None
        created, _ = store.create_if_absent(other, "ckpt/A", {"v": 2}, EXP)
        assert created

    def test_set_add_returns_size_and_is_idempotent(self, store, session):
        assert store.set_add(session, "fanin/C", "A-UnumIndex-0", EXP) == 1
        assert store.set_add(session, "fanin/C", "A-UnumIndex-0", EXP) == 1
        assert store.set_add(session, "fanin/C", "A-UnumIndex-1", EXP) == 2
        assert store.set_add(session, "fanin/D", "A-UnumIndex-1", EXP) == 1

    def test_set_add_prefix_names_are_distinct(self, store, session):
        # the original implementation matched F1 vs F10 by prefix
        assert store.set_add(session, "fanin/T", "F1", EXP) == 1
        assert store.set_add(session, "fanin/T", "F10", EXP) == 2

    def test_concurrent_create_has_exactly_one_winner(self, store, session):
        results = []

        def worker(i):
            results.append(store.create_if_absent(session, "ckpt/race", {"v": i}, EXP))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [item["v"] for created, item in results if created]
        assert len(winners) == 1
        assert all(item["v"] == winners[0] for _, item in results)

    def test_concurrent_set_add_sees_each_size_once(self, store, session):
        sizes = []
        lock = threading.Lock()

        def worker(i):
            s = store.set_add(session, "fanin/race", f"B-UnumIndex-{i}", EXP)
            with lock:
                sizes.append(s)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(sizes) == list(range(1, 11))  # exactly one caller sees the full set

    def test_put_overwrites(self, store, session):
        store.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        store.put(session, "ckpt/A", {"gc": True}, EXP)
        assert store.get(session, "ckpt/A") == {"gc": True}

    def test_delete_items_and_sets(self, store, session):
        store.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        store.set_add(session, "gc/A", "B", EXP)
        store.delete(session, ["ckpt/A", "gc/A", "never-existed"])
        assert store.get(session, "ckpt/A") is None
        assert store.set_add(session, "gc/A", "C", EXP) == 1  # the set was really gone

    def test_sweep_keeps_only_named_items(self, store, session):
        store.create_if_absent(session, "result", {"status": "SUCCEEDED", "v": 1}, EXP)
        store.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        store.put(session, "ckpt/B", {"gc": True}, EXP)
        store.set_add(session, "fanin/C", "A", EXP)
        other = session + "-keep"
        store.create_if_absent(other, "ckpt/A", {"v": 1}, EXP)
        store.sweep(session, ["result"])
        assert store.get(session, "result")["v"] == 1
        assert store.get_many(session, ["ckpt/A", "ckpt/B"]) == [None, None]
        assert store.set_add(session, "fanin/C", "B", EXP) == 1
        assert store.get(other, "ckpt/A") is not None
