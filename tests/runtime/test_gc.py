"""Garbage collection of checkpoints by consumer count (runtime/gc.py, seed 001 §3.5,
docs/protocol.md "Egress" 5): a parent with several consumers is collected through its GC
set `gc/<parent>` by the consumer whose add completes it, never earlier."""

from __future__ import annotations

import pytest

from runtime.engine import Engine, Options
from runtime.ir import build_workflow, load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.session import entry_payload


class Recorder(Invoker):
    """The platform's invoke API as a list (the test delivers the calls)."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


@pytest.mark.parametrize("gc,gone", [("safe", {"gc": True}), ("eager", None)])
@pytest.mark.parametrize("shape", ["parallel", "map"])
def test_a_fan_out_parent_is_collected_by_its_last_consumer_only(tmp_path, gc, gone, shape):
    """Start has 3 consumers (three Scalar edges, or a Map over 3 items): its checkpoint stays
    readable while any of them has not checkpointed, and the third one's GC collects it and
    its set (tools/explorer/mutants/gc_set_size_off_by_one.py collects it at the second)."""
    edge = ({"Next": [{"Name": "W"}, {"Name": "W"}, {"Name": "W"}]} if shape == "parallel"
            else {"Next": {"Name": "W", "Type": "Map"}})
    docs = [{"Name": "Start", "Start": True, **edge},
            {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                   "Payload Modifiers": ["Pop"]}},
            {"Name": "J"}]
    w = build_workflow((load_function(d), d["Name"]) for d in docs)
    ds, inv = SqliteDatastore(tmp_path / "db"), Recorder()
    handlers = {"Start": lambda e, c: [1, 2, 3], "W": lambda e, c: c.index, "J": lambda e, c: e}
    eng = {fn: Engine(w.functions[fn], handlers[fn], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc=gc))
           for fn in handlers}
    eng["Start"].handle(entry_payload("s1", None))
    branches, inv.calls[:] = [p for fn, p in inv.calls if fn == "W"], []
    assert len(branches) == 3
    start = ds.get("s1", "ckpt/Start")
    assert start["consumers"] == 3
    for i, p in enumerate(branches):
        assert eng["W"].handle(p).status == "ran"
        if i < 2:
            assert ds.get("s1", "ckpt/Start") == start, f"Start collected after {i + 1} of its 3 consumers"
    assert ds.get("s1", "ckpt/Start") == gone
    assert [fn for fn, _ in inv.calls] == ["J"]
    assert eng["J"].handle(inv.calls[0][1]).status == "ran"
    assert ds.get("s1", "result")["v"] == [0, 1, 2]
    assert ds.dump() == {"s1": ["result"]}


@pytest.mark.parametrize("j_checkpoint", [True, False])
@pytest.mark.parametrize("shape", ["map", "parallel"])
def test_a_late_branch_under_eager_does_not_fire_its_fan_in_target_again(tmp_path, shape, j_checkpoint):
    """Issue 33, the plain-fan-in sibling of item 4. gc `eager`, a fan-in into J -> M -> End:
    J commits and deletes the branch checkpoints and `fanin/J`, M deletes ckpt/J. Late
    duplicates then run again (seed 001 §3.5: their input came inline): with `map`, a
    duplicate of the only branch R0; with `parallel`, a duplicate of the parent S, whose
    checkpoint the branches deleted, re-invokes both branches A and B with a new value.
    Before the fix the re-run branches re-created `fanin/J`, completed it and fired J, whose
    user code ran again on a value no execution of J was planned with (['R0-run2']). Now J
    records `done/J` before it deletes its inputs: a re-run branch fires nothing and its
    checkpoint is collected, and a duplicate delivery of J's firing drops on the item."""
    fanin = {"Type": "Fan-in", "Payload Modifiers": ["Pop"]}
    if shape == "map":
        docs = [{"Name": "S", "Start": True, "Next": {"Name": "R", "Type": "Map"}},
                {"Name": "R", "Next": {"Name": "J", "Values": ["R-UnumIndex-*"], **fanin}}]
        branches = ["R"]
    else:
        values = ["A-UnumIndex-0", "B-UnumIndex-1"]
        docs = [{"Name": "S", "Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]},
                {"Name": "A", "Next": {"Name": "J", "Values": values, **fanin}},
                {"Name": "B", "Next": {"Name": "J", "Values": values, **fanin}}]
        branches = ["A", "B"]
    docs += [{"Name": "J", "Next": {"Name": "M"}, **({} if j_checkpoint else {"Checkpoint": False})},
             {"Name": "M", "Next": {"Name": "End"}}, {"Name": "End"}]
    w = build_workflow((load_function(d), d["Name"]) for d in docs)
    ds, inv = SqliteDatastore(tmp_path / "db"), Recorder()
    runs: dict[str, int] = {}
    j_inputs: list = []

    def run(name):
        def handler(e, c):
            runs[name] = runs.get(name, 0) + 1
            return f"{name}-run{runs[name]}" if name != "S" else [0]
        return handler
    handlers = {fn: run(fn) for fn in ["S", "R", "A", "B"]}
    handlers.update({"J": lambda e, c: j_inputs.append(e) or e, "M": lambda e, c: e, "End": lambda e, c: e})
    eng = {fn: Engine(w.functions[fn], handlers[fn], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="eager"))
           for fn in w.functions}

    def deliver(fn):
        got = [p for f, p in inv.calls if f == fn]
        inv.calls[:] = [(f, p) for f, p in inv.calls if f != fn]
        return [eng[fn].handle(p) for p in got]
    entry = entry_payload("s1", None)
    assert eng["S"].handle(entry).status == "ran"
    first = {b: [p for f, p in inv.calls if f == b] for b in branches}
    for b in branches:
        assert [o.status for o in deliver(b)] == ["ran"]
    assert ds.get("s1", "ckpt/S") is None               # collected by its branches (eager: deleted)
    fired = [p for f, p in inv.calls if f == "J"]
    assert [o.status for o in deliver("J")] == ["ran"]
    assert all(ds.get("s1", f"ckpt/{b}-UnumIndex-{i if shape == 'parallel' else 0}") is None
               for i, b in enumerate(branches))           # collected by J
    assert ds.get("s1", "fanin/J") is None
    assert [o.status for o in deliver("M")] == ["ran"]
    assert ds.get("s1", "ckpt/J") is None               # collected by M (or J has none)
    if shape == "map":
        late = [eng["R"].handle(first["R"][0])]         # R0's late duplicate re-runs
    else:
        assert eng["S"].handle(entry).status == "ran"   # S's late duplicate re-runs ...
        late = deliver("A") + deliver("B")              # ... and so do both its branches
    assert all(runs[b] == 2 for b in branches), runs
    assert [o.status for o in late] == ["ran"] * len(branches)
    assert [o.invoked for o in late] == [0] * len(branches), "a late branch fired J again"
    assert ds.get("s1", "fanin/J") is None              # the set J deleted is not re-created
    assert [f for f, _ in inv.calls] == ["End"]         # M's call, not yet delivered
    assert eng["J"].handle(fired[0]).status == "dropped"  # a duplicate delivery of J's firing
    assert len(j_inputs) == 1, j_inputs
    assert [o.status for o in deliver("End")] == ["ran"]
    assert ds.dump() == {"s1": ["result"]}               # done/J and the re-runs' checkpoints swept


