"""Shuffle groups (issue 26 item 2, runtime/triggers/shuffle.py) under exploration.

`shuffle`: Src -Map-> Prod[0..1] -Shuffle-> Cons[key] -Fan-in-> Join. The producers emit
nondeterministic values, a key repeated within and across producers, and a key that only
some executions emit (keys known at run time: a duplicate may compute another key set, and
only the committed one may count). Every consumer's output is nondeterministic too. The
result must be, key by key in code-point order, exactly the values the committed producers
emitted for it (by producer index, then emission order): `check_result`."""

from __future__ import annotations

from typing import Any

from ..model import WorkflowSpec, ir_workflow
from .nd import nd, tok


def _prod(e, c):
    i = c.index
    pairs = [["b", f"{i}.0:{tok()}"], ["a", f"{i}.1:{tok()}"]]
    if i == 0:
        pairs.append(["b", f"{i}.2:{tok()}"])
    elif nd() % 2 == 0:  # a key only some executions emit
        pairs.append(["c/../x", f"{i}.2:{tok()}"])
    return pairs


def _cons(e, c):
    return [c.key, e, tok()]


def expected_groups(view: Any, producer: str = "Prod") -> list[list[Any]] | None:
    """[[key, values], ...] grouped from the committed producer outputs (None: not all known)."""
    commits = view.c.commits
    outs = []
    for inst in sorted((i for i in commits if i.split("-Unum", 1)[0] == producer),
                       key=lambda n: int(n.rsplit("-", 1)[1])):
        if not commits[inst]:
            return None
        outs.append(commits[inst][0][1])
    groups: dict[str, list[Any]] = {}
    for out in outs:
        for k, v in out:
            groups.setdefault(k, []).append(v)
    return [[k, groups[k]] for k in sorted(groups)]


def shuffle() -> WorkflowSpec:
    def check(value, view) -> str | None:
        exp = expected_groups(view)
        if exp is None:
            return None
        got = [[k, vals] for k, vals, _ in value] if isinstance(value, list) else value
        if got != exp:
            return f"shuffle groups {got} != grouped committed producer outputs {exp}"
        return None

    return ir_workflow("shuffle", {
        "Src": ({"Start": True, "Next": {"Name": "Prod", "Type": "Map"}}, lambda e, c: ["p0", "p1"]),
        "Prod": ({"Next": {"Name": "Cons", "Type": "Shuffle"}}, _prod),
        "Cons": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, _cons),
        "Join": ({}, lambda e, c: e),
    }, None, terminals={"Join"}, check_result=check,
        about="shuffle groups: 2 producers, keys known at run time, one consumer per key, joined")


def _side(e, c):
    return [c.index, e, tok()]


def shuffle_side() -> WorkflowSpec:
    """Producers with a second edge (issue 33 item 1): Prod -[Shuffle -> Cons, Scalar -> Side];
    Cons -Fan-in-> Join, Side -Fan-in-> SideAll, both -Fan-in-> Final. Each producer's
    checkpoint has two consumers (the stage and its Side); a producer killed after joining the
    stage and before invoking Side must still find its checkpoint when redelivered. The
    result must be the shuffle groups of the committed producer outputs and, per producer,
    Side's input: that producer's committed output."""
    def check(value, view) -> str | None:
        if not isinstance(value, list) or len(value) != 2:
            return f"Final got {value!r:.80}, not [Join, SideAll]"
        joined, sides = value
        exp = expected_groups(view)
        if exp is None:
            return None
        got = [[k, vals] for k, vals, _ in joined] if isinstance(joined, list) else joined
        if got != exp:
            return f"shuffle groups {got} != grouped committed producer outputs {exp}"
        prods = [view.c.commits.get(f"Prod-UnumIndex-{i}") for i in range(2)]
        want = [[i, p[0][1]] for i, p in enumerate(prods) if p]
        if [s[:2] for s in sides] != want:
            return f"Side inputs {[s[:2] for s in sides]} != committed producer outputs {want}"
        return None

    final = {"Next": {"Name": "Final", "Type": "Fan-in", "Values": ["Join", "SideAll"]}}
    return ir_workflow("shuffle-side", {
        "Src": ({"Start": True, "Next": {"Name": "Prod", "Type": "Map"}}, lambda e, c: ["p0", "p1"]),
        "Prod": ({"Next": [{"Name": "Cons", "Type": "Shuffle"}, {"Name": "Side"}]}, _prod),
        "Cons": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, _cons),
        "Side": ({"Next": {"Name": "SideAll", "Type": "Fan-in", "Values": ["Side-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, _side),
        "Join": (final, lambda e, c: e),
        "SideAll": (final, lambda e, c: e),
        "Final": ({}, lambda e, c: e),
    }, None, terminals={"Final"}, check_result=check,
        about="shuffle producers with a second (Scalar) edge: [Shuffle -> Cons, Scalar -> Side]")


def _prod_small(e, c):
    i = c.index
    pairs = [["a", f"{i}.0:{tok()}"]]
    if i == 0:
        pairs.append(["b", f"{i}.1:{tok()}"])
    return pairs


def shuffle_fanout() -> WorkflowSpec:
    """Producers with a Map edge beside the Shuffle edge: Prod -[Shuffle -> Cons, Map -> Each]
    (one Each per emitted pair), Each -Fan-in-> Row (per producer) -Fan-in-> Rows, and Join,
    Rows -Fan-in-> Final. Producer i's checkpoint has 1 + (its pairs) consumers. The result
    must be the shuffle groups and, per producer, its committed pairs one by one."""
    def check(value, view) -> str | None:
        if not isinstance(value, list) or len(value) != 2:
            return f"Final got {value!r:.80}, not [Join, Rows]"
        joined, rows = value
        exp = expected_groups(view)
        if exp is None:
            return None
        got = [[k, vals] for k, vals, _ in joined] if isinstance(joined, list) else joined
        if got != exp:
            return f"shuffle groups {got} != grouped committed producer outputs {exp}"
        prods = [view.c.commits.get(f"Prod-UnumIndex-{i}") for i in range(2)]
        want = [p[0][1] for p in prods if p]
        if [[each[0] for each in row] for row in rows] != want:
            return f"Each inputs {rows!r:.120} != committed producer outputs {want}"
        return None

    final = {"Next": {"Name": "Final", "Type": "Fan-in", "Values": ["Join", "Rows"]}}
    return ir_workflow("shuffle-fanout", {
        "Src": ({"Start": True, "Next": {"Name": "Prod", "Type": "Map"}}, lambda e, c: ["p0", "p1"]),
        "Prod": ({"Next": [{"Name": "Cons", "Type": "Shuffle"}, {"Name": "Each", "Type": "Map"}]}, _prod_small),
        "Cons": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, _cons),
        "Each": ({"Next": {"Name": "Row", "Type": "Fan-in", "Values": ["Each-UnumIndex-$1.*"],
                           "Payload Modifiers": ["Pop"]}}, lambda e, c: [e, tok()]),
        "Row": ({"Next": {"Name": "Rows", "Type": "Fan-in", "Values": ["Row-UnumIndex-*"],
                          "Payload Modifiers": ["Pop"]}}, lambda e, c: e),
        "Join": (final, lambda e, c: e),
        "Rows": (final, lambda e, c: e),
        "Final": ({}, lambda e, c: e),
    }, None, terminals={"Final"}, check_result=check,
        about="shuffle producers with a Map edge beside the Shuffle edge: [Shuffle -> Cons, Map -> Each]")


def shuffle_workflows() -> list[WorkflowSpec]:
    return [shuffle(), shuffle_side(), shuffle_fanout()]
