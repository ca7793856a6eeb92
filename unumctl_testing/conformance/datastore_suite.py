"""Datastore conformance suite: every `runtime.ports.Datastore` implementation must pass it.

Use it from an adapter's test module: a base class provides the `store` fixture (and
optionally the fixtures below), listed before the suites:

    from unumctl_testing.conformance.datastore_suite import (
        AdversarialReadsSuite, DatastoreSuite, LargeSetSuite)

    class MyStore:
        @pytest.fixture
        def store(self):
            yield MyStore(...)

    class TestMyStore(MyStore, DatastoreSuite, LargeSetSuite): ...
    class TestMyStoreAdversarialReads(MyStore, AdversarialReadsSuite): ...

Tests use the `ds` fixture: the store itself in `DatastoreSuite`, the store wrapped in
`AdversarialReads` (get_many served item by item, reversed) in `AdversarialReadsSuite`,
which reruns every contract test that way and adds writes between item reads.
Optional fixtures an adapter's base class may override:
  `other_store`  a second client of the same backing store (another connection), used for
                 the writes made between item reads (default: `store`);
  `raw_names`    callable(session) -> every raw key/document of the session in the backing
                 store, members and counters included (default: None, check skipped);
  `meter`        an object with `reset()`, `calls` (API calls since reset) and
                 `response_bytes` (list of response sizes in bytes) observing the store's
                 client (default: None, response-size checks skipped).
Large-set sizes: `LargeSetSuite.large_n` per adapter class; UNUM_LONG_SETS=1 runs the long
version (`large_n_long`).

Each test uses a fresh session id, so a shared backing store is fine.
"""

from __future__ import annotations

import os
import threading
import time
import uuid

import pytest

from .adversarial import AdversarialReads, run_concurrently

EXP = time.time() + 3600
LONG = os.environ.get("UNUM_LONG_SETS") == "1"


class SuiteFixtures:
    """Default fixtures of the suites; an adapter's base class listed before the suites in
    the test class's bases overrides them (and provides `store`)."""

    @pytest.fixture
    def session(self):
        return f"s-{uuid.uuid4()}"

    @pytest.fixture
    def ds(self, store):
        return store

    @pytest.fixture
    def other_store(self, store):
        return store

    @pytest.fixture
    def raw_names(self):
        return None

    @pytest.fixture
    def meter(self):
        return None


