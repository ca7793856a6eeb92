"""The Cloud Scheduler jobs of ByTime windows on GCP (unumctl/deploy/windows.py; docs/ir.md
"Windows across sessions"; issue 26 item 3).

A Cloud Scheduler job (`google_cloud_scheduler_job`) publishes the tick to the consumer's
Pub/Sub topic (the message body is the Pub/Sub message's `data`,
https://cloud.google.com/scheduler/docs/creating) on a unix-cron schedule, whose finest
unit is the minute (https://cloud.google.com/scheduler/docs/configuring/cron-job-schedules):
ByTime must be 60 s × a divisor of 60 (`*/m * * * *`) or 3600 s × a divisor of 24
(`0 */h * * *`). The Cloud Scheduler API (cloudscheduler.googleapis.com) is enabled by the
rendered root module when the app has a timer.
"""

from __future__ import annotations

from typing import Any

from ..deploy.windows import WindowTimer, _minutes
from .names import scheduler_job

__all__ = ["cron", "timers"]


def cron(t: WindowTimer) -> str:
    """The Cloud Scheduler unix-cron schedule of `t`; ValueError (one line) when ByTime is no
    cron period."""
    m = _minutes(t, "gcp")
    if m < 60 and 60 % m == 0:
        return "* * * * *" if m == 1 else f"*/{m} * * * *"
    if m % 60 == 0 and 24 % (m // 60) == 0:
        h = m // 60
        return "0 * * * *" if h == 1 else f"0 */{h} * * *"
    raise ValueError(f"{t.where}: ByTime: {t.seconds:g} s is no Cloud Scheduler cron period: use 60 s times "
                     "a divisor of 60 (60, 120, 300, 600, ...) or 3600 s times a divisor of 24")


def timers(app: str, stage: str, timers: list[WindowTimer]) -> list[dict[str, Any]]:
    """The template's view of the GCP Cloud Scheduler jobs of `app` in `stage` (job names:
    unumctl/gcp/names.py scheduler_job); ValueError (one line) for a ByTime that is no cron
    period."""
    return [{"resource": f"window_{t.name}", "name": scheduler_job(app, stage, t.name),
             "consumer": t.consumer, "schedule": cron(t), "data": t.input_base64} for t in timers]
