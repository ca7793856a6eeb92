"""The commit-point rule under the schedules the issue-8 review found (each test fails on the
engine as it was at 07e4413): engines of a small app share one SQLite datastore and run
in-process; a datastore view that hides items makes an execution read "before" another
execution's write, as an unlucky interleaving or a non-snapshot batch read would."""

from __future__ import annotations

import itertools
import json
from collections import deque

import pytest

from runtime.engine import Engine, Faults, Options
from runtime.errors import InjectedCrash
from runtime.ir import build_workflow, load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.payload import RESULT_KEY
from runtime.ports import Datastore, Invoker
from runtime.session import entry_payload


class Queue(Invoker):
    """Collects invocations; `max_payload_bytes` small so values go by reference."""

    max_payload_bytes = 200_000

    def __init__(self):
        self.calls: deque = deque()

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


class Hiding(Datastore):
    """A view of `inner` whose reads do not see the names in `hidden` (a read served before
    those items were written)."""

    def __init__(self, inner, hidden):
        self.inner, self.hidden = inner, set(hidden)
        self.max_item_bytes = inner.max_item_bytes

    def get_many(self, session, names):
        got = self.inner.get_many(session, names)
        return [None if n in self.hidden else it for n, it in zip(names, got)]

    def create_if_absent(self, *a):
        return self.inner.create_if_absent(*a)

    def set_add(self, *a):
        return self.inner.set_add(*a)

    def put(self, *a):
        return self.inner.put(*a)

    def delete(self, *a):
        return self.inner.delete(*a)

    def sweep(self, *a):
        return self.inner.sweep(*a)


class App:
    """Engines for IR nodes on a shared SQLite datastore and blob directory."""

    def __init__(self, tmp_path, nodes, handlers, options=None, item_bytes=None):
        self.wf = build_workflow([(load_function(n), "test") for n in nodes])
        self.ds = SqliteDatastore(tmp_path / "db")
        if item_bytes:
            self.ds.max_item_bytes = item_bytes
        self.blobs = FileBlobStore(tmp_path / "blobs")
        self.queue = Queue()
        self.handlers = handlers
        self.options = options or Options()

    def engine(self, fn, ds=None):
        return Engine(self.wf.functions[fn], self.handlers[fn], ds or self.ds, self.queue,
                      self.blobs, self.options)

    def drain(self, limit=1000):
        outs = []
        while self.queue.calls and limit:
            fn, payload = self.queue.calls.popleft()
            outs.append(self.engine(fn).handle(payload))
            limit -= 1
        return outs

    def left(self, session):
        items = self.ds.dump(session).get(session, [])
        blobs = sorted(p.name for p in (self.blobs.root / session).rglob("*") if p.is_file()) \
            if (self.blobs.root / session).exists() else []
        return sorted(items), blobs


class CrashAt(Faults):
    def __init__(self, where):
        self.where = where

    def point(self, name, session, instance):
        if name == self.where:
            raise InjectedCrash(name)


def counter_fn(size=0):
    """A nondeterministic function: every execution returns a different value."""
    n = itertools.count()

    def handler(event, ctx):
        return {"run": next(n), "pad": "x" * size}
    return handler


def entry(value, session="s1"):
    return entry_payload(session, value)


@pytest.mark.parametrize("size", [0, 5000])
def test_loser_continues_with_the_winners_value(tmp_path, size):
    """Issue 8 class 1: the losing execution's blob must not replace the winner's."""
    seen = []
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "B"}}, {"Name": "B"}],
              {"A": counter_fn(size), "B": lambda e, c: seen.append(e["run"]) or e["run"]},
              item_bytes=4000)
    first = app.engine("A").handle(entry(0))
    assert first.status == "ran"
    late = app.engine("A", Hiding(app.ds, ["ckpt/A"])).handle(entry(0))  # read before A committed
    assert late.status == "adopted"
    sent = [json.dumps(p["Data"]) for fn, p in app.queue.calls]
    assert len(sent) == 2 and sent[0] == sent[1]  # both executions invoked B with one value
    app.drain()
    assert seen == [0]
    assert app.ds.get("s1", RESULT_KEY)["v"] == 0
    assert app.left("s1") == (["result"], [])


