"""The schema of the IR's `Wrapper` of kind asl (runtime/asl/wrapper_ir.py): what the Step
Functions compiler writes parses into the typed record, and the IR loader refuses a wrapper
that does not fit it with one line naming the file and the key."""

from __future__ import annotations

import copy

import pytest

from runtime.asl.wrapper_ir import KEYS, AslWrapperIR, of
from runtime.errors import IRError
from runtime.ir import load_function
from unumctl_testing.apps import example_dirs
from unumctl import pipeline

SFN_EXAMPLES = [d for d in example_dirs() if d.name.endswith("-sfn")]


@pytest.mark.parametrize("example", SFN_EXAMPLES, ids=lambda d: d.name)
def test_every_compiled_function_has_a_wrapper_the_schema_reads(example):
    app = pipeline.load(example)
    for fn in app.workflow.functions.values():
        w = fn.asl
        assert isinstance(w, AslWrapperIR) and w.definition is fn.wrapper["Definition"]
        assert set(fn.wrapper) <= set(KEYS)
        assert w.scope == fn.wrapper.get("Scope", "") and w.task == fn.wrapper.get("Task")
        assert w.terminal == fn.wrapper.get("Terminal", False)


def _compiled_node(example_name: str = "orders-sfn") -> dict:
    app = pipeline.load(next(d for d in SFN_EXAMPLES if d.name == example_name))
    return copy.deepcopy(next(iter(app.workflow.functions.values())).to_dict())


@pytest.mark.parametrize("key, value, says", [
    ("Tsk", "Charge", "Wrapper.Tsk: unknown key"),
    ("Definition", "statemachine.json", "Wrapper.Definition: expected the state machine"),
    ("Terminal", "yes", "Wrapper.Terminal: expected true or false"),
    ("Task", 3, "Wrapper.Task: expected a state name or null"),
    ("Labels", {"m|x": 1}, "Wrapper.Labels: expected a mapping of strings to strings"),
    ("Inline", "m|/|Fan", "Wrapper.Inline: expected a list of strings"),
    ("Integrations", [["", "Put", "a", "b"]], "Wrapper.Integrations: expected a list of [scope, state, field] lists"),
    ("External", [["", "Put", "x"]], "Wrapper.External: expected a list of [scope, state] lists"),
    ("CoLocated", {"t|Charge": {"Function": "Charge"}}, "Wrapper.CoLocated: expected a mapping of keys to"),
])
def test_the_loader_refuses_a_wrapper_that_does_not_fit_the_schema(key, value, says):
    doc = _compiled_node()
    assert load_function(copy.deepcopy(doc), "ir/F.yaml").asl is not None  # as compiled: fine
    doc["Wrapper"][key] = value
    with pytest.raises(IRError) as exc:
        load_function(doc, "ir/F.yaml")
    assert str(exc.value).startswith(f"ir/F.yaml: {says}") and "\n" not in str(exc.value)


def test_another_kind_or_no_wrapper_has_no_asl_record():
    assert of(None) is None and of({"Kind": "other"}) is None
    assert load_function({"Name": "F", "Start": True}, "f.yaml").asl is None
