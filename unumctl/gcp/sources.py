"""The triggers of an app on GCP (manifest `triggers:`, unumctl/triggers.py; docs/triggers.md
"GCP"): one Cloud Functions gen2 function per trigger (gen2 has one trigger per function:
https://cloud.google.com/functions/docs/calling), running the entry function's archive
with the entry points of runtime/gcp/sources.py as the entry's service account (which
reads and writes the datastore already and is granted publish on the entry's own topic).

The sources (unumctl/gcp/templates/triggers.tf.j2):
- `http`: an HTTP function; invoking it needs roles/run.invoker on its Cloud Run service
  (https://cloud.google.com/functions/docs/securing/authenticating), which nobody has but
  the project's owners unless `auth: public` opts in (allUsers is granted the role).
- `schedule`: a Cloud Scheduler job with an HTTP target calling the function with an OIDC
  token of the entry's account (granted run.invoker on it); the body is the fixed input,
  Cloud Scheduler adds the scheduled time as header X-CloudScheduler-ScheduleTime. The
  EventBridge Scheduler expression of the manifest becomes a unix-cron schedule (`cron`).
- `queue`: a Pub/Sub topic and the function's Eventarc trigger on it
  (`google.cloud.pubsub.topic.v1.messagePublished`, RETRY_POLICY_RETRY).
- `storage`: a Cloud Storage bucket of the app and the function's Eventarc trigger
  `google.cloud.storage.object.v1.finalized` on it; the Cloud Storage service agent gets
  roles/pubsub.publisher on the project, as Cloud Storage triggers require
  (https://cloud.google.com/functions/docs/calling/storage, "Permissions"), and the
  trigger's account roles/eventarc.eventReceiver (Eventarc, "Roles and permissions").
- `eventbridge`: AWS only; `check` refuses it in one line.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Any

from ..deploy.models import Deployment
from . import names

__all__ = ["TRIGGER_EVENT", "TRIGGER_HTTP", "check", "cron", "trigger_views"]

TRIGGER_HTTP = "handle_trigger_http"    # runtime/gcp/sources.py: http and schedule triggers
TRIGGER_EVENT = "handle_trigger_event"  # runtime/gcp/sources.py: queue and storage triggers
_RATE = re.compile(r"rate\((\d+) (minute|minutes|hour|hours|day|days)\)")
_CRON = re.compile(r"cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)")
_DOW = re.compile(r"[0-9A-Za-z,\-*/]+")


def check(dep: Deployment, where: str) -> None:
    """ValueError (one line naming `where` and the trigger) for a trigger GCP cannot run: an
    `eventbridge` trigger, or a schedule whose expression has no unix-cron equivalent."""
    for t in dep.triggers:
        if t.type == "eventbridge":
            raise ValueError(f"{where}: triggers.{t.name}.type: eventbridge is an AWS source; on gcp use a "
                             "queue trigger (Pub/Sub) and publish the events to its topic")
        if t.type == "schedule":
            cron(t.options.get("expression"), f"{where}: triggers.{t.name}.expression")


def cron(expression: str, where: str) -> str:
    """The Cloud Scheduler unix-cron schedule (minute hour day-of-month month day-of-week) of
    an EventBridge Scheduler expression: `rate(N unit)` for N minutes dividing 60, N hours
    dividing 24, or 1 day; `cron(min hour dom month dow year)` with year `*`, `?` read as
    `*` and numeric days of the week 1-7 (SUN=1) shifted to unix's 0-6. ValueError (one line
    naming `where`) for one with no such equivalent (L, W, #, a year, another rate)."""
    m = _RATE.fullmatch(expression or "")
    if m:
        n, unit = int(m.group(1)), m.group(2).rstrip("s")
        if unit == "minute" and 0 < n < 60 and 60 % n == 0:
            return "* * * * *" if n == 1 else f"*/{n} * * * *"
        if unit == "hour" and 0 < n < 24 and 24 % n == 0:
            return "0 * * * *" if n == 1 else f"0 */{n} * * *"
        if unit == "day" and n == 1:
            return "0 0 * * *"
        raise ValueError(f"{where}: {expression!r} has no Cloud Scheduler cron equivalent; use minutes dividing "
                         "60, hours dividing 24, rate(1 day) or a cron() expression")
    m = _CRON.fullmatch(expression or "")
    if not m or m.group(6) != "*" or any(c in expression for c in "LW#"):
        raise ValueError(f"{where}: {expression!r} has no Cloud Scheduler cron equivalent; use "
                         "cron(min hour day month weekday *) without L, W, # or a year")
    minute, hour, dom, month, dow = (("*" if f == "?" else f) for f in m.groups()[:5])
    if not _DOW.fullmatch(dow):
        raise ValueError(f"{where}: day of week {dow!r} is not valid")
    dow = re.sub(r"\d", lambda d: str((int(d.group()) - 1) % 7), dow)
    return f"{minute} {hour} {dom} {month} {dow}"


def trigger_views(dep: Deployment, entry: dict[str, Any], where: str) -> list[dict[str, Any]]:
    """The template's view of each trigger (triggers.tf.j2); `entry`: the entry function's
    view in render.py (its name, archive, environment). ValueError as `check`."""
    check(dep, where)
    stage, region = dep.stage, dep.region or ""
    out = []
    for t in dep.triggers:
        r = "trigger_" + t.name.replace("-", "_")
        v: dict[str, Any] = {
            "name": t.name, "type": t.type, "resource": r,
            "function_name": names.function_name(dep.app, stage, f"trigger-{t.name}"),
            "entry_point": TRIGGER_HTTP if t.type in ("http", "schedule") else TRIGGER_EVENT,
            "ingress": "ALLOW_ALL" if t.type in ("http", "schedule") else "ALLOW_INTERNAL_ONLY",
            "timeout": max(60, int(float(t.options.get("wait_seconds", 0) or 0)) + 10)}
        if t.type == "http":
            v["public"] = t.options.get("auth", "iam") == "public"
        elif t.type == "schedule":
            v["job"] = f"{dep.app}-{stage}-trigger-{t.name}"
            v["schedule"] = cron(t.options.get("expression"), f"{where}: triggers.{t.name}.expression")
            v["timezone"] = t.options.get("timezone", "UTC")
            v["body"] = base64.b64encode(json.dumps(t.options.get("input"), sort_keys=True).encode()).decode()
        elif t.type == "queue":
            v["topic"] = f"{names.topic_prefix(dep.app, stage, region)}trigger-{t.name}"
        elif t.type == "storage":
            base = f"{dep.blobs.bucket_prefix if dep.blobs else dep.app}-{t.name}"
            v["bucket_prefix"] = names._fit(base, names.BUCKET_NAME_MAX - 9, base).rstrip("-")
        out.append(v)
    return out