class DatastoreSuite(SuiteFixtures):
    """The behaviour the Unum protocol relies on (seed 001 §3.3-3.5, runtime/ports.py).

    `exact_concurrent_sizes`: the adapter returns exactly the size right after each add even
    when adds overlap (SQLite, Firestore); False for adapters that read the size back after
    the add (DynamoDB), where overlapping adds may both see the complete size."""

    exact_concurrent_sizes = True
    # a reason to skip the concurrent set_add test when the *emulator* is not linearizable
    concurrent_set_add_skip: str | None = None

    def test_get_absent_is_none(self, ds, session):
        assert ds.get(session, "ckpt/A") is None
        assert ds.get_many(session, ["a", "b"]) == [None, None]

    def test_create_if_absent_then_conflict_returns_stored(self, ds, session):
        created, item = ds.create_if_absent(session, "ckpt/A", {"v": {"x": 1}, "consumers": 2}, EXP)
        assert created and item["v"] == {"x": 1}
        created, item = ds.create_if_absent(session, "ckpt/A", {"v": {"x": 2}, "consumers": 1}, EXP)
        assert not created
        assert item["v"] == {"x": 1} and item["consumers"] == 2
        assert ds.get(session, "ckpt/A")["v"] == {"x": 1}

    def test_values_round_trip_json_types(self, ds, session):
        value = {"s": "é☃", "i": 12345678901, "f": 1.5, "b": True, "n": None,
                 "l": [1, "two", [3.0]], "d": {"nested": {"k": []}}, "empty": {}}
        ds.create_if_absent(session, "ckpt/J", {"v": value}, EXP)
        assert ds.get(session, "ckpt/J")["v"] == value

    def test_get_many_keeps_order_and_duplicates(self, ds, session):
        for n in ("x", "y", "z"):
            ds.create_if_absent(session, n, {"v": n}, EXP)
        got = ds.get_many(session, ["z", "missing", "x", "y", "x"])
        assert [g and g["v"] for g in got] == ["z", None, "x", "y", "x"]

    def test_get_many_large_batch(self, ds, session):
        names = [f"ckpt/M-UnumIndex-{i}" for i in range(250)]
        for i, n in enumerate(names):
            ds.put(session, n, {"v": i}, EXP)
        got = ds.get_many(session, list(reversed(names)))
        assert [g["v"] for g in got] == list(reversed(range(250)))

    def test_sessions_are_isolated(self, ds, session):
        other = session + "-other"
        ds.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        assert ds.get(other, "ckpt/A") is None
        created, _ = ds.create_if_absent(other, "ckpt/A", {"v": 2}, EXP)
        assert created

    def test_set_add_returns_size_and_is_idempotent(self, ds, session):
        assert ds.set_add(session, "fanin/C", "A-UnumIndex-0", EXP) == 1
        assert ds.set_add(session, "fanin/C", "A-UnumIndex-0", EXP) == 1
        assert ds.set_add(session, "fanin/C", "A-UnumIndex-1", EXP) == 2
        assert ds.set_add(session, "fanin/D", "A-UnumIndex-1", EXP) == 1

    def test_set_add_prefix_names_are_distinct(self, ds, session):
        # the original implementation matched F1 vs F10 by prefix
        assert ds.set_add(session, "fanin/T", "F1", EXP) == 1
        assert ds.set_add(session, "fanin/T", "F10", EXP) == 2

    def test_concurrent_create_has_exactly_one_winner(self, ds, session):
        results = []

        def worker(i):
            results.append(ds.create_if_absent(session, "ckpt/race", {"v": i}, EXP))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [item["v"] for created, item in results if created]
        assert len(winners) == 1
        assert all(item["v"] == winners[0] for _, item in results)

    def test_concurrent_set_add_sees_each_size_once(self, ds, session):
        if self.concurrent_set_add_skip:
            pytest.skip(self.concurrent_set_add_skip)
        sizes = []
        lock = threading.Lock()

        def worker(i):
            s = ds.set_add(session, "fanin/race", f"B-UnumIndex-{i}", EXP)
            with lock:
                sizes.append(s)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert max(sizes) == 10 and all(1 <= s <= 10 for s in sizes), sizes  # someone sees it complete
        if self.exact_concurrent_sizes:
            assert sorted(sizes) == list(range(1, 11))  # exactly one caller sees the full set
        assert ds.set_add(session, "fanin/race", "B-UnumIndex-0", EXP) == 10

    def test_put_overwrites(self, ds, session):
        ds.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        ds.put(session, "ckpt/A", {"gc": True}, EXP)
        assert ds.get(session, "ckpt/A") == {"gc": True}

    def test_delete_items_and_sets(self, ds, session):
        ds.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        ds.set_add(session, "gc/A", "B", EXP)
        ds.delete(session, ["ckpt/A", "gc/A", "never-existed"])
        assert ds.get(session, "ckpt/A") is None
        assert ds.set_add(session, "gc/A", "C", EXP) == 1  # the set was really gone

    def test_sweep_keeps_only_named_items(self, ds, session):
        ds.create_if_absent(session, "result", {"status": "SUCCEEDED", "v": 1}, EXP)
        ds.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        ds.put(session, "ckpt/B", {"gc": True}, EXP)
        ds.set_add(session, "fanin/C", "A", EXP)
        other = session + "-keep"
        ds.create_if_absent(other, "ckpt/A", {"v": 1}, EXP)
        ds.sweep(session, ["result"])
        assert ds.get(session, "result")["v"] == 1
        assert ds.get_many(session, ["ckpt/A", "ckpt/B"]) == [None, None]
        assert ds.set_add(session, "fanin/C", "B", EXP) == 1
        assert ds.get(other, "ckpt/A") is not None