def test_duplicate_failure_after_a_committed_success_adopts_it(tmp_path):
    """Issue 8 class 3: E1 commits a success; a concurrent E2 raises -> E2 follows E1."""
    runs = itertools.count()

    def flaky(e, c):
        if next(runs) == 1:
            raise ValueError("second execution fails")
        return e + 1
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "B"}}, {"Name": "B"}],
              {"A": flaky, "B": lambda e, c: e * 10})
    assert app.engine("A").handle(entry(1)).status == "ran"
    out = app.engine("A", Hiding(app.ds, ["ckpt/A"])).handle(entry(1))
    assert out.status == "adopted"
    app.drain()
    assert app.ds.get("s1", RESULT_KEY) == {"status": "SUCCEEDED", "instance": "B", "v": 20}


def test_committed_failure_is_followed_by_a_succeeding_duplicate(tmp_path):
    """The first outcome wins either way: a committed failure ends the session even if a
    duplicate execution would have succeeded."""
    runs = itertools.count()

    def flaky(e, c):
        if next(runs) == 0:
            raise ValueError("first execution fails")
        return e
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "B"}}, {"Name": "B"}],
              {"A": flaky, "B": lambda e, c: e})
    first = app.engine("A")
    first.faults = CrashAt("after_checkpoint")
    with pytest.raises(InjectedCrash):  # E1 committed its failure, then died
        first.handle(entry(1))
    assert app.ds.get("s1", RESULT_KEY) is None
    out = app.engine("A", Hiding(app.ds, ["ckpt/A"])).handle(entry(1))  # E2 succeeds, then adopts
    assert out.status == "failed"
    assert not app.queue.calls
    result = app.ds.get("s1", RESULT_KEY)
    assert result["status"] == "FAILED" and result["error"] == "ValueError"


@pytest.mark.parametrize("mode", ["safe", "eager"])
def test_duplicate_fanin_target_without_checkpoint_is_dropped(tmp_path, mode):
    """Issue 8 class 4: the target's inputs were collected by its first execution."""
    nodes = [{"Name": "S", "Start": True, "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                    "Payload Modifiers": ["Pop"]}},
             {"Name": "J", "Checkpoint": False, "Next": {"Name": "T"}}, {"Name": "T"}]
    app = App(tmp_path, nodes, {"S": lambda e, c: e, "W": lambda e, c: e * 2,
                                "J": lambda e, c: sum(e), "T": lambda e, c: e},
              Options(gc=mode))
    app.engine("S").handle(entry([1, 2, 3]))
    while app.queue.calls and app.queue.calls[0][0] != "J":
        fn, payload = app.queue.calls.popleft()
        app.engine(fn).handle(payload)
    fn, join_payload = app.queue.calls.popleft()
    assert app.engine("J").handle(join_payload).status == "ran"
    dup = app.engine("J").handle(join_payload)
    assert dup.status == "dropped", dup
    app.drain()
    assert app.ds.get("s1", RESULT_KEY) == {"status": "SUCCEEDED", "instance": "T", "v": 12}


def test_delivery_fields_are_not_inherited(tmp_path):
    """Issue 8 class 5: the AWS error handler's attempt count describes one delivery."""
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "B"}}, {"Name": "B"}],
              {"A": lambda e, c: e, "B": lambda e, c: e})
    app.engine("A").handle({**entry(1), "UnumDeliveryAttempts": 2, "Custom": "ctx"})
    (fn, payload), = app.queue.calls
    assert "UnumDeliveryAttempts" not in payload and payload["Custom"] == "ctx"


