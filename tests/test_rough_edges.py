"""Rough edges of a newcomer's trial (issue 27, item 3): each test reproduces one point."""

from __future__ import annotations

import pytest

from unumctl.cliopts import suggest_commands

from .test_cli import cli, one_error


# ---------------------------------------------------------------- "Did you mean", usage errors
def test_unknown_command_never_suggests_a_destructive_one():
    code, out, err = cli("deploy", "examples/wordcount")
    assert code == 2 and out == ""
    line = one_error(err)
    assert "'deploy'" in line and "'apply'" in line and "destroy" not in line, line
    assert len(err) == 1, err  # one line, no box
    commands = ["apply", "destroy", "history", "invoke", "plan"]
    assert suggest_commands("deploy", commands) == ["apply"]
    assert suggest_commands("destory", commands)[0] == "destroy"  # a typo of its own name


@pytest.mark.parametrize("args, words", [
    (("invoke", "examples/wordcount"), ["invoke", "--data"]),
    (("nosuchcommand",), ["nosuchcommand"]),
    (("validate", "examples/wordcount", "--nosuch"), ["--nosuch"]),
])
def test_usage_errors_are_one_line(args, words):
    code, out, err = cli(*args)
    assert code == 2 and out == ""
    assert len(err) == 1, err
    assert all(w in one_error(err) for w in words), err
