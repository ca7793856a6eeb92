"""The triggers of an app on AWS (manifest `triggers:`, unumctl/triggers.py; docs/triggers.md
"AWS"): one trigger function per trigger, and the source that invokes it.

Each trigger gets a small Lambda function `<app>-<stage>_trigger-<name>` running the entry
function's archive with handler runtime.aws.sources.handler (environment UNUM_TRIGGER,
UNUM_ENTRY): it starts one session of the entry per event (runtime/source_start.py) and may
only do that (its role: runtime/aws/iam.py `role_permissions(SOURCES)`; a queue trigger's
SQS actions as a statement on its queue). Why a function per trigger and not the entry
itself: the entry keeps its one contract (the Unum wire payload, asynchronous invocation,
the error handler as on-failure destination); an HTTP trigger needs a synchronous answer
(and may wait for the result); the source's invoke permission, the Function URL and the
SQS event-source mapping are per function; and GCP gen2 allows one trigger per function
(unumctl/gcp/sources.py), so both clouds have the same shape.

The sources (unumctl/aws/templates/triggers.tf.j2):
- `http`: a Lambda function URL with `AuthType` AWS_IAM, or NONE on the `auth: public`
  opt-in (Lambda developer guide, "Lambda function URLs", "Control access to Lambda
  function URLs": with AWS_IAM the caller needs lambda:InvokeFunctionUrl; with NONE the
  function's resource policy must allow it to `*`). Chosen over an API Gateway HTTP API:
  one resource instead of an API, a stage, an integration and a route, no extra service in
  the path (and on moto), the same IAM authentication (SigV4); an HTTP API's extras
  (custom domains, JWT authorisers, throttling) are not needed to start sessions.
- `schedule`: an EventBridge Scheduler schedule (`aws_scheduler_schedule`) with the
  trigger's expression and time zone; the target input carries the context attribute
  `<aws.scheduler.scheduled-time>` (EventBridge Scheduler user guide, "Adding context
  attributes"), the scheduled time the session's key is made of; the fixed input is the
  trigger's own, bundled with the entry (triggers.json).
- `queue`: an SQS queue with a dead-letter queue (`redrive_policy` maxReceiveCount) and an
  event-source mapping with `ReportBatchItemFailures` (Lambda developer guide, "Using
  Lambda with Amazon SQS"); the queue's visibility timeout is six times the function's
  timeout, as that guide recommends.
- `storage`: an S3 bucket of the app with an event notification `s3:ObjectCreated:*`
  (prefix/suffix filters) to the function (S3 user guide, "Amazon S3 Event Notifications").
- `eventbridge`: a rule on the default bus with the trigger's event pattern and the
  function as target (EventBridge user guide, "Rules").
"""

from __future__ import annotations

import json
from typing import Any

from runtime.aws.iam import SOURCE_QUEUE, SOURCES, role_permissions
from runtime.source_start import ENV_ENTRY, ENV_TRIGGER

from ..deploy.models import Deployment, Function, Role
from . import names

__all__ = ["HANDLER", "trigger_functions", "trigger_views"]

HANDLER = "runtime.aws.sources.handler"
TRIGGER_TIMEOUT = 60   # seconds: a start is a few datastore writes and one invoke (http waits longer)
TRIGGER_MEMORY = 256   # MB
SQS_NAME_MAX = 80      # SQS queue names: 1-80 of [A-Za-z0-9_-] (CreateQueue, QueueName)
VISIBILITY_FACTOR = 6  # Lambda developer guide, SQS: visibility timeout >= 6 x the function timeout


def function_name(app: str, stage: str, trigger: str) -> str:
    """The trigger function of trigger `trigger`: `<app>-<stage>_trigger-<trigger>` (the '-'
    keeps it apart from every IR function name)."""
    return names.function(app, stage, f"trigger-{trigger}")


def source_name(app: str, stage: str, trigger: str) -> str:
    """The EventBridge Scheduler schedule or EventBridge rule of a trigger:
    `<app>-<stage>-trigger-<trigger>` (both 1-64 characters; checked in trigger_functions)."""
    return f"{names.app_stage(app, stage)}-trigger-{trigger}"


def queue_name(app: str, stage: str, trigger: str, dead_letter: bool = False) -> str:
    """The SQS queue of a queue trigger: `<app>-<stage>-<trigger>` (+ `-dlq`)."""
    return f"{names.app_stage(app, stage)}-{trigger}{'-dlq' if dead_letter else ''}"


