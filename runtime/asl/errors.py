"""ASL runtime errors (ASL spec "Errors": States.ALL, States.TaskFailed, States.Runtime, ...)."""

from __future__ import annotations

import random

__all__ = ["AslError", "matches", "next_retry"]


class AslError(Exception):
    """An ASL error with its `error` name (e.g. 'States.Runtime', 'CustomException'),
    `cause` text (for Lambda errors a JSON string as Lambda reports it) and `state`: the
    name of the ASL state that failed (the innermost one, set by `at`; None until then),
    which a session's failure record names (runtime.session.failure_item)."""

    def __init__(self, error: str | None, cause: str | None = None, state: str | None = None):
        super().__init__(f"{error}: {cause}")
        self.error = error
        self.cause = cause
        self.state = state

    def at(self, state: str) -> None:
        """Name `state` as the state that failed unless an inner state is named already."""
        if self.state is None:
            self.state = state


def matches(error_equals: list[str], error: str | None) -> bool:
    """ErrorEquals matching (ASL spec "Retrying after error" / "Fallback states"):
    `States.ALL` matches every error, `States.TaskFailed` every error but States.Timeout."""
    for name in error_equals:
        if name == "States.ALL" or name == error:
            return True
        if name == "States.TaskFailed" and error != "States.Timeout":
            return True
    return False


def next_retry(retriers: list[dict], counts: list[int], error: str | None,
               terminal: bool, uniform=None) -> tuple[int, float] | None:
    """The retry decision after an error (ASL spec "Retrying after error"): the first
    retrier whose ErrorEquals matches `error` applies; with `counts[idx]` (its own attempt
    counter, 0-based) below its MaxAttempts (default 3) the state is retried after
    IntervalSeconds (default 1) * BackoffRate (default 2.0) ** counts[idx] seconds, capped
    by MaxDelaySeconds, drawn from [0, delay] with JitterStrategy FULL. Returns
    (retrier index, delay in seconds), or None (no retrier matches, or it is exhausted: the
    Catch applies). `terminal` errors (States.Runtime) are never retried. `uniform(a, b)`
    draws the jitter (random.uniform by default). The caller increments `counts[idx]`."""
    if terminal:
        return None
    idx = next((i for i, r in enumerate(retriers) if matches(r.get("ErrorEquals", []), error)), None)
    if idx is None or counts[idx] >= int(retriers[idx].get("MaxAttempts", 3)):
        return None
    r = retriers[idx]
    delay = float(r.get("IntervalSeconds", 1)) * float(r.get("BackoffRate", 2.0)) ** counts[idx]
    if "MaxDelaySeconds" in r:
        delay = min(delay, float(r["MaxDelaySeconds"]))
    if r.get("JitterStrategy") == "FULL":
        delay = (uniform or random.uniform)(0, delay)
    return idx, delay
