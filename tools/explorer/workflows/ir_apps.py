"""Hand-written IR workflows (docs/ir.md) with nondeterministic user functions.

Each one exercises a pattern of seed 001 §3 (chain, fan-out, Map, fan-in with static and
glob Values, partial fan-in, fold, conditional, cycle, loop in a Map branch, Checkpoint
false, the gc modes, blobs, Retry and user failures)."""

from __future__ import annotations

from ..model import WorkflowSpec, ir_workflow
from .nd import calls, nd, tok

FANIN = "Fan-in"


def echo(e, c):
    return e


def tagged(name):
    """A function returning [input, '<name>:<execution token>']: nondeterministic."""
    def handler(e, c):
        return [e, f"{name}:{tok()}"]
    return handler


def chain(gc: str = "safe", name: str = "chain") -> WorkflowSpec:
    return ir_workflow(name, {
        "A": ({"Start": True, "Next": {"Name": "B"}}, tagged("A")),
        "B": ({"Next": {"Name": "C"}}, tagged("B")),
        "C": ({}, tagged("C")),
    }, 1, gc=gc, terminals={"C"}, about=f"A -> B -> C, gc={gc}")


def fanout(gc: str = "safe", name: str = "fanout") -> WorkflowSpec:
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow(name, {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": (branch, tagged("U")),
        "Low": (branch, tagged("L")),
        "Join": ({}, tagged("J")),
    }, "x", gc=gc, terminals={"Join"}, about=f"parallel fan-out, static fan-in, gc={gc}")


def map_glob(items=2, name: str = "map-glob") -> WorkflowSpec:
    def split(e, c):
        return [f"{i}:{tok()}" for i in range(items)]
    return ir_workflow(name, {
        "Split": ({"Start": True, "Next": {"Name": "Sq", "Type": "Map"}}, split),
        "Sq": ({"Next": {"Name": "Sum", "Type": FANIN, "Values": ["Sq-UnumIndex-*"], "Payload Modifiers": ["Pop"]}},
               tagged("Sq")),
        "Sum": ({}, tagged("Sum")),
    }, None, terminals={"Sum"}, about=f"Map over {items} nondeterministic items, glob fan-in")


def map_empty() -> WorkflowSpec:
    wf = map_glob(0, "map-empty")
    wf.about = "Map over [] then a glob fan-in (the fan-in target must still produce the result)"
    return wf


def map_nested() -> WorkflowSpec:
    def outer(e, c):
        return [["a"], ["b", f"c:{tok()}"]]
    return ir_workflow("map-nested", {
        "Outer": ({"Start": True, "Next": {"Name": "Inner", "Type": "Map"}}, outer),
        "Inner": ({"Next": {"Name": "Leaf", "Type": "Map"}}, echo),
        "Leaf": ({"Next": {"Name": "Row", "Type": FANIN, "Values": ["Leaf-UnumIndex-$1.*"],
                           "Payload Modifiers": ["Pop"]}}, tagged("Leaf")),
        "Row": ({"Next": {"Name": "All", "Type": FANIN, "Values": ["Row-UnumIndex-*"],
                          "Payload Modifiers": ["Pop"]}}, echo),
        "All": ({}, echo),
    }, None, terminals={"All"}, about="nested Map with a fan-in per row and one over rows")


def partial_fold() -> WorkflowSpec:
    pair = {"Name": "Pair", "Type": FANIN}

    def src(e, c):
        return ["a", f"b{nd()}"]
    return ir_workflow("partial-fold", {
        "Src": ({"Start": True, "Next": {"Name": "Item", "Type": "Map"}}, src),
        "Item": ({"Next": [
            {**pair, "Values": ["Item-UnumIndex-$0"], "Conditional": "$0 == 0"},
            {**pair, "Values": ["Item-UnumIndex-($0-1)", "Item-UnumIndex-$0"], "Conditional": "$0 > 0"},
            {**pair, "Values": ["Item-UnumIndex-$0", "Item-UnumIndex-($0+1)"],
             "Conditional": "$0 < $size-1", "Payload Modifiers": ["$0=$0+1"]}]}, echo),
        "Pair": ({"Next": [
            {"Name": "Acc", "Type": FANIN, "Values": ["Pair-UnumIndex-0"], "Conditional": "$0 == 0"},
            {"Name": "Acc", "Type": FANIN, "Values": ["Acc-UnumIndex-($0-1)", "Pair-UnumIndex-$0"],
             "Conditional": "$0 > 0"}]}, lambda e, c: "".join(e)),
        "Acc": ({"Next": [
            {"Name": "Acc", "Type": FANIN, "Values": ["Acc-UnumIndex-$0", "Pair-UnumIndex-($0+1)"],
             "Conditional": "$0 < $size-1", "Payload Modifiers": ["$0=$0+1"]},
            {"Name": "Out", "Conditional": "$0 == $size-1", "Payload Modifiers": ["Pop"]}]},
            lambda e, c: "|".join(e)),
        "Out": ({}, echo),
    }, None, terminals={"Out"}, about="partial fan-in (pairs of neighbours) and an ordered fold")