def test_stale_read_of_result_does_not_leave_a_second_commit(tmp_path):
    """Issue 8 class 6: a duplicate reads `result` before it is written and its checkpoint
    after the final sweep. Whatever it commits late is seen by no consumer and removed."""
    seen = []
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "B"}}, {"Name": "B"}],
              {"A": counter_fn(), "B": lambda e, c: seen.append(e["run"]) or e["run"]})
    app.engine("A").handle(entry(0))
    app.drain()
    result = app.ds.get("s1", RESULT_KEY)
    assert result["v"] == 0
    late = app.engine("A", Hiding(app.ds, [RESULT_KEY])).handle(entry(0))
    assert late.status == "ran"  # it could not know: its reads straddled the sweep
    app.drain()
    assert seen == [0]  # its consumer dropped: nobody saw the late value
    assert app.ds.get("s1", RESULT_KEY) == result
    assert app.left("s1") == (["result"], [])


def test_map_over_empty_list_continues_to_its_join(tmp_path):
    """Issue 8 class 7: a Map over [] runs its join with [] (nested: the inner join of an
    empty branch gives [] to the outer one)."""
    nodes = [{"Name": "S", "Start": True, "Next": {"Name": "Outer", "Type": "Map"}},
             {"Name": "Outer", "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": {"Name": "InnerJoin", "Type": "Fan-in",
                                    "Values": ["W-UnumIndex-$1.*"], "Payload Modifiers": ["Pop"]}},
             {"Name": "InnerJoin", "Next": {"Name": "OuterJoin", "Type": "Fan-in",
                                            "Values": ["InnerJoin-UnumIndex-*"],
                                            "Payload Modifiers": ["Pop"]}},
             {"Name": "OuterJoin"}]
    app = App(tmp_path, nodes, {"S": lambda e, c: e, "Outer": lambda e, c: e,
                                "W": lambda e, c: e.upper(), "InnerJoin": lambda e, c: e,
                                "OuterJoin": lambda e, c: e})
    app.engine("S").handle(entry([["a", "b"], [], ["c"]]))
    app.drain()
    assert app.ds.get("s1", RESULT_KEY)["v"] == [["A", "B"], [], ["C"]]
    assert app.left("s1") == (["result"], [])


def test_runaway_cycle_ends_as_failed(tmp_path):
    """Issue 8 class 12: a cycle with no exit is stopped by runtime.max_transitions."""
    app = App(tmp_path, [{"Name": "A", "Start": True, "Next": {"Name": "A"}}],
              {"A": lambda e, c: e + 1}, Options(max_transitions=50))
    app.engine("A").handle(entry(0))
    app.drain(limit=200)
    result = app.ds.get("s1", RESULT_KEY)
    assert result["status"] == "FAILED" and result["error"] == "Unum.TransitionLimitExceeded"
    assert not app.queue.calls
    assert app.left("s1") == (["result"], [])


