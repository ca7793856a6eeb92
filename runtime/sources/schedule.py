"""Schedule triggers (`type: schedule`): the session a schedule's firing asks for.

Event shapes, as delivered to the entry function:

- AWS, EventBridge Scheduler with the Lambda target: the schedule's target `Input`, which
  the rendering sets to {"scheduled_time": "<aws.scheduler.scheduled-time>"}; Scheduler
  replaces the keyword with "the time you specified for the schedule to invoke its
  target, for example, 2022-03-22T18:59:43Z"
  (https://docs.aws.amazon.com/scheduler/latest/UserGuide/managing-schedule-context-attributes.html).
- GCP, Cloud Scheduler with an HTTP target: the request (the `http` event shape,
  runtime/sources/http.py) whose header `X-CloudScheduler-ScheduleTime` holds "the job
  schedule time in RFC3339 UTC 'Zulu' format" (Cloud Scheduler API, HttpTarget `headers`:
  https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs#HttpTarget).
- local/serve, the local scheduler: {"scheduled_time": ISO 8601}.

The key is `schedule:<scheduled time in UTC, YYYY-MM-DDTHH:MM:SSZ>`: a retried firing of the
same time names the same session, whatever offset or fraction the platform wrote. The
input is the trigger's fixed `input`; the scheduled time is in the context
("scheduled_time").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from typing import Any

from .base import SourceEventError, Start

__all__ = ["SCHEDULE_TIME_HEADER", "schedule_starts", "utc_text"]

SCHEDULE_TIME_HEADER = "x-cloudscheduler-scheduletime"


def utc_text(when: datetime) -> str:
    """`when` (aware) as `YYYY-MM-DDTHH:MM:SSZ` in UTC, to the second: the key's form."""
    return when.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def schedule_starts(trigger: Mapping[str, Any], event: Mapping[str, Any]) -> list[Start]:
    """The one Start of a schedule firing for `trigger` (its "name" and "input").
    SourceEventError when the event holds no scheduled time, or one that is not an ISO
    8601 time with an offset."""
    name = str(trigger.get("name"))
    where = f"triggers.{name}: schedule event"
    when = event.get("scheduled_time")
    headers = event.get("headers")
    if when is None and isinstance(headers, Mapping):
        when = next((v for k, v in headers.items() if str(k).lower() == SCHEDULE_TIME_HEADER), None)
    if not isinstance(when, str):
        raise SourceEventError(f"{where}: no scheduled_time (or {SCHEDULE_TIME_HEADER} header)")
    try:
        parsed = datetime.fromisoformat(when)
    except ValueError:
        raise SourceEventError(f"{where}: scheduled_time {when[:40]!r} is not an ISO 8601 time") from None
    if parsed.tzinfo is None:
        raise SourceEventError(f"{where}: scheduled_time {when[:40]!r} has no offset (e.g. Z)")
    text = utc_text(parsed)
    value = trigger.get("input")
    return [Start(f"schedule:{text}", {} if value is None else value,
                  {"trigger": name, "source": "schedule", "scheduled_time": text})]
