"""A nested Map over [] under duplicates and crashes (issue 22, defect 4): the explorer
(tools/explorer, docs/explorer.md) runs the real engine on every bounded interleaving; the
session must end with the outer join's value and nothing else left."""

from __future__ import annotations

from tools.explorer.model import ir_workflow
from tools.explorer.search import Bounds, explore, run_schedule


def _echo(e, c):
    return e


def _nested(rows):
    return ir_workflow("map-nested-empty", {
        "Outer": ({"Start": True, "Next": {"Name": "Inner", "Type": "Map"}}, _echo),
        "Inner": ({"Next": {"Name": "Leaf", "Type": "Map"}}, _echo),
        "Leaf": ({"Next": {"Name": "Row", "Type": "Fan-in", "Values": ["Leaf-UnumIndex-$1.*"],
                           "Payload Modifiers": ["Pop"]}}, _echo),
        "Row": ({"Next": {"Name": "All", "Type": "Fan-in", "Values": ["Row-UnumIndex-*"],
                          "Payload Modifiers": ["Pop"]}}, lambda e, c: len(e)),
        "All": ({}, lambda e, c: {"rows": len(e)}),
    }, rows, terminals={"All"})


def test_nested_map_over_empty_list_under_faults():
    wf = _nested([])
    h = run_schedule(wf, [])
    assert h.result() is not None and h.result()["instance"] == "All" and h.result()["v"] == {"rows": 0}
    rep = explore(wf, Bounds(budget=60))
    assert rep.schedules > 0
    assert not rep.found, {k: f.message for k, f in rep.found.items()}
