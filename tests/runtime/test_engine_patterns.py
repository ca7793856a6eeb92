"""Orchestration patterns on the local target (seed 001 §3.2-3.4, Appendix A.2.4): each test
writes a small app, runs one session and checks the result and that only the result item is
left in the datastore."""

from __future__ import annotations



from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

ECHO = "def handler(event, context):\n    return event\n"


def run(tmp_path, functions, value, runtime=None, check_clean=True):
    app = load_app(make_app(tmp_path / "app", "pattern-app", functions, runtime))
    with LocalRunner(app, state=tmp_path / "state", quiet=True) as runner:
        item = runner.run(value, timeout=60)
        runner.platform.wait_idle()
        dump = runner.platform.ds.dump()
        stats = dict(runner.platform.stats)
    if check_clean and item["status"] == "SUCCEEDED":
        assert all(names == ["result"] for names in dump.values()), dump
    return item, stats


def test_chain(tmp_path):
    item, stats = run(tmp_path, {
        "Add": ({"Start": True, "Next": {"Name": "Double", "Type": "Scalar"}},
                "def handler(e, c):\n    return e + 1\n"),
        "Double": ({"Next": {"Name": "Neg"}}, "def handler(e, c):\n    return e * 2\n"),
        "Neg": ({}, "def handler(e, c):\n    return -e\n"),
    }, 4)
    assert item["v"] == -10 and item["instance"] == "Neg"
    assert stats["outcome_ran"] == 3


def test_parallel_fanout_static_fanin(tmp_path):
    branch = ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Up-UnumIndex-0", "Len-UnumIndex-1"],
                        "Payload Modifiers": ["Pop"]}})
    item, _ = run(tmp_path, {
        "Start": ({"Start": True, "Next": [{"Name": "Up"}, {"Name": "Len"}]}, ECHO),
        "Up": (branch, "def handler(e, c):\n    return [e.upper(), c.instance, c.index, c.size]\n"),
        "Len": (branch, "def handler(e, c):\n    return [len(e), c.instance, c.index, c.size]\n"),
        "Join": ({}, "def handler(e, c):\n    return {'in': e, 'me': c.instance}\n"),
    }, "abc")
    assert item["v"] == {"in": [["ABC", "Up-UnumIndex-0", 0, 2], [3, "Len-UnumIndex-1", 1, 2]], "me": "Join"}


def test_map_with_glob_fanin(tmp_path):
    item, _ = run(tmp_path, {
        "Split": ({"Start": True, "Next": {"Name": "Sq", "Type": "Map"}}, ECHO),
        "Sq": ({"Next": {"Name": "Sum", "Type": "Fan-in", "Values": ["Sq-UnumIndex-*"], "Payload Modifiers": ["Pop"]}},
               "def handler(e, c):\n    return e * e\n"),
        "Sum": ({}, "def handler(e, c):\n    return {'parts': e, 'total': sum(e)}\n"),
    }, list(range(12)))
    assert item["v"] == {"parts": [i * i for i in range(12)], "total": sum(i * i for i in range(12))}


def test_nested_map_fanin(tmp_path):
    item, _ = run(tmp_path, {
        "Outer": ({"Start": True, "Next": {"Name": "Inner", "Type": "Map"}}, ECHO),
        "Inner": ({"Next": {"Name": "Leaf", "Type": "Map"}}, ECHO),
        "Leaf": ({"Next": {"Name": "RowJoin", "Type": "Fan-in", "Values": ["Leaf-UnumIndex-$1.*"],
                           "Payload Modifiers": ["Pop"]}},
                 "def handler(e, c):\n    return [c.indexes, e]\n"),
        "RowJoin": ({"Next": {"Name": "All", "Type": "Fan-in", "Values": ["RowJoin-UnumIndex-*"],
                              "Payload Modifiers": ["Pop"]}}, ECHO),
        "All": ({}, ECHO),
    }, [["a", "b"], ["c"], ["d", "e", "f"]])
    assert item["v"] == [[[[0, 0], "a"], [[0, 1], "b"]], [[[1, 0], "c"]],
                         [[[2, 0], "d"], [[2, 1], "e"], [[2, 2], "f"]]]


PAIR_VALUES = {"Name": "Pair", "Type": "Fan-in"}