def trigger_functions(dep: Deployment, entry: Function, where: str) -> list[Function]:
    """The trigger function of each of `dep.triggers` (module docstring), sharing `entry`'s
    archive; ValueError (one line naming `where` and the trigger) for a name over Lambda's
    64 or SQS's 80 characters."""
    out = []
    perms = role_permissions(SOURCES)
    queue_actions = perms.pop(SOURCE_QUEUE)
    for t in dep.triggers:
        name = function_name(dep.app, dep.stage, t.name)
        if len(name) > names.FUNCTION_NAME_MAX:
            raise ValueError(f"{where}: triggers.{t.name}: function name {name!r} is longer than Lambda's "
                             f"{names.FUNCTION_NAME_MAX} characters; shorten the app, stage or trigger name")
        if t.type in ("schedule", "eventbridge") and len(source_name(dep.app, dep.stage, t.name)) > names.FUNCTION_NAME_MAX:
            raise ValueError(f"{where}: triggers.{t.name}: {t.type} name {source_name(dep.app, dep.stage, t.name)!r} is "
                             f"longer than {names.FUNCTION_NAME_MAX} characters; shorten the app, stage or trigger name")
        integrations = []
        if t.type == "queue":
            dlq = queue_name(dep.app, dep.stage, t.name, True)
            if len(dlq) > SQS_NAME_MAX:
                raise ValueError(f"{where}: triggers.{t.name}: queue name {dlq!r} is longer than SQS's "
                                 f"{SQS_NAME_MAX} characters; shorten the app, stage or trigger name")
            integrations = [{"sid": SOURCE_QUEUE, "actions": list(queue_actions), "resources": [
                f"arn:{{partition}}:sqs:{{region}}:{{account}}:{queue_name(dep.app, dep.stage, t.name)}"]}]
        wait = float(t.options.get("wait_seconds", 0) or 0)
        env = {**entry.environment, ENV_TRIGGER: t.name, ENV_ENTRY: entry.unum_name}
        f = Function(f"trigger-{t.name}", name, HANDLER, TRIGGER_MEMORY, max(TRIGGER_TIMEOUT, int(wait) + 10),
                     env, [entry.unum_name], entry.archive,
                     Role(dict(perms), integrations=integrations, invoke=[entry.name],
                          name=names.role(name, dep.region)), trigger=t.name)
        out.append(f)
    return out


def trigger_views(dep: Deployment) -> list[dict[str, Any]]:
    """The template's view (triggers.tf.j2) of each trigger: its kind's settings as inert
    values (rendered through the `hcl` filter) and the module of its function."""
    out = []
    by_trigger = {f.trigger: f for f in dep.trigger_functions}
    for t in dep.triggers:
        f = by_trigger[t.name]
        v: dict[str, Any] = {"name": t.name, "type": t.type, "module": f"trigger_{t.name}",
                             "resource": t.name.replace("-", "_"), "function": f.name, "timeout": f.timeout}
        if t.type == "http":
            v["auth"] = "NONE" if t.options.get("auth", "iam") == "public" else "AWS_IAM"
        elif t.type == "schedule":
            v["expression"] = t.options.get("expression")
            v["timezone"] = t.options.get("timezone", "UTC")
            v["schedule_name"] = source_name(dep.app, dep.stage, t.name)
            # the fixed input is the trigger's own (triggers.json); the target input only
            # carries the time (runtime/sources/schedule.py)
            v["input"] = json.dumps({"scheduled_time": "<aws.scheduler.scheduled-time>"}, separators=(",", ":"))
        elif t.type == "queue":
            v["queue"] = queue_name(dep.app, dep.stage, t.name)
            v["dlq"] = queue_name(dep.app, dep.stage, t.name, True)
            v["batch_size"] = int(t.options.get("batch_size", 10))
            v["max_receive_count"] = int(t.options.get("max_receive_count", 5))
            v["visibility"] = VISIBILITY_FACTOR * f.timeout
        elif t.type == "storage":
            v["bucket_prefix"] = names.bucket_prefix(dep.app, f"{dep.stage}-{t.name}"[:20], dep.region)
            v["prefix"] = t.options.get("prefix")
            v["suffix"] = t.options.get("suffix")
        elif t.type == "eventbridge":
            v["rule"] = source_name(dep.app, dep.stage, t.name)
            v["pattern"] = json.dumps(t.options.get("pattern"), sort_keys=True, separators=(",", ":"))
        out.append(v)
    return out
