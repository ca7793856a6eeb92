"""A late duplicate never runs user code (issue 22, defect 5; docs/protocol.md "Why the
invariants hold", 1).

T -> U (chain A -> B -> C, T = B, U = C, the terminal). A duplicate D of B's invocation is
delivered after B committed. Its ingress reads are served item by item by the explorer's
stepped ports (tools/explorer/stepped.py: DynamoDB BatchGetItem and the Firestore adapter's
chunked queries are not snapshots), always `result` first when a read offers the choice,
and C (which ends the session and sweeps) runs to completion after each of D's steps in
turn. Whatever the point, D must not run B's user code: it adopts, or drops. Before the
ingress read `ckpt/B` before `result` in two steps, the schedule "D reads `result` (absent),
C ends and sweeps, D reads `ckpt/B` (absent)" ran B's user code a second time."""

from __future__ import annotations

import pytest

from runtime.payload import RESULT_KEY
from tools.explorer.harness import Harness
from tools.explorer.workflows.ir_apps import chain

B_MSG = "r.0>0"  # the message A's execution r.0 sent to B (tools/explorer/scheduler.py ids)


def _step(h: Harness, eid: str) -> bool:
    """Perform one step of execution `eid`, serving `result` first when its pending op is a
    multi-item read that still has it to serve; False once the execution is done."""
    ex = h.world.execs[eid]
    if ex.done:
        return False
    op = ex.pending
    assert op is not None
    part = 0
    if op.parts is not None:
        left = sorted(op.remaining)
        part = next((i for i in left if op.parts[i] == RESULT_KEY), left[0])
    h.world.apply(("run", eid, part))
    return True


def _finish(h: Harness, eid: str) -> None:
    while _step(h, eid):
        pass


def _late_duplicate(gc: str, k: int) -> tuple[Harness, bool]:
    """Run the schedule with D's first `k` steps before C runs; returns (harness, whether
    D had more than k steps, i.e. C really ran in between)."""
    h = Harness(chain(gc))
    w = h.world
    w.apply(("deliver", "r"))
    _finish(h, "r.0")                     # A commits, invokes B
    w.apply(("dup", B_MSG))               # B's first execution (the message stays pending)
    _finish(h, B_MSG + ".0")              # B commits, invokes C, collects A
    w.apply(("deliver", B_MSG))           # D: the late duplicate of B
    d = B_MSG + ".1"
    steps = 0
    while steps < k and _step(h, d):
        steps += 1
    interleaved = not w.execs[d].done
    c_msg = B_MSG + ".0>0"
    w.apply(("deliver", c_msg))
    _finish(h, c_msg + ".0")              # C ends the session and sweeps
    _finish(h, d)
    return h, interleaved


@pytest.mark.parametrize("gc", ["safe", "eager", "none"])
def test_late_duplicate_runs_no_user_code_whatever_the_read_order(gc):
    tried = 0
    for k in range(12):
        h, interleaved = _late_duplicate(gc, k)
        try:
            runs = [eid for eid, _, _ in h.checker.inputs["B"]]
            assert runs == [B_MSG + ".0"], (gc, k, runs, [label for _, label in h.world.log])
            res = h.result()
            assert res is not None and res["status"] == "SUCCEEDED" and res["instance"] == "C"
        finally:
            h.world.close()
        if not interleaved:
            break
        tried += 1
    assert tried >= 2  # C ran inside D's ingress (between its reads) at least once


def _failing_branch(gc: str):
    """Start -> [Up, Low] -> Join; Up raises, so its committed failure ends the session
    while Low's invocation is still undelivered."""
    from tools.explorer.model import ir_workflow

    def fail(e, c):
        raise ValueError("Up fails")
    branch = {"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Up-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow(f"failing-branch-{gc}", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, lambda e, c: e),
        "Up": (branch, fail),
        "Low": (branch, lambda e, c: e),
        "Join": ({}, lambda e, c: e),
    }, "x", gc=gc, failures_possible=True)


@pytest.mark.parametrize("gc", ["safe", "eager", "none"])
def test_no_user_code_runs_once_the_session_has_its_result(gc):
    """A delivery that begins after the session has its result (here: another branch's
    committed failure) drops without running user code, under every gc mode: `none`, which
    sweeps nothing, still reads `result` at ingress (docs/protocol.md "GC modes")."""
    h = Harness(_failing_branch(gc))
    w = h.world
    try:
        w.apply(("deliver", "r"))
        _finish(h, "r.0")                   # Start invokes Up (r.0>0) and Low (r.0>1)
        w.apply(("deliver", "r.0>0"))
        _finish(h, "r.0>0.0")               # Up fails: FAILED result, session ended
        res = h.result()
        assert res is not None and res["status"] == "FAILED"
        w.apply(("deliver", "r.0>1"))
        _finish(h, "r.0>1.0")
        assert h.checker.inputs["Low-UnumIndex-1"] == []
        assert w.execs["r.0>1.0"].status == "dropped"
    finally:
        w.close()
