"""Windows across sessions (runtime/triggers/window.py, docs/ir.md "Windows"): ByBatchSize and
ByTime on the real engine and the SQLite datastore, with duplicate deliveries, a crash of the
producer after it claimed its slot, a late arrival after a window closed, and the IR's
one-line errors."""

from __future__ import annotations

import pytest

from runtime.engine import Engine
from runtime.errors import IRError
from runtime.ir import build_workflow, load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.triggers import window


class Queue(Invoker):
    """Records invocations (function, payload, delay) instead of delivering them."""

    def __init__(self, supports_delay: bool = False):
        self.supports_delay = supports_delay
        self.calls: list[tuple[str, dict, float]] = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend((fn, p, delay) for fn, p in calls)


class World:
    """A producer P (Window edge into `edge`) and a consumer C that returns its input and
    window context, on one SQLite datastore."""

    def __init__(self, tmp_path, edge: dict, delay: bool = False, ds=None, options=None, clock=None):
        self.ds = ds or SqliteDatastore(tmp_path / "db")
        self.blobs = FileBlobStore(tmp_path / "b")
        self.q = Queue(delay)
        p_ir = load_function({"Name": "P", "Start": True, "Next": {"Name": "C", "Type": "Window", **edge}})
        c_ir = load_function({"Name": "C"})
        build_workflow([(p_ir, "P.yaml"), (c_ir, "C.yaml")])
        clocked = {"clock": clock} if clock is not None else {}
        self.engines = {
            "P": Engine(p_ir, lambda e, c: e, self.ds, self.q, self.blobs, options, **clocked),
            "C": Engine(c_ir, lambda e, c: {"objects": e, "window": c.extra["Window"]},
                        self.ds, self.q, self.blobs, options, **clocked)}

    def ingest(self, i: int):
        return self.engines["P"].handle({"Session": f"ev{i}", "Data": {"Source": "http", "Value": i}})

    def deliver(self, keep: bool = False):
        """Deliver every queued call (twice when `keep`: a duplicate delivery) until none is left."""
        while self.q.calls:
            fn, payload, _ = self.q.calls.pop(0)
            self.engines[fn].handle(payload)
            if keep:
                self.engines[fn].handle(payload)

    def results(self) -> dict[int, list]:
        out = {}
        j = 0
        while True:
            item = self.ds.get(window.window_session("clicks", j), "result")
            if item is None:
                return out
            assert item["v"]["window"] == {"Name": "clicks", "Id": j, "Size": len(item["v"]["objects"])}
            out[j] = item["v"]["objects"]
            j += 1


def test_batch_windows_take_each_object_once_despite_duplicates(tmp_path):
    """10 objects, each producer delivered twice and each firing twice: windows of 3 fire
    with [0,1,2], [3,4,5], [6,7,8]; object 9 waits for the next window. Fails if a duplicate
    that finds its object's slot taken claims another slot (window.add's `obj` check)."""
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 3})
    spec = w.engines["P"].ir.next[0].window
    for i in range(10):
        w.ingest(i)
        assert w.ingest(i).status == "dropped"  # a duplicate delivered after the session ended
        if i:  # the egress of a duplicate that overlapped the winner (it adopted the checkpoint)
            window.add(w.ds, w.blobs, w.q, spec, f"ev{i - 1}/P", i - 1, 1e12, now=w.engines["P"].clock())
    assert [fn for fn, _, _ in w.q.calls] == ["C", "C", "C", "C", "C", "C"]  # each fill fires (twice)
    w.deliver(keep=True)
    assert w.results() == {0: [0, 1, 2], 1: [3, 4, 5], 2: [6, 7, 8]}
    # the producer sessions ended with their own value (a Window edge ends the session)
    assert w.ds.get("ev9", "result")["v"] == 9


def test_crash_after_the_slot_claim_is_retried_without_double_count(tmp_path):
    """The producer of the 3rd object crashes right after claiming its slot (before the
    window fires); the platform's retry fires the window, and the object is in it once."""

    class CrashOnce(SqliteDatastore):
        armed = True

        def put(self, session, name, item, expires_at):
            if self.armed and name.startswith("hint/") and item["slot"] == 3:
                CrashOnce.armed = False
                raise RuntimeError("injected crash after the slot create")
            return super().put(session, name, item, expires_at)

    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 3}, ds=CrashOnce(tmp_path / "db"))
    w.ingest(0)
    w.ingest(1)
    with pytest.raises(RuntimeError):
        w.ingest(2)
    assert w.q.calls == []  # the window did not fire yet
    w.ingest(2)  # the platform's retry
    w.ingest(3)
    w.deliver()
    assert w.results() == {0: [0, 1, 2]}


