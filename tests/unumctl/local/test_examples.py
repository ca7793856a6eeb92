"""Every example runs on the local target and prints its expected output; afterwards the
datastore holds only the session's result item."""

import json

import pytest

from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import example_dirs, expected_of, matches_expected


@pytest.mark.parametrize("example", example_dirs(), ids=lambda p: p.name)
def test_example_runs_locally(example, tmp_path):
    app = load_app(example)
    value = json.loads((example / "input.json").read_text())
    with LocalRunner(app, state=tmp_path, quiet=True) as runner:
        item = runner.run(value, timeout=120)
        runner.platform.wait_idle()
        session_items = runner.platform.ds.dump()
    assert item["status"] == "SUCCEEDED", item
    assert matches_expected(item["v"], expected_of(example))
    for session, names in session_items.items():
        if session.startswith("winstore-"):
            continue  # a window's items outlive the producer sessions (docs/ir.md "Windows")
        assert names == ["result"], f"{example.name}: session {session} left {names}"


def test_nested_map_example_over_an_empty_matrix_and_an_empty_row(tmp_path):
    """examples/nested-map: `{"rows": []}` reaches Total through the outer Map's EmptyJoin,
    and an empty row sums to 0 (issue 22, defect 4)."""
    from unumctl_testing.apps import ROOT
    app = load_app(ROOT / "examples" / "nested-map")
    with LocalRunner(app, state=tmp_path, quiet=True) as runner:
        empty = runner.run({"rows": []}, timeout=120)
        ragged = runner.run({"rows": [[3], [], [1, 2]]}, timeout=120)
    assert empty["status"] == "SUCCEEDED" and empty["v"] == {"row_sums": [], "total": 0}
    assert ragged["v"] == {"row_sums": [9, 0, 5], "total": 14}
