"""k-of-n fan-in (`Quorum: k`, runtime/triggers/quorum.py, issue 26 item 1): IR validation,
the slot protocol on the datastore port, and examples/quorum-replicas on the local target."""

from __future__ import annotations

import pytest

from runtime.errors import IRError
from runtime.ir import build_workflow, load_function
from unumctl.manifest import AppError, load_app

from .helpers import make_app


def wf(*docs):
    return build_workflow((load_function(d, f"ir/{d['Name']}.yaml"), f"ir/{d['Name']}.yaml") for d in docs)


def replica(quorum=2, values=("R-UnumIndex-*",), **edge):
    return {"Name": "R", "Next": {"Name": "J", "Type": "Fan-in", "Values": list(values), "Quorum": quorum,
                                  "Payload Modifiers": ["Pop"], **edge}}


START = {"Name": "S", "Start": True, "Next": {"Name": "R", "Type": "Map"}}
JOIN = {"Name": "J"}


# ---------------------------------------------------------------- (a) IR syntax + validation

def test_quorum_loads_and_round_trips():
    w = wf(START, replica(2), JOIN)
    edge = w.functions["R"].next[0]
    assert edge.quorum == 2
    assert w.functions["R"].to_dict()["Next"][0]["Quorum"] == 2
    again = load_function(w.functions["R"].to_dict(), "bundle")
    assert again.next[0].quorum == 2
    assert wf(START, replica(None) | {"Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"]}},
              JOIN).functions["R"].next[0].quorum is None


@pytest.mark.parametrize("doc,fragments", [
    ({"Name": "R", "Next": {"Name": "J", "Quorum": 2}},
     ["ir/R.yaml: Next[0] (function R): Quorum:", "only Fan-in edges", "make the edge 'Type: Fan-in'"]),
    (replica(0), ["ir/R.yaml: Next[0] (function R): Quorum: 0 is not an integer >= 1", "e.g. 'Quorum: 2'"]),
    (replica("2"), ["Quorum: '2' is not an integer >= 1"]),
    (replica(True), ["Quorum: True is not an integer >= 1"]),
    (replica(3, ("R-UnumIndex-0", "R-UnumIndex-1")),
     ["Quorum: 3 is more than the 2 input(s) named by Values", "lower it to at most 2"]),
])
def test_bad_quorum_is_one_line_naming_file_function_field_and_fix(doc, fragments):
    with pytest.raises(IRError) as info:
        load_function(doc, f"ir/{doc['Name']}.yaml")
    msg = str(info.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, msg


def test_edges_into_one_target_must_agree_on_the_quorum():
    a = {"Name": "A", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"],
                               "Quorum": 1, "Payload Modifiers": ["Pop"]}}
    b = {"Name": "B", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["A-UnumIndex-0", "B-UnumIndex-1"],
                               "Payload Modifiers": ["Pop"]}}
    s = {"Name": "S", "Start": True, "Next": [{"Name": "A"}, {"Name": "B"}]}
    with pytest.raises(IRError, match=r"ir/B.yaml: Next\[0\] \(function B\): Quorum: None differs from 1 .*"
                                      r"function A \(ir/A.yaml: Next\[0\]\); give every Fan-in edge"):
        wf(s, a, b, JOIN)


def test_quorum_refuses_branches_that_loop():
    loop = {"Name": "R", "Next": [{"Name": "R", "Conditional": "$out < 2"},
                                  {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-*"], "Quorum": 1,
                                   "Conditional": "$out >= 2", "Payload Modifiers": ["Pop"]}]}
    with pytest.raises(IRError, match=r"Next\[1\] \(function R\): Quorum: branch\(es\) R may loop"):
        wf(START, loop, JOIN)


def test_unumctl_loader_names_the_ir_file(tmp_path):
    code = "def handler(e, c):\n    return e\n"
    root = make_app(tmp_path / "app", "bad-quorum", {
        "S": ({"Start": True, "Next": {"Name": "R", "Type": "Map"}}, code),
        "R": ({"Next": {"Name": "J", "Type": "Fan-in", "Values": ["R-UnumIndex-0", "R-UnumIndex-1"],
                        "Quorum": 5, "Payload Modifiers": ["Pop"]}}, code),
        "J": ({}, code)})
    with pytest.raises(AppError) as info:
        load_app(root)
    assert f"{root / 'ir' / 'R.yaml'}: Next[0] (function R): Quorum: 5 is more than the 2" in str(info.value)