def test_partial_fanin_and_fold(tmp_path):
    """Pair i joins Item i-1 and i (no barrier); Acc folds Pair outputs in order."""
    item, _ = run(tmp_path, {
        "Src": ({"Start": True, "Next": {"Name": "Item", "Type": "Map"}}, ECHO),
        "Item": ({"Next": [
            {**PAIR_VALUES, "Values": ["Item-UnumIndex-$0"], "Conditional": "$0 == 0"},
            {**PAIR_VALUES, "Values": ["Item-UnumIndex-($0-1)", "Item-UnumIndex-$0"], "Conditional": "$0 > 0"},
            {**PAIR_VALUES, "Values": ["Item-UnumIndex-$0", "Item-UnumIndex-($0+1)"],
             "Conditional": "$0 < $size-1", "Payload Modifiers": ["$0=$0+1"]}]}, ECHO),
        "Pair": ({"Next": [
            {"Name": "Acc", "Type": "Fan-in", "Values": ["Pair-UnumIndex-0"], "Conditional": "$0 == 0"},
            {"Name": "Acc", "Type": "Fan-in", "Values": ["Acc-UnumIndex-($0-1)", "Pair-UnumIndex-$0"],
             "Conditional": "$0 > 0"}]},
            "def handler(e, c):\n    return ''.join(e)\n"),
        "Acc": ({"Next": [
            {"Name": "Acc", "Type": "Fan-in", "Values": ["Acc-UnumIndex-$0", "Pair-UnumIndex-($0+1)"],
             "Conditional": "$0 < $size-1", "Payload Modifiers": ["$0=$0+1"]},
            {"Name": "Out", "Conditional": "$0 == $size-1", "Payload Modifiers": ["Pop"]}]},
            "def handler(e, c):\n    return '|'.join(e)\n"),
        "Out": ({}, ECHO),
    }, ["a", "b", "c", "d"])
    assert item["v"] == "a|ab|bc|cd"


def test_conditional_branch(tmp_path):
    fns = {
        "Check": ({"Start": True, "Next": [{"Name": "Hot", "Conditional": "$out['t'] > 50"},
                                            {"Name": "Cold", "Conditional": "$out['t'] <= 50"}]}, ECHO),
        "Hot": ({}, "def handler(e, c):\n    return 'hot ' + c.instance\n"),
        "Cold": ({}, "def handler(e, c):\n    return 'cold ' + c.instance\n"),
    }
    hot, stats = run(tmp_path / "a", fns, {"t": 70})
    cold, _ = run(tmp_path / "b", fns, {"t": 10})
    assert hot["v"] == "hot Hot-UnumIndex-0" and cold["v"] == "cold Cold-UnumIndex-1"
    assert stats["outcome_ran"] == 2  # only one branch ran


def test_cycle_uses_iteration_counter(tmp_path):
    item, stats = run(tmp_path, {
        "Init": ({"Start": True, "Next": {"Name": "Inc"}}, ECHO),
        "Inc": ({"Next": {"Name": "Inc", "Conditional": "$out['n'] < 5"}},
                "def handler(e, c):\n    return {'n': e['n'] + 1, 'names': e['names'] + [c.instance]}\n"),
    }, {"n": 0, "names": []})
    assert item["v"]["n"] == 5
    assert item["v"]["names"] == ["Inc"] + [f"Inc-UnumIter-{k}" for k in range(1, 5)]


def test_checkpoint_false_is_at_least_once_without_writes(tmp_path):
    item, _ = run(tmp_path, {
        "A": ({"Start": True, "Checkpoint": False, "Next": {"Name": "B"}}, "def handler(e, c):\n    return e + 1\n"),
        "B": ({"Checkpoint": False}, "def handler(e, c):\n    return e * 3\n"),
    }, 1)
    assert item["v"] == 6


def test_checkpoint_false_app_option(tmp_path):
    app = load_app(make_app(tmp_path / "app", "nockpt-app", {
        "A": ({"Start": True, "Next": {"Name": "B"}}, "def handler(e, c):\n    return e + 1\n"),
        "B": ({}, "def handler(e, c):\n    return e * 3\n")}, {"checkpoint": False}))
    with LocalRunner(app, state=tmp_path / "s", quiet=True) as runner:
        db, lock = runner.platform.ds.db, runner.platform.ds.lock
        with lock:  # the platform's threads share the connection (and poll the queue)
            db.executescript("CREATE TABLE writes (name TEXT); CREATE TRIGGER count_writes AFTER INSERT "
                             "ON items BEGIN INSERT INTO writes VALUES (NEW.name); END;")
        assert runner.run(2, timeout=30)["v"] == 9
        runner.platform.wait_idle()
        with lock:
            written = [r[0] for r in db.execute("SELECT name FROM writes")]
    assert written == ["result"]  # at-least-once mode: no checkpoint was ever written


def test_user_exception_fails_session_then_fix_succeeds(tmp_path):
    bad = "def handler(e, c):\n    raise ValueError('no sensor ' + str(e))\n"
    item, _ = run(tmp_path / "a", {"Only": ({"Start": True}, bad)}, 7)
    assert item["status"] == "FAILED" and item["error"] == "ValueError" and item["cause"] == "no sensor 7"
    good = "def handler(e, c):\n    return e\n"
    item, _ = run(tmp_path / "a", {"Only": ({"Start": True}, good)}, 7)
    assert item["status"] == "SUCCEEDED" and item["v"] == 7


