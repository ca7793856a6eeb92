"""ResultPath with an array index (runtime/asl/paths.py `write`): `$.list[1]` is a Reference
Path per the ASL spec ("Reference Paths": fields and indexes only) and writes into that element;
a path that selects several nodes is refused as "must be a reference path", an index out of
range names the index. (The type gate found it: paths.py read jsonpath-ng's `Index.index`,
which jsonpath-ng >= 1.6 names `Index.indices`.)
"""

from __future__ import annotations

import pytest

from runtime.asl import paths
from runtime.asl.errors import AslError
from runtime.asl.machine import Machine


def _run(definition: dict, value):
    info = {"Id": "e", "Name": "e", "StartTime": "2026-01-01T00:00:00.000Z", "Input": None,
            "StateMachine": {"Id": "sm", "Name": "sm"}}
    m = Machine(definition, info, lambda: 1_700_000_000.0, lambda s: None)
    return m.run_inline("", definition["StartAt"], value, lambda r, e: e)


@pytest.mark.parametrize("path,data,want", [
    ("$.a[1]", {"a": [1, 2, 3]}, {"a": [1, "X", 3]}),
    ("$.a[0].b", {"a": [{}, {}]}, {"a": [{"b": "X"}, {}]}),
    ("$.a[-1]", {"a": [1, 2]}, {"a": [1, "X"]}),
])
def test_result_path_with_an_array_index(path, data, want):
    assert paths.write(path, data, "X") == want
    assert data != want  # the input is copied, not changed


def test_result_path_index_in_a_state_machine():
    sm = {"StartAt": "P", "States": {
        "P": {"Type": "Pass", "Result": "done", "ResultPath": "$.steps[1].status", "End": True}}}
    out = _run(sm, {"steps": [{"status": "a"}, {"status": "b"}]})
    assert out == {"steps": [{"status": "a"}, {"status": "done"}]}


@pytest.mark.parametrize("path", ["$.a[0,1]", "$.a[*]", "$.a[0:1]"])
def test_result_path_that_selects_several_nodes_is_still_refused(path):
    with pytest.raises(AslError, match="must be a reference path"):
        paths.write(path, {"a": [1, 2]}, "X")


def test_result_path_index_out_of_range_names_the_index():
    with pytest.raises(AslError, match="index 5 out of range"):
        paths.write("$.a[5]", {"a": [1, 2]}, "X")