def conditional() -> WorkflowSpec:
    def check(e, c):
        return {"t": 70 if nd() % 2 == 0 else 10, "by": tok()}
    return ir_workflow("conditional", {
        "Check": ({"Start": True, "Next": [{"Name": "Hot", "Conditional": "$out['t'] > 50"},
                                           {"Name": "Cold", "Conditional": "$out['t'] <= 50"}]}, check),
        "Hot": ({}, tagged("Hot")),
        "Cold": ({}, tagged("Cold")),
    }, None, terminals={"Hot", "Cold"}, about="a conditional on a nondeterministic value")


def cycle() -> WorkflowSpec:
    def inc(e, c):
        return {"n": e["n"] + 1, "by": e["by"] + [tok()]}
    return ir_workflow("cycle", {
        "Init": ({"Start": True, "Next": {"Name": "Inc"}}, echo),
        "Inc": ({"Next": {"Name": "Inc", "Conditional": "$out['n'] < 2"}}, inc),
    }, {"n": 0, "by": []}, terminals={"Inc"}, about="a cycle (iteration counter) of two passes")


def loop_in_map() -> WorkflowSpec:
    def step(e, c):
        return {"n": e["n"] + 1, "by": tok()}
    return ir_workflow("loop-in-map", {
        "Split": ({"Start": True, "Next": {"Name": "Loop", "Type": "Map"}}, lambda e, c: [{"n": 0}, {"n": 1}]),
        "Loop": ({"Next": [{"Name": "Loop", "Conditional": "$out['n'] < 2"},
                           {"Name": "Sum", "Type": FANIN, "Values": ["Loop-UnumIndex-*"],
                            "Conditional": "$out['n'] >= 2", "Payload Modifiers": ["Pop"]}]}, step),
        "Sum": ({}, echo),
    }, None, terminals={"Sum"}, about="a loop inside a Map branch (different trip counts) then a fan-in")


def no_checkpoint() -> WorkflowSpec:
    return ir_workflow("checkpoint-false", {
        "A": ({"Start": True, "Checkpoint": False, "Next": {"Name": "B"}}, tagged("A")),
        "B": ({"Checkpoint": False, "Next": {"Name": "C"}}, tagged("B")),
        "C": ({}, tagged("C")),
    }, 1, terminals={"C"}, about="Checkpoint: false on A and B (at-least-once), C checkpoints")


def fanin_target_no_checkpoint() -> WorkflowSpec:
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow("fanin-nockpt", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, echo),
        "Up": (branch, tagged("U")),
        "Low": (branch, tagged("L")),
        "Join": ({"Checkpoint": False, "Next": {"Name": "End"}}, tagged("J")),
        "End": ({}, echo),
    }, "x", terminals={"End"}, about="a fan-in target with Checkpoint: false, followed by End")


def blobs(gc: str = "safe", name: str = "blobs") -> WorkflowSpec:
    def big(e, c):
        return "x" * 1200 + tok()

    def end(e, c):
        return {"len": len(e), "tail": e[-12:], "pad": "y" * 1200, "by": tok()}
    return ir_workflow(name, {
        "Big": ({"Start": True, "Next": {"Name": "End"}}, big),
        "End": ({}, end),
    }, None, gc=gc, max_item_bytes=3000, max_payload_bytes=1000, terminals={"End"},
        about=f"checkpoints, payload and result above the item/payload limits (blob store), gc={gc}")


def retry() -> WorkflowSpec:
    def flaky(e, c):
        if calls() == 0:
            raise ConnectionError("transient")
        return [e, f"F:{tok()}"]
    return ir_workflow("retry", {
        "F": ({"Start": True, "Retry": {"MaxAttempts": 1, "ErrorEquals": ["ConnectionError"]},
               "Next": {"Name": "G"}}, flaky),
        "G": ({}, tagged("G")),
    }, 1, terminals={"G"}, about="a user error on every execution's first call, recovered by Retry")


