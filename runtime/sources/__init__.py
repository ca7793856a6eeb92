"""Event sources of triggers (the manifest's `triggers:`, unumctl/triggers.py): what session
starts a platform event asks for, and the idempotency key of each.

    starts(trigger, event) -> [Start(key, input, context, item_id)]
    session_key(trigger["name"], start) -> "trigger:<name>:<key>" (SessionId.for_key's input)

`trigger` is the trigger's entry as bundled with the entry function (`triggers.json`, the
dict form of unumctl.triggers.Trigger: "name", "type" and its fields); `event` the platform
event as delivered. One module per source kind: http.py, schedule.py, queue.py (SQS,
Pub/Sub, the local queue), storage.py (S3, Cloud Storage, the watched directory),
eventbridge.py. Standard library only: the runtime core imports no cloud SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import SourceEventError, Start, session_key
from .eventbridge import eventbridge_starts
from .http import http_starts
from .queue import queue_starts
from .schedule import schedule_starts
from .storage import storage_starts

__all__ = ["KINDS", "SourceEventError", "Start", "TRIGGERS_FILE", "session_key", "starts"]

KINDS = ("http", "schedule", "queue", "storage", "eventbridge")  # the manifest's `type` values
# the entry function's bundle file (next to unum_ir.json): [trigger dict, ...] (unumctl/build.py)
TRIGGERS_FILE = "triggers.json"


def starts(trigger: Mapping[str, Any], event: Mapping[str, Any]) -> list[Start]:
    """The session starts `event` asks for under `trigger` (a batch event: one per record,
    in order; an event that asks for none, e.g. S3's test event: []). Raises
    SourceEventError (one line naming the trigger and the field) for a trigger without a
    known "type" or an event that is not of its source's shape."""
    if not isinstance(trigger, Mapping) or not isinstance(trigger.get("name"), str):
        raise SourceEventError("trigger: expected the bundled entry {'name', 'type', ...}")
    name, kind = trigger["name"], trigger.get("type")
    if not isinstance(event, Mapping):
        raise SourceEventError(f"triggers.{name}: {kind} event: expected an object, got {type(event).__name__}")
    if kind == "http":
        return http_starts(name, event)
    if kind == "schedule":
        return schedule_starts(trigger, event)
    if kind == "queue":
        return queue_starts(name, event)
    if kind == "storage":
        return storage_starts(trigger, event)
    if kind == "eventbridge":
        return eventbridge_starts(name, event)
    raise SourceEventError(f"triggers.{name}.type: {str(kind)[:40]!r} is not one of {', '.join(KINDS)}")
