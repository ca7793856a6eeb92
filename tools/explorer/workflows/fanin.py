"""Plain fan-ins under gc `eager` whose target's checkpoint is collected while the session
is live (issue 33, the plain-fan-in sibling of item 4).

J -> M -> End after the fan-in: M deletes J's checkpoint, J deletes its inputs (the branch
checkpoints). A branch's late duplicate then finds its checkpoint gone and runs again (seed
001 §3.5 allows that re-run: its input came inline), commits a second value and adds itself
to the `fanin/J` set that J deleted: it re-creates the set and completes it alone, or all N
branches' late duplicates complete it together. Firing J again would run J's user code on
an input no execution of J was planned with; docs/protocol.md's eager row promises that a
fan-in target whose checkpoint is gone drops. `check_result` requires every execution of J
whose user code ran (delivered before the session's result) to get the first committed
values of its inputs (the check quorum-eager makes for its members), besides (a)-(f)."""

from __future__ import annotations

import json

from ..model import WorkflowSpec, ir_workflow
from .ir_apps import FANIN, echo, tagged
from .shuffle_apps import _cons, _prod, expected_groups

TARGET = "J"


def first_inputs(target: str = TARGET):
    """A `check_result`: None when every execution of fan-in target `target` whose user code
    ran (delivered before the session's result) got the first committed value of each of
    its inputs (`Data.Source` refs, named by the RefList, or a quorum's checkpoint list),
    else why not."""
    from runtime.payload import RefList

    def check(value, view) -> str | None:
        for eid, got, payload in view.c.inputs.get(target, []):
            if eid in view.c.after_result:
                continue  # (f) checks that such a delivery runs no user code
            data = payload.get("Data") or {}
            source = data.get("Source")
            refs = (RefList.from_wire(data.get("Value")).names() if source == "refs"
                    else list(data.get("Value") or []) if source == "checkpoint" else None)
            if refs is None:
                continue
            firsts = [(view.c.commits.get(r) or [(None, None)])[0][1] for r in refs]
            if json.dumps(got, sort_keys=True) != json.dumps(firsts, sort_keys=True):
                return f"{target} ran in {eid} on {got!r:.80}, not the first committed {firsts!r:.80} of {refs}"
        return None
    return check


def map_fanin_eager(items: int = 1, name: str = "fanin-map-eager") -> WorkflowSpec:
    """S -Map-> `items` branches R -Fan-in (glob)-> J -> M -> End, gc eager."""
    def split(e, c):
        return list(range(items))
    return ir_workflow(name, {
        "S": ({"Start": True, "Next": {"Name": "R", "Type": "Map"}}, split),
        "R": ({"Next": {"Name": TARGET, "Type": FANIN, "Values": ["R-UnumIndex-*"], "Payload Modifiers": ["Pop"]}},
              tagged("R")),
        TARGET: ({"Next": {"Name": "M"}}, echo),
        "M": ({"Next": {"Name": "End"}}, echo),
        "End": ({}, echo),
    }, None, gc="eager", terminals={"End"}, check_result=first_inputs(),
        about=f"Map over {items} item(s), glob fan-in into J -> M -> End, gc=eager")


def parallel_fanin_eager(name: str = "fanin-parallel-eager") -> WorkflowSpec:
    """S -> [A, B] -Fan-in (static Values)-> J -> M -> End, gc eager. Both branches must
    re-run to complete a re-created set, so the search needs two late duplicates."""
    branch = {"Next": {"Name": TARGET, "Type": FANIN, "Values": ["A-UnumIndex-0", "B-UnumIndex-1"],
                       "Payload Modifiers": ["Pop"]}}
    return ir_workflow(name, {
        "S": ({"Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]}, tagged("S")),
        "A": (branch, tagged("A")),
        "B": (branch, tagged("B")),
        TARGET: ({"Next": {"Name": "M"}}, echo),
        "M": ({"Next": {"Name": "End"}}, echo),
        "End": ({}, echo),
    }, "x", gc="eager", terminals={"End"}, check_result=first_inputs(),
        bounds={"dups": 2},
        about="parallel [A, B], static fan-in into J -> M -> End, gc=eager")


def shuffle_eager(name: str = "shuffle-eager") -> WorkflowSpec:
    """workflows/shuffle_apps.py's shuffle (Src -Map-> Prod[0..1] -Shuffle-> Cons[key]
    -Fan-in-> Join) with Join -> M -> End, gc eager: the stage deletes the producers'
    checkpoints once it fired, so producers whose late duplicates all re-run could complete a
    re-created `shuffle/Cons` set and fire the consumers again on other values. Every Cons
    execution whose user code ran must get its key's group of the first committed producer
    outputs, and every Join execution the first committed consumer outputs."""
    join_check = first_inputs("Join")

    def check(value, view) -> str | None:
        msg = join_check(value, view)
        exp = expected_groups(view)
        if msg or exp is None:
            return msg
        groups = dict((k, v) for k, v in exp)
        for inst, seen in view.c.inputs.items():
            if inst.split("-Unum", 1)[0] != "Cons":
                continue
            for eid, got, payload in seen:
                key = ((payload.get("Data") or {}).get("Value") or {}).get("Key")
                if eid not in view.c.after_result and got != groups.get(key):
                    return (f"{inst} ran in {eid} on {got!r:.80}, not key {key!r}'s group {groups.get(key)!r:.80} "
                            "of the first committed producer outputs")
        return None
    return ir_workflow(name, {
        "Src": ({"Start": True, "Next": {"Name": "Prod", "Type": "Map"}}, lambda e, c: ["p0", "p1"]),
        "Prod": ({"Next": {"Name": "Cons", "Type": "Shuffle"}}, _prod),
        "Cons": ({"Next": {"Name": "Join", "Type": FANIN, "Values": ["Cons-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, _cons),
        "Join": ({"Next": {"Name": "M"}}, echo),
        "M": ({"Next": {"Name": "End"}}, echo),
        "End": ({}, echo),
    }, None, gc="eager", terminals={"End"}, check_result=check,
        about="shuffle (2 producers) into Cons -Fan-in-> Join -> M -> End, gc=eager")


def fanin_workflows() -> list[WorkflowSpec]:
    """The fan-in workflows under gc `eager` (see the module docstring): a Map's glob
    fan-in, a Parallel's static fan-in, and a shuffle stage."""
    return [map_fanin_eager(), parallel_fanin_eager(), shuffle_eager()]