def test_time_window_late_arrival_goes_to_the_next_window(tmp_path):
    """ByTime: the first object of a window arms its timer (a delayed invocation); objects
    that arrive after the timer closed the window, and a duplicate of one already inside,
    end up in the next window or nowhere new."""
    w = World(tmp_path, {"Window": "clicks", "ByTime": 1.5}, delay=True)
    for i in range(4):
        w.ingest(i)
    ticks = list(w.q.calls)
    assert [(fn, p["Data"]["Source"], d) for fn, p, d in ticks] == [("C", window.TICK_SOURCE, 1.5)]
    w.deliver(keep=True)  # the timer fires (twice): window 0 closes
    # the hints are lower bounds written by `put`, which may land out of order: a producer
    # may start its scan in the closed window and must step over the close marker
    w.ds.put(window.store_session("clicks"), "cur", {"log": 0}, 1e12)
    w.ingest(4)  # late: after the close
    w.ingest(2)  # a duplicate of an object already in window 0
    w.ingest(5)
    assert [p["Data"]["Value"]["Log"] for _, p, _ in w.q.calls] == [1]  # window 1's timer
    w.deliver()
    assert w.results() == {0: [0, 1, 2, 3], 1: [4, 5]}


def test_scheduler_tick_closes_the_open_window_and_skips_an_empty_one(tmp_path):
    """A cloud scheduler's tick (no window id) closes the open window; on an empty one it
    fires nothing."""
    w = World(tmp_path, {"Window": "clicks", "ByTime": 60})
    out = w.engines["C"].handle(window.tick_payload("clicks", None))
    assert out.status == "dropped" and "empty" in out.detail
    for i in range(3):
        w.ingest(i)
    assert w.q.calls == []  # no platform timer: the scheduler ticks
    assert w.engines["C"].handle(window.tick_payload("clicks", None)).status == "ran"
    w.ingest(3)
    assert w.engines["C"].handle(window.tick_payload("clicks", None)).status == "ran"
    assert w.results() == {0: [0, 1, 2], 1: [3]}


@pytest.mark.parametrize("edge, message", [
    ({"Window": "clicks"}, "exactly one of ByBatchSize"),
    ({"Window": "clicks", "ByBatchSize": 2, "ByTime": 1}, "exactly one of ByBatchSize"),
    ({"Window": "Bad Name", "ByTime": 1}, "Window: 'Bad Name' must be a window name"),
    ({"Window": "clicks", "ByBatchSize": 0}, "ByBatchSize: 0 must be an integer from 1"),
    ({"Window": "clicks", "ByTime": -1}, "ByTime: -1 must be a number of seconds"),
    ({"Window": "clicks", "ByTime": 1, "Payload Modifiers": ["Pop"]}, "takes only '$out=<expr>'"),
])
def test_window_edge_errors_name_the_file_and_field(edge, message):
    with pytest.raises(IRError) as err:
        load_function({"Name": "P", "Next": {"Name": "C", "Type": "Window", **edge}}, "ir/P.yaml")
    text = str(err.value)
    assert text.startswith("ir/P.yaml: Next[0]") and message in text and "\n" not in text


def test_window_fields_need_a_window_edge_and_one_declaration():
    with pytest.raises(IRError, match=r"ir/P.yaml: Next\[0\]: ByTime: only edges of Type: Window"):
        load_function({"Name": "P", "Next": {"Name": "C", "ByTime": 1}}, "ir/P.yaml")
    a = load_function({"Name": "A", "Start": True, "Next": [
        {"Name": "B"}, {"Name": "C", "Type": "Window", "Window": "w", "ByTime": 1}]})
    b = load_function({"Name": "B", "Next": {"Name": "C", "Type": "Window", "Window": "w", "ByTime": 2}})
    with pytest.raises(IRError, match=r"^B.yaml: Next\[0\]: Window: 'w' is declared as .* in A.yaml: Next\[1\]"):
        build_workflow([(a, "A.yaml"), (b, "B.yaml"), (load_function({"Name": "C"}), "C.yaml")])
    # round trip through the bundled form
    assert load_function(a.to_dict()) == a


class Recorded:
    """An Events sink (runtime.ports.Events) that keeps what the engine records."""

    level = "full"
    derived_fields = False

    def __init__(self):
        self.events = []

    def record(self, events):
        self.events.extend(events)

    def session_started(self, *a):
        pass

    def session_ended(self, *a):
        pass


