"""The engine runs every trigger through one interface (runtime/triggers/base.py `Trigger`):
each kind of planned call names its trigger (`runtime.plan.Call.trigger`), the registry
(runtime/triggers/registry.py) holds one implementation of `fire` per kind, and
`Engine._continue` branches on no trigger kind. The triggers' protocols themselves are
tested end to end by tests/runtime/triggers/ (test_shuffle.py, test_quorum.py, test_window*.py), tests/runtime/test_gc.py and
the explorer's workflows and mutants (docs/explorer.md)."""

from __future__ import annotations

import ast
import inspect
import textwrap

from runtime.engine import Engine
from runtime.ir import build_workflow, load_function
from runtime.payload import Frame, Payload
from runtime.plan import Planner
from runtime.triggers.base import Fired
from runtime.triggers.registry import TRIGGERS, trigger_for


def _calls(fn: str, docs: list[dict], value, frames=()):
    wf = build_workflow([(load_function(d, f"ir/{d['Name']}.yaml"), f"ir/{d['Name']}.yaml") for d in docs])
    return Planner(wf.functions[fn]).plan(value, Payload("s1", frames=tuple(frames)), fn).calls


def test_each_edge_type_plans_a_call_of_its_trigger():
    leaf = [{"Name": n} for n in ("B", "C", "J", "W")]
    start = {"Name": "A", "Start": True}
    assert [c.trigger for c in _calls("A", [{**start, "Next": {"Name": "B"}}, *leaf], 1)] == [None]
    assert [c.trigger for c in _calls("A", [{**start, "Next": {"Name": "B", "Type": "Map"}}, *leaf], [1, 2])] \
        == [None, None]
    window = {"Name": "W", "Type": "Window", "Window": "w", "ByBatchSize": 2}
    assert [c.trigger for c in _calls("A", [{**start, "Next": window}, *leaf], 1)] == ["window"]
    branch = [{"Name": "M", "Start": True, "Next": {"Name": "B", "Type": "Map"}},
              {"Name": "C"}, {"Name": "J"}, {"Name": "W"}]
    fanin = {"Name": "B", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["B-UnumIndex-*"]}}
    quorum = {"Name": "B", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["B-UnumIndex-*"], "Quorum": 1}}
    shuffle = {"Name": "B", "Next": {"Name": "J", "Type": "Shuffle"}}
    in_map = [Frame(0, 2)]
    assert [c.trigger for c in _calls("B", [*branch, fanin], 1, in_map)] == ["fan-in"]
    assert [c.trigger for c in _calls("B", [*branch, quorum], 1, in_map)] == ["quorum"]
    assert [c.trigger for c in _calls("B", [*branch, shuffle], [["k", 1]], in_map)] == ["shuffle"]
    # a Map over [] plans its join at once: a fan-in call without a set
    empty = _calls("M", [*branch, fanin], [])
    assert [(c.target, c.trigger, c.set_name) for c in empty] == [("J", "fan-in", None)]


def test_registry_has_one_fire_per_kind():
    assert sorted(TRIGGERS) == ["fan-in", "quorum", "shuffle", "window"]
    assert trigger_for(None) is None
    for kind, trig in TRIGGERS.items():
        sig = inspect.signature(trig.fire)
        assert list(sig.parameters) == ["engine", "ex", "own", "plan", "call", "context", "depth"], kind
        assert sig.return_annotation in (Fired, "Fired"), kind


def test_engine_continue_branches_on_no_trigger_kind():
    """`Engine._continue` reads no trigger field of a call and calls no trigger module: a
    check on its source (it fails on the engine of before issue 35, which tested
    `c.window`, `c.quorum` and `c.shuffle` and called window.add / shuffle.fire itself)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(Engine._continue)))
    attrs = {(n.value.id, n.attr) for n in ast.walk(tree)
             if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    assert not attrs & {("c", "window"), ("c", "quorum"), ("c", "shuffle"), ("c", "set_name"), ("c", "exit"),
                        ("window", "add"), ("shuffle", "fire"), ("self", "_join_quorum")}, attrs
    assert ("c", "trigger") in attrs
