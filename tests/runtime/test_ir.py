"""IR loading and validation (seed 000 Appendix A): good IR loads, bad IR is rejected with a
message naming file, field and reason."""

import pytest

from runtime.errors import IRError
from runtime.ir import ValueTemplate, build_workflow, load_function


def wf(*docs):
    return build_workflow((load_function(d, f"{d['Name']}.yaml"), f"{d['Name']}.yaml") for d in docs)


def test_single_edge_and_list_forms():
    a = load_function({"Name": "A", "Start": True, "Next": {"Name": "B", "Type": "Scalar"}})
    assert [e.target for e in a.next] == ["B"] and a.start and a.checkpoint
    b = load_function({"Name": "B", "Next": [{"Name": "C"}, {"Name": "D", "Type": "Map"}]})
    assert [(e.target, e.type) for e in b.next] == [("C", "Scalar"), ("D", "Map")]
    assert not b.scalar_fanout  # one Scalar edge is not a fan-out


def test_round_trip_to_dict():
    doc = {"Name": "A", "Next": [{"Name": "C", "Type": "Fan-in", "Values": ["A-UnumIndex-*"],
                                  "Conditional": "$0 < $size-1", "Payload Modifiers": ["Pop", "$0=$0+1"]}],
           "Checkpoint": False, "Retry": {"MaxAttempts": 2, "IntervalSeconds": 0.5, "BackoffRate": 2.0,
                                          "ErrorEquals": ["ValueError"]}}
    node = load_function(doc)
    again = load_function(node.to_dict())
    assert again == node


@pytest.mark.parametrize("doc, fragment", [
    ({"Name": "A", "Next": {"Name": "B", "Type": "Loop"}}, "Next[0]: Type: 'Loop' must be one of"),
    ({"Name": "A", "Next": {"Name": "B", "Type": "Fan-in"}}, "Next[0]: Values: a Fan-in edge needs"),
    ({"Name": "A", "Next": {"Name": "B", "Conditional": "$out >"}}, "Next[0]: Conditional: bad expression"),
    ({"Name": "A", "Next": {"Name": "B", "Payload Modifiers": ["Push"]}}, "Payload Modifiers: payload modifier 'Push'"),
    ({"Name": "A", "Nxt": {"Name": "B"}}, "unknown field(s) ['Nxt']"),
    ({"Name": "A-1"}, "Name: 'A-1' must start with a letter"),
    ({"Name": "A\n"}, "Name: 'A\\n' must start with a letter"),  # $ matches before a final newline
    ({"Name": "A", "Version": 9}, "Version: 9 is not supported"),
    ({"Name": "A", "Next": {"Name": "B", "Type": "Fan-in", "Values": ["B-UnumIndex-*.0"]}}, "only the last index may be '*'"),
    ({"Name": "A", "Next": {"Name": "B", "Type": "Fan-in", "Values": ["A"], "Payload Modifiers": ["$out=1"]}}, "'$out=' cannot be used on a Fan-in edge"),
    ({"Name": "A", "Start": "maybe"}, "Start: expected true or false"),
])
def test_bad_ir_names_file_field_and_reason(doc, fragment):
    with pytest.raises(IRError) as exc:
        load_function(doc, "ir/A.yaml")
    msg = str(exc.value)
    assert msg.startswith("ir/A.yaml: ") and fragment in msg and "\n" not in msg


def test_unknown_target_function():
    with pytest.raises(IRError, match=r"A.yaml: Next\[0\]: Name: unknown target function 'Nope'"):
        wf({"Name": "A", "Start": True, "Next": {"Name": "Nope"}})


def test_values_naming_no_function():
    with pytest.raises(IRError, match=r"Values: 'Ghost-UnumIndex-\*' names no function"):
        wf({"Name": "A", "Start": True, "Next": {"Name": "B", "Type": "Fan-in", "Values": ["Ghost-UnumIndex-*"]}},
           {"Name": "B"})


def test_exactly_one_start():
    with pytest.raises(IRError, match="exactly one function must have Start: true"):
        wf({"Name": "A", "Next": {"Name": "B"}}, {"Name": "B"})
    with pytest.raises(IRError, match=r"found: A, B"):
        wf({"Name": "A", "Start": True}, {"Name": "B", "Start": True})


def test_duplicate_function_names():
    with pytest.raises(IRError, match="already defined"):
        build_workflow([(load_function({"Name": "A", "Start": True}), "x.yaml"),
                        (load_function({"Name": "A"}), "y.yaml")])


def test_cycle_detection_marks_back_edges_only():
    w = wf({"Name": "A", "Start": True, "Next": {"Name": "B"}},
           {"Name": "B", "Next": [{"Name": "B", "Conditional": "$out < 3", "Payload Modifiers": ["Pop"]},
                                  {"Name": "C", "Conditional": "$out >= 3"}]},
           {"Name": "C"})
    assert [e.iterate for e in w.functions["B"].next] == [True, None]
    assert w.functions["A"].next[0].iterate is None


def test_index_moving_and_fanin_self_edges_are_not_iterations():
    w = wf({"Name": "S", "Start": True, "Next": {"Name": "F", "Type": "Map"}},
           {"Name": "F", "Next": [
               {"Name": "F", "Type": "Fan-in", "Values": ["F-UnumIndex-$0"], "Payload Modifiers": ["$0=$0+1"]},
               {"Name": "F", "Payload Modifiers": ["$0=$0+1"]},
               {"Name": "F", "Iterate": False}]})
    assert [e.iterate for e in w.functions["F"].next] == [None, None, False]


def test_value_template_parsing():
    t = ValueTemplate.parse("Encode-UnumIndex-($0+1).2.*")
    assert t.function == "Encode"
    assert [bool(p.expr) for p in t.parts] == [True, False, False]
    assert t.parts[1].literal == 2 and t.parts[2].glob
    assert ValueTemplate.parse("Plain").parts == ()


def test_empty_join_of_nested_maps_is_the_join_each_level_reaches():
    """A Map edge's EmptyJoin is the Fan-in over its own frame, found through nested frames:
    the outer Map's join is All (RowJoin's Fan-in), the inner Map's is RowJoin; a Map whose
    branches leave the frame without a Fan-in over it has none (issue 22, defect 4)."""
    w = wf(*[
        {"Name": "Outer", "Start": True, "Next": [{"Name": "Inner", "Type": "Map"},
                                                  {"Name": "Solo", "Type": "Map"}]},
        {"Name": "Inner", "Next": {"Name": "Leaf", "Type": "Map"}},
        {"Name": "Leaf", "Next": {"Name": "RowJoin", "Type": "Fan-in", "Values": ["Leaf-UnumIndex-$1.*"],
                                  "Payload Modifiers": ["Pop"]}},
        {"Name": "RowJoin", "Next": {"Name": "All", "Type": "Fan-in", "Values": ["RowJoin-UnumIndex-*"],
                                     "Payload Modifiers": ["Pop"]}},
        {"Name": "All"},
        {"Name": "Solo", "Next": {"Name": "Out", "Payload Modifiers": ["Pop"]}},
        {"Name": "Out"},
    ])
    outer, solo = w.functions["Outer"].next
    assert outer.to_dict()["EmptyJoin"] == {"Name": "All", "Payload Modifiers": ["Pop"]}
    assert solo.empty_join is None
    (inner,) = w.functions["Inner"].next
    assert inner.to_dict()["EmptyJoin"] == {"Name": "RowJoin", "Payload Modifiers": ["Pop"]}
