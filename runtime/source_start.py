"""Starting the sessions of one trigger event: the part every target's trigger adapter
shares (runtime/aws/sources.py, runtime/gcp/sources.py).

A trigger's event is turned into starts by runtime.sources (`starts`: one `Start` per
record, each with the source's own identity of the event as `key`); each start is the
session `SessionId.for_key(session_key(trigger, start))` (runtime/payload.py), started
through the one start of the product, runtime.session `start_once` (create-if-absent of
the session's start record, then the entry payload, then the record marked sent). A
redelivered event has the same key, so it finds its session and sends nothing: one session
per event (docs/triggers.md).

`triggers.json` (a list of the trigger dicts of the manifest, unumctl/triggers.py) is
bundled next to the entry function's IR; the trigger function runs the entry's archive with
its own handler and names its trigger in the environment variable UNUM_TRIGGER.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from .payload import SessionId
from .session import Retention, start_once, wait_result
from .sources import TRIGGERS_FILE, SourceEventError, session_key, starts

__all__ = ["ENV_ENTRY", "ENV_TRIGGER", "CONTEXT_FIELD", "Started", "find_trigger",
           "http_answer", "start_each"]

ENV_TRIGGER = "UNUM_TRIGGER"     # the trigger a trigger function serves (set by the rendering)
ENV_ENTRY = "UNUM_ENTRY"         # the unum name of the app's entry function
CONTEXT_FIELD = "UnumTrigger"    # inherited context field of a triggered session: Start.context


@dataclass(frozen=True)
class Started:
    """One start of an event: `session` (its id), `sent` (False: the session existed, a
    redelivery), `item_id` (the record id a batch source reports on failure, or None)."""

    session: str
    sent: bool
    item_id: str | None = None


def find_trigger(root: str | Path, name: str) -> dict[str, Any]:
    """The trigger named `name` in `<root>/triggers.json`. RuntimeError (one line) when the
    file or the trigger is missing: the function was not deployed by unumctl for it."""
    path = Path(root) / TRIGGERS_FILE
    try:
        triggers = json.loads(path.read_text())
    except FileNotFoundError:
        raise RuntimeError(f"{path} is missing: the trigger function must run the entry function's archive "
                           "as `unumctl apply` deploys it") from None
    for t in triggers:
        if isinstance(t, dict) and t.get("name") == name:
            return t
    raise RuntimeError(f"{path} has no trigger {name!r} ({ENV_TRIGGER}); re-apply the app")


def start_each(trigger: Mapping[str, Any], event: Mapping[str, Any], ds: Any, send: Callable[[dict], None],
               retention: Retention, blobs: Any = None, max_bytes: int | None = None) -> list[Started]:
    """Start one session per start of `event` for `trigger` (module docstring); `send`
    delivers an entry payload to the entry function (the invoker's `invoke_many` of one
    call), `blobs` / `max_bytes` take an input larger than the invoker's limit. Raises
    runtime.sources.SourceEventError for an event of the wrong shape, UnumError for a key
    that is no idempotency key, and what `send` or the datastore raise (the start is then
    not recorded: the platform's redelivery starts it)."""
    out = []
    for s in starts(trigger, event):
        session = SessionId.for_key(session_key(str(trigger["name"]), s))
        now = time.time()
        sent = start_once(ds, send, session, s.input, now, retention.item_expiry(now), blobs, max_bytes,
                          {CONTEXT_FIELD: dict(s.context)})
        out.append(Started(session, sent, s.item_id))
    return out


def http_answer(trigger: Mapping[str, Any], event: Mapping[str, Any], ds: Any, blobs: Any,
                start: Callable[[Mapping[str, Any]], list[Started]]) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON body) of an `http` or `schedule` trigger's request `event`, its
    sessions started by `start`: 400 {"error"} for a request of the wrong shape; with the
    trigger's `wait_seconds`, 200 {"session", "result"} when the session ended in time;
    else 202 {"session"} (200 for a schedule, so the scheduler does not retry)."""
    try:
        started = start(event)
    except SourceEventError as exc:
        return 400, {"error": str(exc)}
    session = started[0].session if started else None
    wait = float(trigger.get("wait_seconds") or 0)
    if session and wait > 0:
        result = wait_result(ds, blobs, session, wait)
        if result is not None:
            return 200, {"session": session, "result": result}
    return (200 if trigger.get("type") == "schedule" else 202), {"session": session}
