"""The interleaving explorer (tools/explorer, docs/explorer.md), bounded for CI.

The engine is being fixed in parallel, so 0 violations are asserted only for the
workflows listed in FIXED_WORKFLOWS; add a workflow there once the engine passes it
(`python tools/explore.py --workflow NAME` shows its status). The other tests show that
the explorer can fail (broken datastores are caught), that traces replay exactly, and
that the partial-order reduction keeps every end state.
"""

from __future__ import annotations

import json

import pytest

from tools.explorer.broken import NonAtomicCreateDatastore, StaleReadDatastore
from tools.explorer.cli import main, save_trace
from tools.explorer.harness import Harness
from tools.explorer.memstore import MemDatastore
from tools.explorer.model import ir_workflow
from tools.explorer.search import Bounds, Report, _dfs, explore, run_schedule
from tools.explorer.stepped import SteppedDatastore
from tools.explorer.workflows import all_workflows
from tools.explorer.workflows.ir_apps import tagged

from .conformance.datastore_suite import DatastoreSuite

# The one place to extend: workflows on which the engine on main has no violation.
FIXED_WORKFLOWS = sorted(all_workflows())  # every workflow passes since the commit-point engine
CI_BUDGET = 60  # schedules per workflow (shared by the bound phases)


@pytest.mark.parametrize("name", FIXED_WORKFLOWS)
def test_fixed_workflow_has_no_violation(name):
    rep = explore(all_workflows()[name], Bounds(budget=CI_BUDGET))
    assert rep.schedules > 0
    assert not rep.found, {k: f.message for k, f in rep.found.items()}


# Counterexamples that longer searches (`make explore`: 1,500 schedules per workflow) found
# beyond CI_BUDGET, replayed step by step here once the engine was fixed for them.
FOUND_BEYOND_CI_BUDGET = {
    # End's create of `result` commits, End crashes before its GC; its redelivery finds
    # `result` and ends the session: the final sweep deleted the blob of ckpt/Big while
    # ckpt/Big was still readable (runtime/session.py `end` swept the blobs first).
    "blobs-final-sweep-order": ("blobs", [
        ["deliver", "r"], ["run", "r.0", 0], ["run", "r.0", 0], ["run", "r.0", 0], ["run", "r.0", 0],
        ["run", "r.0", 0], ["run", "r.0", 0], ["run", "r.0", 0], ["deliver", "r.0>0"],
        ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0],
        ["run", "r.0>0.0", 0], ["crash", "r.0>0.0"], ["deliver", "r.0>0"], ["run", "r.0>0.1", 0],
        ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0]]),
}


@pytest.mark.parametrize("key", sorted(FOUND_BEYOND_CI_BUDGET))
def test_counterexample_found_beyond_the_ci_budget_stays_fixed(key):
    name, schedule = FOUND_BEYOND_CI_BUDGET[key]
    h = run_schedule(all_workflows()[name], [tuple(a) for a in schedule])
    assert [a for a, _ in h.world.log][:len(schedule)] == [tuple(a) for a in schedule]  # replayed as found
    assert not h.checker.violations, [v.message for v in h.checker.violations]
    assert h.result() is not None and h.result()["status"] == "SUCCEEDED"


def test_every_workflow_builds_and_runs_its_default_schedule():
    for name, wf in all_workflows().items():
        h = run_schedule(wf, [])
        assert len(h.world.log) > 3, name
        if name != "loop-in-map":  # known hang on main (class 7)
            assert h.result() is not None, name


def test_stale_reads_are_caught():
    """A datastore whose item reads lag one write behind fails workflows the real
    datastore passes with the same budget."""
    rep = explore(all_workflows()["partial-fold"], Bounds(budget=CI_BUDGET), StaleReadDatastore)
    assert rep.found, "stale reads were not detected"


