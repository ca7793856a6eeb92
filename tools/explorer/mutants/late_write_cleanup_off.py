"""An execution that finds, after its continuations, that the session ended does not delete
what it created (its items outlive the final sweep)."""

from runtime.engine import Engine

NAME = "late-write-cleanup-off"
ABOUT = "Engine._undo_late_writes does nothing"
WORKFLOWS = ["fanout", "fanout-eager", "map-glob"]
TESTS = ["tests/unumctl/test_build_inputs.py", "tests/runtime/test_engine_commit_point.py"]
INVISIBLE = None


def apply(p):
    p.replace(Engine, "_undo_late_writes", lambda orig: lambda self, ex: None)