def test_a_fan_in_target_under_eager_drops_a_firing_that_names_a_re_run_value(tmp_path):
    """gc `eager`, S -Map-> R (one item) -Fan-in-> J -> M -> End. Execution E1 of R0 commits
    and reads `done/J` (absent), then is slow before its set add; meanwhile a duplicate E2
    adopts and fires J, J runs (records `done/J`, deletes ckpt/R0 and `fanin/J`), M deletes
    ckpt/J, and a third execution E3 of R0 runs again, commits a second value, declines on
    `done/J` and is killed before it collects that checkpoint. E1's add then re-creates the
    set and fires J, whose delivery finds its checkpoint gone and its input present (E3's
    value): it drops on `done/J`, read after its inputs, instead of running J on it."""
    from runtime.errors import InjectedCrash
    from runtime.faults import Faults

    class KillBeforeGc(Faults):
        armed = False

        def point(self, name, session, instance):
            if self.armed and name == "before_gc":
                self.armed = False
                raise InjectedCrash("killed before its GC")

    class Slow(SqliteDatastore):
        """Runs `meanwhile` once, at the first add to fanin/J (E1's)."""
        meanwhile = None

        def set_add(self, session, name, member, expires_at):
            if name == "fanin/J" and self.meanwhile is not None:
                todo, self.meanwhile = self.meanwhile, None
                todo()
            return super().set_add(session, name, member, expires_at)

    docs = [{"Name": "S", "Start": True, "Next": {"Name": "R", "Type": "Map"}},
            {"Name": "R", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"],
                                   "Payload Modifiers": ["Pop"]}},
            {"Name": "J", "Next": {"Name": "M"}}, {"Name": "M", "Next": {"Name": "End"}}, {"Name": "End"}]
    w = build_workflow((load_function(d), d["Name"]) for d in docs)
    ds, inv, kill = Slow(tmp_path / "db"), Recorder(), KillBeforeGc()
    runs, j_inputs = [0], []

    def rep(e, c):
        runs[0] += 1
        return f"R0-run{runs[0]}"
    handlers = {"S": lambda e, c: [0], "R": rep, "J": lambda e, c: j_inputs.append(e) or e,
                "M": lambda e, c: e, "End": lambda e, c: e}
    eng = {fn: Engine(w.functions[fn], handlers[fn], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc="eager"),
                      faults=kill if fn == "R" else None) for fn in handlers}
    eng["S"].handle(entry_payload("s1", None))
    (_, r0), = inv.calls
    inv.calls.clear()

    def deliver(fn):
        got = [p for f, p in inv.calls if f == fn]
        inv.calls[:] = [(f, p) for f, p in inv.calls if f != fn]
        return [eng[fn].handle(p).status for p in got]

    def meanwhile():
        assert eng["R"].handle(r0).status == "adopted"   # E2 fires J
        assert deliver("J") == ["ran"] and deliver("M") == ["ran"]
        assert ds.get("s1", "ckpt/R-UnumIndex-0") is None and ds.get("s1", "ckpt/J") is None
        kill.armed = True
        with pytest.raises(InjectedCrash):
            eng["R"].handle(r0)                          # E3 re-runs, killed before its GC
        assert ds.get("s1", "ckpt/R-UnumIndex-0")["v"] == "R0-run2"
    ds.meanwhile = meanwhile
    e1 = eng["R"].handle(r0)                             # E1, slow before its set add
    assert e1.status == "ran" and ds.meanwhile is None
    assert e1.invoked == 1                               # the re-created set is complete: J fired
    assert deliver("J") == ["dropped"]
    assert j_inputs == [["R0-run1"]], j_inputs
    assert eng["R"].handle(r0).status == "adopted"       # E3's redelivery: declines, collected
    assert deliver("End") == ["ran"]
    assert ds.get("s1", "result")["v"] == ["R0-run1"]
    assert ds.dump() == {"s1": ["result"]}
