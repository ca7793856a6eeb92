"""EventBridge triggers (`type: eventbridge`, AWS; `unumctl serve` too): the session an event
matching the rule's pattern asks for.

Event shape, as delivered to the entry function (a rule's Lambda target, no input
transformer): {"version": "0", "id", "detail-type", "source", "account", "time",
"region", "resources", "detail"}
(https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-events-structure.html). The
key is `eventbridge:<id>` (EventBridge keeps the id of an event it delivers again; a
PutEvents entry sent twice is two events with two ids). The input is the whole event, as a
Step Functions execution started by a rule receives it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import Start, field_of

__all__ = ["eventbridge_starts"]


def eventbridge_starts(name: str, event: Mapping[str, Any]) -> list[Start]:
    """The one Start of an EventBridge event for trigger `name`. SourceEventError when the
    event has no id, source or detail-type."""
    where = f"triggers.{name}: eventbridge event"
    ident = field_of(event, "id", where)
    ctx = {"trigger": name, "source": "eventbridge", "event_source": field_of(event, "source", where),
           "detail_type": field_of(event, "detail-type", where), "time": event.get("time")}
    return [Start(f"eventbridge:{ident}", dict(event), ctx)]