def test_retry_policy_recovers_from_transient_error(tmp_path):
    flaky = ("import os\n"
             "def handler(e, c):\n"
             "    p = os.path.join(e, 'tries')\n"
             "    n = int(open(p).read()) if os.path.exists(p) else 0\n"
             "    open(p, 'w').write(str(n + 1))\n"
             "    if n < 2:\n        raise ConnectionError('try again')\n"
             "    return n\n")
    item, _ = run(tmp_path, {"F": ({"Start": True, "Retry": {"MaxAttempts": 3, "IntervalSeconds": 0.01,
                                                              "ErrorEquals": ["ConnectionError"]}}, flaky)},
                  str(tmp_path))
    assert item["status"] == "SUCCEEDED" and item["v"] == 2


def test_non_json_output_fails_session(tmp_path):
    item, _ = run(tmp_path, {"F": ({"Start": True}, "def handler(e, c):\n    return {1, 2}\n")}, 1)
    assert item["status"] == "FAILED" and item["error"] == "TypeError"
    assert "not JSON-serializable (set)" in item["cause"]


def test_map_over_non_list_fails_session(tmp_path):
    item, _ = run(tmp_path, {"F": ({"Start": True, "Next": {"Name": "G", "Type": "Map"}}, ECHO),
                             "G": ({}, ECHO)}, {"not": "a list"})
    assert item["status"] == "FAILED" and "must be a list, got dict" in item["cause"]


def test_large_values_go_by_reference(tmp_path):
    """A 1.5 MB output exceeds the SQLite item limit (1 MB) and the 256 KB invoke limit:
    the checkpoint goes to the blob store and the payload is passed by reference."""
    item, _ = run(tmp_path, {
        "Big": ({"Start": True, "Next": {"Name": "Measure"}}, "def handler(e, c):\n    return 'x' * e\n"),
        "Measure": ({"Next": {"Name": "Echo"}}, "def handler(e, c):\n    return {'len': len(e), 'blob': e}\n"),
        "Echo": ({}, "def handler(e, c):\n    return {'len': e['len'], 'same': e['blob'] == 'x' * e['len']}\n"),
    }, 1_500_000)
    assert item["v"] == {"len": 1_500_000, "same": True}


def test_import_isolation_between_functions(tmp_path):
    """Two functions both ship app.py and helpers.py; each sees its own."""
    app = make_app(tmp_path / "app", "isolation-app", {
        "One": ({"Start": True, "Next": {"Name": "Two"}}, "import helpers\ndef handler(e, c):\n    return [helpers.WHO]\n"),
        "Two": ({}, "import helpers\ndef handler(e, c):\n    return e + [helpers.WHO]\n"),
    })
    (app / "functions/one/helpers.py").write_text("WHO = 'one'\n")
    (app / "functions/two/helpers.py").write_text("WHO = 'two'\n")
    with LocalRunner(load_app(app), state=tmp_path / "s", quiet=True) as runner:
        assert runner.run(None, timeout=30)["v"] == ["one", "two"]


NESTED_ROWS = {
    "Outer": ({"Start": True, "Next": {"Name": "Inner", "Type": "Map"}}, ECHO),
    "Inner": ({"Next": {"Name": "Leaf", "Type": "Map"}}, ECHO),
    "Leaf": ({"Next": {"Name": "RowJoin", "Type": "Fan-in", "Values": ["Leaf-UnumIndex-$1.*"],
                       "Payload Modifiers": ["Pop"]}}, ECHO),
    "RowJoin": ({"Next": {"Name": "All", "Type": "Fan-in", "Values": ["RowJoin-UnumIndex-*"],
                          "Payload Modifiers": ["Pop"]}},
                "def handler(e, c):\n    return len(e)\n"),
    "All": ({}, "def handler(e, c):\n    return {'rows': len(e), 'cells': e, 'me': c.instance}\n"),
}


def test_nested_map_over_empty_outer_list_runs_the_outer_join(tmp_path):
    """Issue 22 defect 4: a Map over [] at the outer level runs the join the non-empty Map
    reaches (All, through RowJoin's fan-in) with [], not the source's output as the result."""
    item, _ = run(tmp_path, NESTED_ROWS, [])
    assert item["status"] == "SUCCEEDED" and item["instance"] == "All"
    assert item["v"] == {"rows": 0, "cells": [], "me": "All"}


def test_nested_map_with_an_empty_row(tmp_path):
    """An empty inner row runs its row join with [] (0 cells) and the outer join counts it."""
    item, _ = run(tmp_path, NESTED_ROWS, [["a"], [], ["b", "c"]])
    assert item["v"] == {"rows": 3, "cells": [1, 0, 2], "me": "All"}