def user_failure() -> WorkflowSpec:
    def sometimes(e, c):
        if nd() % 2 == 1:
            raise ValueError(f"bad luck in {tok()}")
        return [e, f"F:{tok()}"]
    return ir_workflow("user-failure", {
        "A": ({"Start": True, "Next": {"Name": "F"}}, tagged("A")),
        "F": ({"Next": {"Name": "G"}}, sometimes),
        "G": ({}, tagged("G")),
    }, 1, terminals={"G"}, failures_possible=True,
        about="F raises in some executions (no Retry): FAILED only if the failure commits first")


def terminal_failure() -> WorkflowSpec:
    def sometimes(e, c):
        if nd() % 2 == 1:
            raise ValueError(f"bad luck in {tok()}")
        return [e, f"F:{tok()}"]
    return ir_workflow("terminal-failure", {
        "A": ({"Start": True, "Next": {"Name": "F"}}, tagged("A")),
        "F": ({}, sometimes),
    }, 1, terminals={"F"}, failures_possible=True,
        about="the terminal F (its commit point is `result`) raises in some executions")


def chain_txn(name: str = "chain-txn", big: bool = False, gated: bool = True) -> WorkflowSpec:
    """A -> B -> C on the local target's model: writes from each commit point on are one
    transaction, lost when the instance is killed before it commits (tools.explorer.txn).
    With `big`, A's output (B's input) travels as a payload blob that B's GC deletes.
    `gated`: blob deletes wait for the transaction's commit, as the local FileBlobStore's
    gate does (runtime/local/datastore.py, issue 22 defect 1); gated=False models the
    store before that fix (tests show the explorer finds the lost transaction there)."""
    def a(e, c):
        return ("x" * 1200 if big else "") + f"A:{tok()}"

    def b(e, c):
        return [e[-8:], f"B:{tok()}"]
    return ir_workflow(name, {
        "A": ({"Start": True, "Next": {"Name": "B"}}, a),
        "B": ({"Next": {"Name": "C"}}, b),
        "C": ({}, tagged("C")),
    }, 1, txn=True, deferred_blob_deletes=gated, terminals={"C"}, max_payload_bytes=1000 if big else 200_000,
        about="A -> B -> C, local deferred transactions" + (", B's input a payload blob" if big else "")
        + ("" if gated else ", blob deletes outside the transaction"))


def fanout_fail_none() -> WorkflowSpec:
    """Under gc `none`, Up fails (no Retry) while Low -> Low2 runs: Low2's delivery after the
    FAILED result must not run its user code (the ingress reads `result` in every mode)."""
    def boom(e, c):
        raise ValueError(f"Up fails in {tok()}")
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up-UnumIndex-0", "Low2-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow("fanout-fail-none", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": (branch, boom),
        "Low": ({"Next": {"Name": "Low2"}}, tagged("L")),
        "Low2": (branch, tagged("L2")),
        "Join": ({}, tagged("J")),
    }, "x", gc="none", terminals={"Join"}, failures_possible=True,
        about="gc none: one branch fails while the other still runs")


def fanout_limit() -> WorkflowSpec:
    """Branches of 1 and 2 transitions into a fan-in, then End, with max_transitions 3:
    End is transition 3 when Low completes the fan-in (within the limit) and 4 when Up2
    does (over it). A FAILED
    TransitionLimitExceeded is legitimate only on the committed path (issue 22, defect 2)."""
    branch = {"Next": {"Name": "Join", "Type": FANIN, "Values": ["Up2-UnumIndex-0", "Low-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow("fanout-limit", {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Low"}]}, tagged("S")),
        "Up": ({"Next": {"Name": "Up2"}}, tagged("U")),
        "Up2": (branch, tagged("U2")),
        "Low": (branch, tagged("L")),
        "Join": ({"Next": {"Name": "End"}}, tagged("J")),
        "End": ({}, tagged("E")),
    }, "x", terminals={"End"}, failures_possible=True, options={"max_transitions": 3},
        about="unequal branches into a fan-in under runtime.max_transitions = 3")


def ir_workflows() -> list[WorkflowSpec]:
    return [chain(), fanout(), map_glob(), map_empty(), map_nested(), partial_fold(), conditional(),
            cycle(), loop_in_map(), no_checkpoint(), fanin_target_no_checkpoint(),
            chain("eager", "chain-eager"), fanout("eager", "fanout-eager"), chain("none", "chain-none"),
            fanout("none", "fanout-none"), blobs(), blobs("none", "blobs-none"), retry(), user_failure(),
            terminal_failure(), chain_txn(), chain_txn("chain-blob-txn", big=True), fanout_fail_none(),
            fanout_limit()]