def test_each_firing_records_a_fired_event(tmp_path):
    """docs/observability.md: the consumer's execution of a firing records `fired` with the
    window's name, id and size, in the window's session (fails without the engine's hook)."""
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 2})
    rec = Recorded()
    w.engines["C"] = Engine(w.engines["C"].ir, lambda e, c: e, w.ds, w.q, w.blobs, events=rec)
    w.ingest(0)
    w.ingest(1)
    w.deliver()
    fired = [e for e in rec.events if e["kind"] == "fired"]
    assert len(fired) == 1
    assert fired[0]["session"] == "win-clicks-0" and fired[0]["function"] == "C"
    assert fired[0]["window"] == {"Name": "clicks", "Id": 0, "Size": 2}


def test_graph_and_trace_draw_the_window_edge():
    from unumctl.graph import to_dot, to_mermaid
    from unumctl.pipeline import load as load_app
    from unumctl.observe.trace import render

    from unumctl_testing.apps import ROOT
    wf = load_app(ROOT / "examples" / "window-campaigns").workflow
    from tests.graph_text import dot_edges, mermaid_edges
    assert ("Ingest", "--o", "Window if $out['keep'] campaigns every 1 s", "Count") in mermaid_edges(to_mermaid(wf))
    assert [(s, d, e["style"]) for s, d, e in dot_edges(to_dot(wf))] == [("Ingest", "Count", "dotted")]
    page = render({"session": "win-campaigns-0"}, [], wf)
    assert '"window": "campaigns"' in page and 'e.type === "Window"' in page


class Counted(SqliteDatastore):
    """The SQLite datastore, counting the port's calls and the items each one reads or writes
    (the datastore operations docs/sets.md prices) in the window store only."""

    def __init__(self, path):
        super().__init__(path)
        self.calls: dict[str, int] = {}

    def _n(self, op, session, n=1):
        if session.startswith("winstore-"):
            self.calls[op] = self.calls.get(op, 0) + n

    def get_many(self, session, names):
        self._n("read items", session, len(names))
        return super().get_many(session, names)

    def create_if_absent(self, session, name, item, expires_at):
        self._n("conditional creates", session)
        return super().create_if_absent(session, name, item, expires_at)

    def put(self, session, name, item, expires_at):
        self._n("puts", session)
        return super().put(session, name, item, expires_at)


@pytest.mark.parametrize("edge", [{"ByBatchSize": 4}, {"ByTime": 1}])
def test_datastore_operations_per_object_and_per_firing(tmp_path, edge):
    """docs/sets.md "Windows": an object costs 3 item reads (start, cur, hint), 2 conditional
    creates (start, slot) and 1 put (hint) in the window store; a ByBatchSize firing 1 read
    and 1 put (cur: raised, never lowered) by the filling producer and 1 read per object by
    the consumer; a ByTime firing by the local timer (which names its window) 2 reads (hint,
    cur), 1 conditional create (the marker), 1 put (cur) and 1 read per object. Without
    contention (one producer at a time)."""
    ds = Counted(tmp_path / "db")
    w = World(tmp_path, {"Window": "clicks", **edge}, delay="ByTime" in edge, ds=ds)
    w.ingest(0)
    assert ds.calls == {"read items": 3, "conditional creates": 2, "puts": 1}
    for i in range(1, 4):
        w.ingest(i)
    adds = dict(ds.calls)
    if "ByBatchSize" in edge:  # the 4th object filled the window: it also raised `cur`
        assert adds == {"read items": 13, "conditional creates": 8, "puts": 5}
    else:
        assert adds == {"read items": 12, "conditional creates": 8, "puts": 4}
    w.deliver()
    assert w.results() == {0: [0, 1, 2, 3]}
    fire = {k: ds.calls[k] - adds.get(k, 0) for k in ds.calls if ds.calls[k] != adds.get(k, 0)}
    if "ByBatchSize" in edge:
        assert fire == {"read items": 4}
    else:  # the timer of window 0: hint, then the marker at slot 4, then `cur` (read, put); 4 slots read
        assert fire == {"read items": 6, "conditional creates": 1, "puts": 1}


class Clock:
    """A virtual clock (Unix seconds) the engines read; `advance` moves it and lets the
    store's TTL remove what expired meanwhile (SqliteDatastore.purge_expired)."""

    def __init__(self, ds, t: float = 1.7e9):
        self.ds, self.t = ds, t

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds
        self.ds.purge_expired(self.t)


DAY = 86400.0


