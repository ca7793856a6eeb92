"""An execution that finds, after its continuations, that the session ended does not delete
what it created (its items outlive the final sweep)."""

from runtime.engine import Engine

NAME = "late-write-cleanup-off"
ABOUT = "Engine._undo_late_writes does nothing"
WORKFLOWS = ["fanout", "fanout-eager", "map-glob"]
TESTS = ["tests/test_leaks.py", "tests/test_exactly_once.py"]
INVISIBLE = None


def apply(p):
    p.replace(Engine, "_undo_late_writes", lambda orig: lambda self, ex: None)