def test_non_atomic_create_is_caught():
    """create_if_absent as read-then-write lets two executions both commit; with one
    duplicate and one preemption the explorer finds the second commit."""
    wf = ir_workflow("solo", {"A": ({"Start": True, "Next": {"Name": "B"}}, tagged("A")),
                              "B": ({}, tagged("B"))}, 1)
    rep = Report("solo")
    _dfs(wf, Bounds(dups=1, crashes=0, preemptions=1, budget=400), NonAtomicCreateDatastore, None, rep)
    msgs = [f.message for f in rep.found.values()]
    assert any("A committed 2 different values" in m for m in msgs), msgs


def test_violation_trace_replays_exactly(tmp_path, capsys):
    rep = explore(all_workflows()["partial-fold"], Bounds(budget=CI_BUDGET), StaleReadDatastore)
    found = next(iter(rep.found.values()))
    path = tmp_path / "trace.json"
    save_trace(path, "partial-fold", found)
    doc = json.loads(path.read_text())
    assert doc["workflow"] == "partial-fold" and doc["invariant"] == found.invariant
    h1 = run_schedule(all_workflows()["partial-fold"], [tuple(a) for a in doc["schedule"]],
                      datastore_cls=StaleReadDatastore, complete=False)
    h2 = run_schedule(all_workflows()["partial-fold"], [tuple(a) for a in doc["schedule"]],
                      datastore_cls=StaleReadDatastore, complete=False)
    assert h1.world.log == h2.world.log
    assert [v.message for v in h1.checker.violations] == [v.message for v in h2.checker.violations]
    assert found.message in [v.message for v in h1.checker.violations]


def test_cli_replay_of_a_clean_schedule_exits_0(tmp_path, capsys):
    wf = all_workflows()["chain-none"]
    h = run_schedule(wf, [])
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"workflow": "chain-none", "schedule": [list(a) for a, _ in h.world.log]}))
    assert main(["--replay", str(path)]) == 0
    out = capsys.readouterr().out
    assert "SUCCEEDED" in out and "VIOLATION" not in out


def test_get_many_is_served_item_by_item():
    h = Harness(all_workflows()["fanout"])
    try:
        while True:  # the default schedule up to the first multi-item read (Join's ingress)
            op = next((e.pending for e in h.world.alive() if e.pending is not None
                       and e.pending.parts is not None and len(e.pending.parts) > 1), None)
            if op is not None:
                break
            h.world.apply(h.world.enabled()[0])
        eid = next(e.id for e in h.world.alive() if e.pending is op)
        runs = [a for a in h.world.enabled() if a[0] == "run" and a[1] == eid]
        assert runs == [("run", eid, i) for i in range(len(op.parts))]  # one step per item
        h.world.apply(("run", eid, len(op.parts) - 1))
        assert [a for a in h.world.enabled() if a[0] == "run" and a[1] == eid] == \
            [("run", eid, i) for i in range(len(op.parts) - 1)]
    finally:
        h.world.close()


def test_sleep_sets_keep_every_end_state():
    """Exhaustive search with and without the reduction reaches the same end states
    (result values and leftovers); the reduction explores fewer schedules."""
    wf = ir_workflow("solo", {"A": ({"Start": True, "Next": {"Name": "B"}}, tagged("A")),
                              "B": ({}, tagged("B"))}, 1)
    reps = []
    for por in (True, False):
        rep = Report("solo")
        # a duplicate: its reads and deliveries commute with the other execution's (the
        # ingress reads one item at a time since the checkpoint is read before `result`)
        assert _dfs(wf, Bounds(dups=1, crashes=0, preemptions=0, expiries=0, budget=20000, por=por),
                    SteppedDatastore, None, rep)
        reps.append(rep)
    assert reps[0].finals == reps[1].finals and len(reps[0].finals) > 1
    assert reps[0].schedules < reps[1].schedules


class TestMemDatastoreConformance(DatastoreSuite):
    """The explorer's in-memory datastore implements the port like every adapter."""

    @pytest.fixture
    def store(self):
        yield MemDatastore()
