"""The optimized EventBridge integration: `arn:aws:states:::events:putEvents`.

Source: AWS Step Functions developer guide "Add EventBridge events with Step Functions"
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-eventbridge.html):
Parameters are the PutEvents API's (Entries: [{Detail, DetailType, Source, EventBusName,
Resources, Time}]); a JSON Detail is sent as its JSON text; the result is
{Entries: [{EventId}], FailedEntryCount}; when an entry fails the Task fails with
`EventBridge.FailedEntry`; service errors are `EventBridge.<Exception>`. At-least-once:
consumers deduplicate on the event's own id field (Detail), since a repeated put gets a new
EventId.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "call", "iam_statements", "match", "required"]

NAME = "events"
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = True
RESOURCE = "arn:aws:states:::events:putEvents"
IAM_ACTIONS = {"putEvents": ["events:PutEvents"]}


def match(resource: str) -> str | None:
    """'putEvents' for the EventBridge resource, else None."""
    return "putEvents" if resource == RESOURCE else None


def required(action: str) -> list[tuple[str, ...]]:
    """PutEvents requires Entries."""
    return [("Entries",)]


def iam_statements(action: str, fields) -> list:
    """events:PutEvents on the event buses the Entries name (`EventBusName`: a name or an
    ARN; the account's `default` bus when absent); every bus (`event-bus/*`) when the
    Entries or a bus are dynamic
    (runtime.asl.integrations.iam; Step Functions guide "IAM policies for Amazon
    EventBridge", eventbridge-iam.html)."""
    from .iam import PARTITION, Statement, arn
    entries = fields.items("Entries")
    buses: list[str] = []
    for e in entries or []:
        bus = e.get("EventBusName")
        if bus is None and e.present("EventBusName"):
            entries = None
            break
        bus = bus or "default"
        buses.append(bus if bus.startswith("arn:") else arn("events", f"event-bus/{bus}"))
    # dynamic: every event bus, as Step Functions' generated policy writes it
    every_bus = f"arn:{PARTITION}:events:*:*:event-bus/*"
    return [Statement(tuple(IAM_ACTIONS[action]), tuple(buses) if entries else (every_bus,))]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Put the events; a non-string Detail is serialized as JSON text."""
    if not isinstance(params, dict) or not isinstance(params.get("Entries"), list):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field}.Entries of "
                       f"{ctx.resource} must be a list")
    entries = []
    for e in params["Entries"]:
        e = dict(e) if isinstance(e, dict) else e
        if isinstance(e, dict) and "Detail" in e and not isinstance(e["Detail"], str):
            e["Detail"] = json.dumps(e["Detail"], separators=(",", ":"))
        entries.append(e)
    res = sdk.invoke_api("events", "put_events", {**params, "Entries": entries}, "EventBridge")
    if res.get("FailedEntryCount"):
        failed = [x for x in res.get("Entries", []) if x.get("ErrorCode")]
        raise AslError("EventBridge.FailedEntry", json.dumps(failed or res.get("Entries", [])))
    return res
