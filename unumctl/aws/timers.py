"""The EventBridge Scheduler schedules of an app's ByTime windows on AWS (unumctl/deploy/windows.py
says what a window's timer is on each target).

A schedule (`aws_scheduler_schedule`) ticks the consumer Lambda asynchronously with a rate
expression, `rate(value unit)`, value a positive integer, unit minute(s) | hour(s) | day(s),
singular for 1 (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rate-expressions.html);
schedules run with 60 second precision
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html), so ByTime must be a
whole number of minutes. Schedule names: 1-64 characters of [0-9a-zA-Z-_.] (EventBridge
Scheduler API reference, CreateSchedule, Name:
https://docs.aws.amazon.com/scheduler/latest/APIReference/API_CreateSchedule.html).
"""

from __future__ import annotations

from typing import Any

from ..deploy.models import Deployment
from ..deploy.windows import WindowTimer, _minutes
from . import names

__all__ = ["rate", "schedule_names", "schedules"]

CLOUD = "aws"  # this target's name, in the messages of deploy/windows.py
SCHEDULE_NAME_MAX = 64  # EventBridge Scheduler schedule names: [0-9a-zA-Z-_.]+, 1..64


def rate(t: WindowTimer) -> str:
    """The EventBridge Scheduler rate expression of `t`; ValueError (one line) when ByTime is
    not a whole number of minutes."""
    m = _minutes(t, CLOUD)
    value, unit = (m // 1440, "day") if m % 1440 == 0 else (m // 60, "hour") if m % 60 == 0 else (m, "minute")
    return f"rate({value} {unit}{'s' if value > 1 else ''})"


def schedule_names(dep: Deployment) -> list[str]:
    """The schedule name of each of `dep`'s ByTime windows (per stage: aws/names.py schedule),
    in `dep.timers` order; ValueError (one line naming the window) for one over 64 characters
    (checked at model time, aws/model.py)."""
    out = []
    for t in dep.timers:
        name = names.schedule(dep.app, dep.stage, t.name)
        if len(name) > SCHEDULE_NAME_MAX:
            raise ValueError(f"{t.where}: Window: schedule name {name!r} is longer than EventBridge "
                             f"Scheduler's {SCHEDULE_NAME_MAX} characters; shorten the app, stage or window name")
        out.append(name)
    return out


def schedules(dep: Deployment) -> list[dict[str, Any]]:
    """The template's view of the schedules of `dep`'s ByTime windows; ValueError (one line)
    for a ByTime EventBridge Scheduler cannot tick or a schedule name over 64 characters."""
    return [{"resource": f"window_{t.name}", "name": name, "consumer": t.consumer,
             "expression": rate(t), "input": t.input} for t, name in zip(dep.timers, schedule_names(dep))]
