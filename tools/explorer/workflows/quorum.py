"""k-of-n fan-in workflows (`Quorum: k`, runtime/triggers/quorum.py, docs/ir.md "Quorum").

Three nondeterministic replicas (a Map over 3 items) into a `Quorum: 2` fan-in: under
duplicates, crashes (between a branch's slot claim and its invoke, among others), expiries
and preemptions, the explorer's invariants (a)-(f) hold (every execution of the target gets
the same inputs, the committed ones; one result; nothing left but the result), and
`check_result` adds the quorum's own: the result is 2 answers of 2 different replicas, each
the value committed for that replica, and every delivery of the target carries the same
list of inputs (fired once, whatever executions invoked it), so a straggler (the third replica, committing after
the quorum fired) is in no result and no second firing changes the inputs."""

from __future__ import annotations

import json

from ..model import WorkflowSpec, ir_workflow
from .ir_apps import echo
from .nd import tok


def replica(e, c):
    """A replica's answer: its index and the execution's token (nondeterministic)."""
    return {"replica": c.index, "by": tok()}


def _check(k: int):
    """The workflow's `check_result` for a quorum of k (see the module docstring)."""
    def check(value, view) -> str | None:
        if not isinstance(value, list) or len(value) != k:
            return f"the target got {value!r:.80}, not the {k} answers of the quorum"
        ids = [v.get("replica") for v in value if isinstance(v, dict)]
        if len(set(ids)) != k:
            return f"the quorum holds replicas {ids}: a replica counted twice"
        # every delivery of the target, run or dropped, carries the same k inputs: a second
        # firing with another list is a violation even when the target's commit hides it.
        # A delivery that began once the session had its result drops (invariant (f) checks
        # it runs no user code): under gc safe the final sweep removes the slots, and a
        # straggler that committed before the end and joins after the sweep may claim slot 1
        # again; its firing is delivered after the result, so it changes nothing.
        fired = {json.dumps(p["Data"].get("Value")) for e, p in view.c.payloads.items()
                 if p.get("Data", {}).get("Source") == "checkpoint" and e not in view.c.after_result}
        if len(fired) > 1:
            return f"the quorum target was fired with {len(fired)} different input lists: {sorted(fired)}"
        committed = {json.dumps(v, sort_keys=True) for v in view.committed_user_output("R")}
        stray = [v for v in value if json.dumps(v, sort_keys=True) not in committed]
        if stray:
            return f"quorum input {stray[0]!r:.80} is not a committed replica answer"
        # every execution of the target whose user code ran got the first committed answers
        # of its members (under gc eager a late duplicate of a member may run again and
        # commit a second answer once its checkpoint was deleted: issue 33 item 4)
        for eid, got, payload in view.c.inputs.get("J", []):
            members = (payload.get("Data") or {}).get("Value") or []
            firsts = [(view.c.commits.get(m) or [(None, None)])[0][1] for m in members]
            if eid not in view.c.after_result and json.dumps(got, sort_keys=True) != json.dumps(firsts, sort_keys=True):
                return (f"the quorum target's user code ran in {eid} on {got!r:.80}, not on the first "
                        f"committed answers {firsts!r:.80} of {members}")
        return None
    return check


def quorum(gc: str = "safe", name: str = "quorum", n: int = 3, k: int = 2, chain: bool = False) -> WorkflowSpec:
    """S -Map-> n replicas R -Fan-in `Quorum: k`-> J (terminal), under gc mode `gc`; with
    `chain`, J -> M -> End (End terminal): J's checkpoint is then collected (by M) while the
    session is live, so a member's late duplicate can reach a J whose checkpoint is gone."""
    def split(e, c):
        return list(range(n))
    nodes = {
        "S": ({"Start": True, "Next": {"Name": "R", "Type": "Map"}}, split),
        "R": ({"Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"], "Quorum": k,
                        "Payload Modifiers": ["Pop"]}}, replica),
        "J": ({"Next": {"Name": "M"}} if chain else {}, echo),
    }
    if chain:
        nodes.update({"M": ({"Next": {"Name": "End"}}, echo), "End": ({}, echo)})
    return ir_workflow(name, nodes, None, gc=gc, terminals={"End" if chain else "J"}, check_result=_check(k),
                       about=f"{n} replicas into a Quorum of {k} (k-of-n fan-in){' -> M -> End' if chain else ''}, "
                             f"gc={gc}")


def quorum_workflows() -> list[WorkflowSpec]:
    """The quorum workflows: 2 of 3 under `safe` (the local default) and `none` (aws and
    gcp), 1 of 2 (the first answer wins: the smallest race between two k-th claims), and
    both under `eager` with J -> M -> End (issue 33: a member's late duplicate re-runs once
    its checkpoint is deleted, while J's checkpoint is deleted too)."""
    return [quorum(), quorum("none", "quorum-none"), quorum(name="quorum-first", n=2, k=1),
            quorum("eager", "quorum-eager", chain=True), quorum("eager", "quorum-first-eager", n=2, k=1, chain=True)]