def test_large_fanin_payload_does_not_grow_with_branches(tmp_path):
    """The fan-in target's payload names its inputs compactly (O(1) in the branch count)."""
    nodes = [{"Name": "S", "Start": True, "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                    "Payload Modifiers": ["Pop"]}}, {"Name": "J"}]
    sizes = {}
    for n in (10, 2000):
        app = App(tmp_path / str(n), nodes, {"S": lambda e, c: e, "W": lambda e, c: e,
                                             "J": lambda e, c: len(e)})
        app.engine("S").handle(entry(list(range(n)), f"s{n}"))
        joins = []
        while app.queue.calls:
            fn, payload = app.queue.calls.popleft()
            if fn == "J":
                joins.append(payload)
            app.engine(fn).handle(payload)
        sizes[n] = len(json.dumps(joins[0]))
        assert app.ds.get(f"s{n}", RESULT_KEY)["v"] == n
    assert sizes[2000] - sizes[10] <= 6  # only the digits of the size and session id grow


class Publishing:
    """A wrapper that publishes a large item (as the ASL wrapper publishes a Map's input
    for its join) and sends a fixed context field to the continuations."""

    def __init__(self, big):
        self.big = big

    def __call__(self, call_user, value, ctx):
        ctx.publish("side", self.big)
        ctx.extra["Picked"] = value["pick"]
        return call_user(value["items"], ctx), None


def test_published_items_and_context_come_from_the_commit(tmp_path):
    """Issue 8 class 2: wrapper state (a published join input, inherited context) is that
    of the winning execution, and a published blob outlives the collection of its source."""
    big = {"n": "y" * 3000}
    nodes = [{"Name": "S", "Start": True, "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                    "Payload Modifiers": ["Pop"]}}, {"Name": "J"}]
    seen = []

    def join(e, c):
        side = app.engine("J").load(c.session, app.ds.get(c.session, "side"))
        return [len(side["n"]), c.extra["Picked"], sorted(set(seen))]
    app = App(tmp_path, nodes, {"S": lambda e, c: e, "W": lambda e, c: seen.append(c.extra["Picked"]) or e,
                                "J": join}, item_bytes=4000)
    s = app.engine("S")
    s.wrapper = Publishing(big)
    s.handle(entry({"items": [1, 2, 3], "pick": "first"}))
    dup = app.engine("S", Hiding(app.ds, ["ckpt/S"]))
    dup.wrapper = Publishing({"n": "z" * 3000})
    assert dup.handle(entry({"items": [1, 2, 3], "pick": "second"})).status == "adopted"
    app.drain()
    assert app.ds.get("s1", RESULT_KEY)["v"] == [3000, "first", ["first"]]
    assert app.left("s1") == (["result"], [])


def test_loop_inside_map_branches_joins(tmp_path):
    """Issue 8 class 7: branches that loop a different number of times still join (each
    hands over through exit/<name at the frame's base>), and the loop leaves nothing."""
    nodes = [{"Name": "S", "Start": True, "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": [
                 {"Name": "W", "Conditional": "$out > 0"},
                 {"Name": "J", "Type": "Fan-in", "Conditional": "$out <= 0",
                  "Values": ["W-UnumIndex-*"], "Payload Modifiers": ["Pop"]}]},
             {"Name": "J"}]
    app = App(tmp_path, nodes, {"S": lambda e, c: e, "W": lambda e, c: e - 1,
                                "J": lambda e, c: [e, c.instance]})
    app.engine("S").handle(entry([3, 0, 1]))
    app.drain()
    assert app.ds.get("s1", RESULT_KEY)["v"] == [[0, -1, 0], "J"]
    assert app.left("s1") == (["result"], [])


def test_loop_edge_that_piles_up_frames_is_refused():
    """Issue 8 class 7: a back edge among several Scalar edges without Pop would add a
    frame per pass (RecursionError near 990 iterations on 07e4413): refused at load."""
    from runtime.errors import IRError
    nodes = [{"Name": "A", "Start": True, "Next": {"Name": "L"}},
             {"Name": "L", "Next": [{"Name": "L", "Conditional": "$out > 0"},
                                    {"Name": "D", "Conditional": "$out <= 0"}]}, {"Name": "D"}]
    with pytest.raises(IRError, match=r"Next\[0\].*add 'Payload Modifiers: \[Pop\]'"):
        build_workflow([(load_function(n), f"{n['Name']}.yaml") for n in nodes])


def test_a_long_loop_keeps_its_payload_bounded(tmp_path):
    """2,000 passes of a Pop-ing loop: the payload does not grow beyond the digits of the
    iteration counter and depth (the 100,000-pass run is bench/loop_scale.py)."""
    nodes = [{"Name": "A", "Start": True, "Next": {"Name": "L"}},
             {"Name": "L", "Next": [{"Name": "L", "Conditional": "$out > 0", "Payload Modifiers": ["Pop"]},
                                    {"Name": "D", "Conditional": "$out <= 0", "Payload Modifiers": ["Pop"]}]},
             {"Name": "D"}]
    app = App(tmp_path, nodes, {"A": lambda e, c: e, "L": lambda e, c: e - 1, "D": lambda e, c: c.instance})
    app.engine("A").handle(entry(2000))
    sizes = []
    while app.queue.calls:
        fn, payload = app.queue.calls.popleft()
        sizes.append(len(json.dumps(payload)))
        app.engine(fn).handle(payload)
    assert app.ds.get("s1", RESULT_KEY)["v"] == "D-UnumIter-1999"
    assert max(sizes[2:]) - sizes[2] <= 12  # after the first pass: only digits grow
    assert app.left("s1") == (["result"], [])


def test_a_wrapper_finding_its_state_collected_drops(tmp_path):
    """A stale execution whose wrapper state was swept is dropped, not recorded as a failure."""
    from runtime.errors import StaleExecution

    def stale(call_user, value, ctx):
        raise StaleExecution("datastore item 'asl/fan/J' is gone: the session has ended")
    app = App(tmp_path, [{"Name": "A", "Start": True}], {"A": lambda e, c: e})
    eng = app.engine("A")
    eng.wrapper = stale
    assert eng.handle(entry(1)).status == "dropped"
    assert app.ds.get("s1", RESULT_KEY) is None and app.left("s1") == ([], [])


def test_an_adopting_join_continues_with_the_committed_transition_count(tmp_path):
    """Issue 22, defect 2: the transition count of an invocation is the one committed with its
    checkpoint. S fans out to P (1 step) and Q1 -> Q2 -> Q3 (3 steps), both fan in to J, then
    E; max_transitions 3. P completes the set: J is invoked at count 2. A duplicate of Q3
    re-adds itself and invokes J again at count 4. J(2) commits and invokes E(3); J(4)
    adopts that checkpoint. Without the committed count it invoked E with its own 4 + 1 = 5,
    and that E, delivered first, committed FAILED Unum.TransitionLimitExceeded although the
    committed path S -> P -> J -> E is 3 transitions."""
    fanin = {"Name": "J", "Type": "Fan-in", "Values": ["P-UnumIndex-0", "Q3-UnumIndex-1"],
             "Payload Modifiers": ["Pop"]}
    app = App(tmp_path, [
        {"Name": "S", "Start": True, "Next": [{"Name": "P", "Type": "Scalar"}, {"Name": "Q1", "Type": "Scalar"}]},
        {"Name": "P", "Next": fanin}, {"Name": "Q1", "Next": {"Name": "Q2", "Type": "Scalar"}},
        {"Name": "Q2", "Next": {"Name": "Q3", "Type": "Scalar"}}, {"Name": "Q3", "Next": fanin},
        {"Name": "J", "Next": {"Name": "E", "Type": "Scalar"}}, {"Name": "E"}],
        {"S": lambda e, c: e, "P": lambda e, c: e + 1, "Q1": lambda e, c: e + 10, "Q2": lambda e, c: e,
         "Q3": lambda e, c: e, "J": lambda e, c: sum(e), "E": lambda e, c: {"sum": e}},
        Options(max_transitions=3))

    def take(fn):
        for i, (f, payload) in enumerate(app.queue.calls):
            if f == fn:
                del app.queue.calls[i]
                return payload
        raise AssertionError(f"no invocation of {fn} queued: {list(app.queue.calls)}")

    def run(fn, payload):
        return app.engine(fn).handle(payload)

    run("S", entry(1))
    for fn in ("Q1", "Q2"):
        run(fn, take(fn))
    q3 = take("Q3")
    run("Q3", q3)  # adds itself to J's set (1 of 2)
    run("P", take("P"))  # completes the set: J at count 2
    assert run("Q3", q3).status == "adopted"  # the duplicate: the set is complete, J at count 4
    j_short, j_long = take("J"), take("J")
    assert (j_short.get("Depth"), j_long.get("Depth")) == (2, 4)
    assert run("J", j_short).status == "ran"  # commits J, invokes E
    assert run("J", j_long).status == "adopted"
    e_first, e_second = take("E"), take("E")
    assert e_first.get("Depth") == e_second.get("Depth") == 3
    assert run("E", e_second).status == "ran"  # the adopter's E, delivered first
    run("E", e_first)
    result = app.ds.get("s1", RESULT_KEY)
    assert result["status"] == "SUCCEEDED" and result["v"] == {"sum": 13}, result
