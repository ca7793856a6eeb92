"""Nondeterminism for user functions under exploration: values derived from the calling
execution, so two executions of one invocation compute different values while every
schedule stays replayable."""

from __future__ import annotations

from ..scheduler import current_exec


def nd() -> int:
    """A small per-execution number (0 for the first delivery along the first path)."""
    ex = current_exec()
    return ex.nd if ex is not None else 0


def tok() -> str:
    """A per-execution string token (the execution id)."""
    ex = current_exec()
    return ex.id if ex is not None else "-"


def calls() -> int:
    """How many times user code was called in this execution before (for Retry tests)."""
    ex = current_exec()
    if ex is None:
        return 0
    n = getattr(ex, "_user_calls", 0)
    ex._user_calls = n + 1
    return n