class LargeSetSuite(SuiteFixtures):
    """Sets far beyond one item/document: sizes stay exact for sequential adds, every add
    stays small on the wire, re-adds are idempotent, and delete/sweep remove every member
    (re-adding an old member afterwards starts a new set at 1).

    `large_n` members by default, `large_n_long` with UNUM_LONG_SETS=1;
    `max_response_bytes`: bound on each API response while adding (checked when the adapter
    provides `meter`); `max_calls_per_add`: bound on API calls per add (idem)."""

    large_n = 20_000
    large_n_long = 20_000
    max_response_bytes = 2_000
    max_calls_per_add = 3

    def _n(self) -> int:
        return self.large_n_long if LONG else self.large_n

    @staticmethod
    def _fill(ds, session, name, n):
        for i in range(n):
            size = ds.set_add(session, name, f"W-UnumIndex-{i}", EXP)
            if size != i + 1:
                pytest.fail(f"add #{i + 1} of {name} returned size {size}")

    def test_large_set_sizes_small_responses_and_delete(self, ds, session, meter, raw_names):
        n = self._n()
        ds.set_add(session, "gc/other", "x", EXP)
        if meter is not None:
            meter.reset()
        self._fill(ds, session, "fanin/J", n)
        if meter is not None:
            assert meter.calls <= self.max_calls_per_add * n, meter.calls
            assert max(meter.response_bytes) <= self.max_response_bytes, max(meter.response_bytes)
        for i in (0, n // 2, n - 1):  # idempotent re-adds return the current size
            assert ds.set_add(session, "fanin/J", f"W-UnumIndex-{i}", EXP) == n
        if raw_names is not None:
            assert raw_names(session).count("fanin/J") >= n  # every member is stored
        ds.delete(session, ["fanin/J"])
        if raw_names is not None:
            left = raw_names(session)
            assert "fanin/J" not in left and "gc/other" in left
        assert ds.set_add(session, "fanin/J", f"W-UnumIndex-{n - 1}", EXP) == 1
        assert ds.set_add(session, "fanin/J", "W-UnumIndex-0", EXP) == 2
        assert ds.set_add(session, "gc/other", "x", EXP) == 1  # the other set was untouched

    def test_large_set_sweep_clears_members(self, ds, session, raw_names):
        n = max(2, self._n() // 2)
        ds.create_if_absent(session, "result", {"status": "SUCCEEDED", "v": 1}, EXP)
        ds.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        self._fill(ds, session, "fanin/J", n)
        self._fill(ds, session, "gc/S", 3)
        assert ds.sweep(session, ["result"]) == 3  # ckpt/A and two sets, whatever their size
        if raw_names is not None:
            assert set(raw_names(session)) == {"result"}
        assert ds.get(session, "result")["v"] == 1
        assert ds.set_add(session, "fanin/J", "W-UnumIndex-0", EXP) == 1
        assert ds.set_add(session, "gc/S", "W-UnumIndex-2", EXP) == 1


class _SpyReads:
    """Records the names of every get_many call, then delegates."""

    def __init__(self, inner):
        self.inner = inner
        self.max_item_bytes = inner.max_item_bytes
        self.calls: list[list[str]] = []

    def get_many(self, session, names):
        self.calls.append(list(names))
        return self.inner.get_many(session, names)


class AdversarialReadsSuite(DatastoreSuite):
    """Every contract test again with `get_many` served item by item in reverse order
    (unumctl_testing/conformance/adversarial.py), plus writes completed by another client between the
    item reads of one `get_many`: each item must reflect every write that completed before
    that item was read (strong consistency per item), and the result may mix states from
    before and after the write (no snapshot is promised, runtime/ports.py)."""

    @pytest.fixture
    def ds(self, store):
        return AdversarialReads(store, order="reverse")

    def test_mode_reads_one_item_per_call_in_reverse(self, store, session):
        for n in ("a", "b", "c"):
            store.put(session, n, {"v": n}, EXP)
        spy = _SpyReads(store)
        got = AdversarialReads(spy, order="reverse").get_many(session, ["a", "b", "missing", "c", "a"])
        assert [g and g["v"] for g in got] == ["a", "b", None, "c", "a"]
        assert spy.calls == [["c"], ["missing"], ["b"], ["a"]]

    def test_shuffled_reads_return_items_in_the_order_asked(self, store, session):
        names = [f"ckpt/W-UnumIndex-{i}" for i in range(60)]
        for i, n in enumerate(names):
            store.put(session, n, {"v": i}, EXP)
        adv = AdversarialReads(store, order="shuffle", seed=7)
        assert [g["v"] for g in adv.get_many(session, names)] == list(range(60))
        assert adv.item_calls == 60

    def test_overwrite_between_item_reads_is_seen_by_later_reads(self, store, other_store, session):
        store.create_if_absent(session, "ckpt/A", {"v": 1}, EXP)
        store.create_if_absent(session, "ckpt/B", {"v": 1}, EXP)
        fired = []

        def between(sess, done, nxt):
            assert (done, nxt) == (["ckpt/B"], "ckpt/A")
            fired.append(1)
            run_concurrently(lambda: (other_store.put(sess, "ckpt/A", {"gc": True}, EXP),
                                      other_store.put(sess, "ckpt/B", {"gc": True}, EXP)))

        got = AdversarialReads(store, order="reverse", between=between).get_many(
            session, ["ckpt/A", "ckpt/B"])
        assert fired == [1]
        # B was read before the writes, A after them: a mixed result the contract allows,
        # and A must not be stale
        assert got == [{"gc": True}, {"v": 1}]
        assert store.get_many(session, ["ckpt/A", "ckpt/B"]) == [{"gc": True}, {"gc": True}]

    def test_create_and_delete_between_item_reads(self, store, other_store, session):
        store.create_if_absent(session, "ckpt/X", {"v": "x"}, EXP)
        writes = [lambda s: other_store.create_if_absent(s, "result", {"status": "SUCCEEDED"}, EXP),
                  lambda s: other_store.delete(s, ["ckpt/X"])]

        def between(sess, done, nxt):
            run_concurrently(lambda: writes.pop(0)(sess))

        got = AdversarialReads(store, order="reverse", between=between).get_many(
            session, ["ckpt/X", "result", "ckpt/Y"])
        # read order: ckpt/Y (absent), [result created], result, [ckpt/X deleted], ckpt/X
        assert got == [None, {"status": "SUCCEEDED"}, None]
        assert writes == []

    def test_set_add_between_item_reads(self, store, other_store, session):
        store.create_if_absent(session, "ckpt/P", {"v": 1}, EXP)
        sizes = []

        def between(sess, done, nxt):
            sizes.append(run_concurrently(lambda: other_store.set_add(sess, "gc/P", nxt, EXP)))

        adv = AdversarialReads(store, order="reverse", between=between)
        got = adv.get_many(session, ["ckpt/P", "ckpt/Q", "ckpt/R"])
        assert got == [{"v": 1}, None, None]
        assert sizes == [1, 2]
        assert store.set_add(session, "gc/P", "ckpt/P", EXP) == 2  # already a member