@pytest.mark.parametrize("timeout, quiet", [(None, 8 * DAY - 1800), (300, 2 * DAY)])
def test_objects_after_a_quiet_period_longer_than_the_item_lifetime_land_in_a_new_window(
        tmp_path, timeout, quiet):
    """Issue 33 item 2: window 0 fires; nothing arrives for longer than the producers' item
    lifetime (the default retention: 8 days; `session_timeout_seconds: 300`: 1 day + 300 s),
    so the store's TTL removes what expired; the consumer's result of window 0 is still there.
    The next objects must fire a new window (1), not window 0 again, whose firing the old
    result would drop (on main: `cur` expired and read as 0, so the objects were in no window
    while their producers SUCCEEDED)."""
    from runtime.engine import Options
    options = Options(session_timeout_seconds=timeout) if timeout else Options()
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 2}, options=options)
    clock = Clock(w.ds)
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 2}, ds=w.ds, options=options, clock=clock)
    w.ingest(0)
    w.ingest(1)
    clock.advance(3600)  # the consumer runs an hour later: its result outlives the slots
    w.deliver()
    assert w.results() == {0: [0, 1]}
    clock.advance(quiet)
    assert w.ds.get(window.window_session("clicks", 0), "result") is not None
    w.ingest(2)
    w.ingest(3)
    w.deliver()
    assert w.results() == {0: [0, 1], 1: [2, 3]}
    assert all(w.ds.get(f"ev{i}", "result")["status"] == "SUCCEEDED" for i in (2, 3))


def test_a_time_window_after_a_quiet_period_gets_a_new_id(tmp_path):
    """Issue 33 item 2 with ByTime (the local timer): window 0 fires, 2 days pass with
    `session_timeout_seconds: 300` (the producers' items expire after 1 day + 300 s, the
    consumer's result after 8 days); the next object's window is window 1 (on main it was
    window 0 again, its firing dropped by the old result)."""
    from runtime.engine import Options
    options = Options(session_timeout_seconds=300)
    w = World(tmp_path, {"Window": "clicks", "ByTime": 1}, delay=True, options=options)
    clock = Clock(w.ds)
    w = World(tmp_path, {"Window": "clicks", "ByTime": 1}, delay=True, ds=w.ds, options=options, clock=clock)
    w.ingest(0)
    clock.advance(1)
    w.deliver()
    clock.advance(2 * DAY)
    w.ingest(1)
    clock.advance(1)
    w.deliver()
    assert w.results() == {0: [0], 1: [1]}


def test_a_batch_window_slower_than_the_slot_lifetime_fires_with_every_object(tmp_path):
    """Issue 33 item 3: a ByBatchSize 3 window gets its first object, its second 5 days
    later and its third 9 days after the first: on main slot 0 had expired with its
    producer's session (8 days) and the firing raised "slot 0 holds no object" on every
    attempt, losing the window. Now a window open longer than its bound (the result
    lifetime, 8 days) is closed by the next object, which fires it with what it holds and
    opens the next window; no object is lost."""
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 3})
    clock = Clock(w.ds)
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 3}, ds=w.ds, clock=clock)
    w.ingest(0)
    clock.advance(5 * DAY)
    w.ingest(1)
    clock.advance(4 * DAY)
    w.ingest(2)
    w.deliver()
    assert w.results() == {0: [0, 1]}
    w.ingest(3)
    w.ingest(4)
    w.deliver()
    assert w.results() == {0: [0, 1], 1: [2, 3, 4]}


def test_a_cur_left_behind_is_raised_by_the_next_object(tmp_path):
    """`cur` is a lower bound that two racing closers can leave one window behind (the read
    before the put does not make them atomic); the next object, whose scan then starts in a
    closed window, raises it to the window it lands in, so a later quiet period cannot make
    new objects start in windows whose items expired. Fails without the raise in `add`."""
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 2})
    for i in range(4):
        w.ingest(i)
    sess = window.store_session("clicks")
    assert w.ds.get(sess, "cur") == {"log": 2}
    w.ds.put(sess, "cur", {"log": 0}, window.NEVER)  # the loser of the race put last
    w.ingest(4)
    assert w.ds.get(sess, "cur") == {"log": 2}
    w.deliver()
    assert w.results() == {0: [0, 1], 1: [2, 3]}


def test_a_late_closer_does_not_lower_cur(tmp_path):
    """The filler of window 0 runs again (a retry, an overlapping duplicate) after window 1
    filled: it fires window 0 again (harmless) but leaves `cur` at 2 (on main it put 1:
    `cur` went back, and once the closed windows expired new objects started in them)."""
    w = World(tmp_path, {"Window": "clicks", "ByBatchSize": 2})
    for i in range(4):
        w.ingest(i)
    spec = w.engines["P"].ir.next[0].window
    assert window.add(w.ds, w.blobs, w.q, spec, "ev1/P", 1, 1e12, now=w.engines["P"].clock()) == (0, 1)
    assert w.ds.get(window.store_session("clicks"), "cur") == {"log": 2}
    w.deliver()
    assert w.results() == {0: [0, 1], 1: [2, 3]}
