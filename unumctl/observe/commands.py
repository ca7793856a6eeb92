"""The logic of `unumctl sessions|describe|history|logs` (cli.py only declares the options).

Each function prints to stdout (readable text, or JSON with `as_json`) and raises
TargetError/ValueError for bad input (the CLI exits 2 with one line), UnknownSession for a
session id the target never saw (exit 2)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Callable

from .reader import STATUSES, HistoryReader, with_states
from .render import describe_text, history_text, log_text, sessions_text

__all__ = ["describe", "history", "logs", "sessions", "trace"]


def user_paths(obj: Any) -> Any:
    """`obj` (JSON-like) with every path into a local bundle copy under `.unum/` in its
    strings mapped to the user's source file (unumctl.failure.source_path): a Step Functions
    cause holds Lambda's stackTrace with the bundle paths the function ran from. The stored
    history is left as recorded; only what is shown changes."""
    if isinstance(obj, str):
        if ".unum/" not in obj:
            return obj
        from ..failure import source_path
        return source_path(obj)
    if isinstance(obj, dict):
        return {k: user_paths(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [user_paths(v) for v in obj]
    return obj


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def _json(obj: Any) -> None:
    _out(json.dumps(obj, indent=2, default=str) + "\n")


def sessions(r: "HistoryReader", status: str | None, limit: int | None, as_json: bool) -> None:
    """Print the sessions newest first (HistoryReader.sessions)."""
    if status is not None:
        status = status.upper()
        if status not in STATUSES:
            raise ValueError(f"--status: {status!r} must be one of {', '.join(STATUSES)}")
    if limit is not None and limit < 1:
        raise ValueError(f"--limit: {limit} must be at least 1")
    rows = r.sessions(status, limit)
    _json(rows) if as_json else _out(sessions_text(rows))


def describe(r: "HistoryReader", session: str, as_json: bool) -> None:
    """Print one session's description (HistoryReader.describe). Raises UnknownSession."""
    d = user_paths(r.describe(session))
    _json(d) if as_json else _out(describe_text(d))


def history(r: "HistoryReader", session: str, as_json: bool) -> None:
    """Print the session's events in order (HistoryReader.history). Raises UnknownSession."""
    events = user_paths(with_states(r.history(session)))
    _json(events) if as_json else _out(history_text(events))


def logs(r: "HistoryReader", session: str | None, function: str | None, follow: bool,
         as_json: bool, poll: float = 0.5, idle_exit: float | None = None,
         sleep: Callable[[float], None] = time.sleep) -> None:
    """Print captured output lines (HistoryReader.logs); with `follow`, keep printing new ones
    (until interrupted; or, with `session`, until it has ended and `idle_exit` s passed with
    no new line). `as_json`: one JSON object per line (JSON Lines). Raises UnknownSession
    for a `session` the target never saw."""
    if session is not None:
        r.describe(session)  # UnknownSession for an id that never existed
    cursor = None
    quiet_since = time.monotonic()
    while True:
        rows, cursor = r.logs(session, function, cursor)
        for row in user_paths(rows):
            _out((json.dumps(row, default=str) if as_json else log_text(row, with_session=session is None)) + "\n")
        if not follow:
            return
        if rows:
            quiet_since = time.monotonic()
        elif session is not None and idle_exit is not None and r.ended(session) \
                and time.monotonic() - quiet_since >= idle_exit:
            return
        sleep(poll)


def trace(r: HistoryReader, session: str, workflow: Any, out: Any, states: Any = None) -> str:
    """Write the session's HTML trace (unumctl/observe/trace.py) to path `out`; returns the
    path as text. `states`: a Step Functions app's state graph (unumctl.asl.graph.StateGraph).
    Raises UnknownSession, OSError when the file cannot be written."""
    from pathlib import Path

    from .trace import render
    page = render(user_paths(r.describe(session)), user_paths(with_states(r.history(session))), workflow, states)
    path = Path(out)
    path.write_text(page, encoding="utf-8")
    return str(path)
