"""The manifest's `triggers:`: event sources that start sessions of the app's entry
(docs/triggers.md). Parsing and validation; the runtime side (what an event of each
source asks for, and its idempotency key) is runtime/sources/.

    triggers:
      web:     {type: http, auth: iam, wait_seconds: 0}
      nightly: {type: schedule, expression: "cron(0 2 * * ? *)", timezone: UTC, input: {...}}
      orders:  {type: queue, batch_size: 10, max_receive_count: 5}
      uploads: {type: storage, prefix: "in/", suffix: ".json"}
      audit:   {type: eventbridge, pattern: {"source": ["my.app"]}}

`unumctl.pipeline.load` parses them into `App.triggers`. Errors are TriggerError (an
AppError): one line `<manifest>: triggers.NAME.FIELD: <reason
and fix>`. Limits are the clouds' own: SQS event-source mapping BatchSize of a standard
queue without a batching window, 1 to 10
(https://docs.aws.amazon.com/lambda/latest/api/API_CreateEventSourceMapping.html#lambda-CreateEventSourceMapping-request-BatchSize);
redrive policy maxReceiveCount 1 to 1000
(https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-dead-letter-queues.html);
schedule expressions in EventBridge Scheduler's syntax
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html); an HTTP
wait at most Lambda's longest function timeout, 900 s
(https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from runtime.sources import KINDS

from .manifest import AppError, unknown_key_message

__all__ = ["KINDS", "MAX_WAIT_SECONDS", "TRIGGER_NAME_RE", "Trigger", "TriggerError", "check_expression",
           "check_pattern", "parse_triggers"]

TRIGGER_NAME_RE = re.compile(r"[a-z][a-z0-9-]{0,31}")
MAX_WAIT_SECONDS = 900

_RATE_RE = re.compile(r"rate\((?P<n>[1-9][0-9]*) (?P<unit>minutes?|hours?|days?)\)")
_CRON_RE = re.compile(r"cron\((?P<fields>[^()]+)\)")


class TriggerError(AppError):
    """A bad `triggers:` entry; the message is one line naming `triggers.NAME.FIELD`."""


@dataclass(frozen=True)
class Trigger:
    """One validated trigger: `name` (TRIGGER_NAME_RE), `type` (one of KINDS) and
    `options`, the fields of its type with their defaults filled in:

    - http: auth ("iam" | "public"), wait_seconds (0..MAX_WAIT_SECONDS);
    - schedule: expression (`rate(...)` / `cron(...)`), timezone (IANA), input (JSON);
    - queue: batch_size (1..10), max_receive_count (1..1000);
    - storage: prefix, suffix ("" for none);
    - eventbridge: pattern (an EventBridge event pattern).

    `to_dict()` is the form bundled with the entry function (`triggers.json`) and handed
    to runtime.sources.starts."""

    name: str
    type: str
    options: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, **self.options}


class _Base(BaseModel):
    model_config = ConfigDict(extra="forbid")


class _Http(_Base):
    type: Literal["http"]
    auth: Literal["iam", "public"] = "iam"
    wait_seconds: int = Field(0, ge=0, le=MAX_WAIT_SECONDS)


class _Schedule(_Base):
    type: Literal["schedule"]
    expression: str
    timezone: str = "UTC"
    input: Any = None

    @field_validator("expression")
    @classmethod
    def _expression(cls, v: str) -> str:
        check_expression(v)
        return v

    @field_validator("timezone")
    @classmethod
    def _timezone(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"{v[:60]!r} is not an IANA time zone; e.g. UTC or Europe/Paris") from None
        return v


class _Queue(_Base):
    type: Literal["queue"]
    batch_size: int = Field(10, ge=1, le=10)
    max_receive_count: int = Field(5, ge=1, le=1000)


class _Storage(_Base):
    type: Literal["storage"]
    prefix: str = Field("", max_length=1024)
    suffix: str = Field("", max_length=1024)


class _EventBridge(_Base):
    type: Literal["eventbridge"]
    pattern: dict[str, Any]

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, v: dict[str, Any]) -> dict[str, Any]:
        check_pattern(v)
        return v


_MODELS: dict[str, type[_Base]] = {"http": _Http, "schedule": _Schedule, "queue": _Queue,
                                   "storage": _Storage, "eventbridge": _EventBridge}


def check_expression(expr: str) -> tuple[str, Any]:
    """The parsed schedule expression `expr`, in EventBridge Scheduler's syntax:
    ("rate", seconds) for `rate(N minute|minutes|hour|hours|day|days)` (singular for N = 1,
    plural above), ("cron", [6 fields]) for `cron(minutes hours day-of-month month
    day-of-week year)` with `?` in exactly one of day-of-month and day-of-week. ValueError
    (one line, with an example) otherwise."""
    text = expr.strip()
    m = _RATE_RE.fullmatch(text)
    if m:
        n, unit = int(m["n"]), m["unit"]
        if (n == 1) == unit.endswith("s"):
            raise ValueError(f"{text!r}: the unit is singular for 1 and plural above, e.g. rate(1 hour), rate(5 minutes)")
        return "rate", n * {"minute": 60, "hour": 3600, "day": 86400}[unit.rstrip("s")]
    m = _CRON_RE.fullmatch(text)
    if m:
        fields = m["fields"].split()
        if len(fields) != 6:
            raise ValueError(f"{text!r}: cron() takes 6 fields (minutes hours day-of-month month day-of-week "
                             "year), e.g. cron(0 2 * * ? *)")
        if (fields[2] == "?") == (fields[4] == "?"):
            raise ValueError(f"{text!r}: exactly one of day-of-month and day-of-week must be '?', "
                             "e.g. cron(0 2 * * ? *) or cron(0 2 ? * MON *)")
        return "cron", fields
    raise ValueError(f"{text[:80]!r} is not rate(N unit) or cron(6 fields); e.g. rate(5 minutes), cron(0 2 * * ? *)")


def check_pattern(pattern: Any, where: str = "") -> None:
    """ValueError unless `pattern` is an EventBridge event pattern: a non-empty object whose
    leaves are non-empty arrays of match values (strings, numbers, booleans, null, or
    objects such as {"prefix": "x"}), nested objects matching nested fields
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html).
    `where`: the path of `pattern` inside the whole pattern, for the message."""
    if not isinstance(pattern, dict) or not pattern:
        raise ValueError(f"{where + ': ' if where else ''}must be a non-empty object, e.g. {{\"source\": [\"my.app\"]}}")
    for key, value in pattern.items():
        inner = f"{where}.{key}" if where else str(key)
        if isinstance(value, dict):
            check_pattern(value, inner)
        elif not isinstance(value, list) or not value:
            raise ValueError(f"{inner}: must be a non-empty array of values to match, e.g. [\"my.app\"]")


def parse_triggers(manifest: dict[str, Any], path: Path | str) -> list[Trigger]:
    """The triggers of manifest `manifest` (its `triggers:` mapping, name to trigger; none
    when absent), in the manifest's order. `path` (the manifest file) names the file in
    errors. Raises TriggerError: a bad name (TRIGGER_NAME_RE), an unknown type or field, a
    value out of range."""
    raw = manifest.get("triggers")
    if raw is None:
        return []
    if not isinstance(raw, dict):
        raise TriggerError(f"{path}: triggers: expected a mapping of trigger name to trigger, "
                           "e.g. triggers: {web: {type: http}}")
    out = []
    for name, spec in raw.items():
        where = f"{path}: triggers.{name}"
        if not isinstance(name, str) or not TRIGGER_NAME_RE.fullmatch(name):
            raise TriggerError(f"{path}: triggers.{str(name)[:40]}: a trigger name is 1-32 characters of a-z, "
                               "0-9 and '-', starting with a letter")
        if not isinstance(spec, dict):
            raise TriggerError(f"{where}: expected a mapping with a type, e.g. {{type: http}}")
        kind = spec.get("type")
        if kind not in _MODELS:
            raise TriggerError(f"{where}.type: {'missing' if kind is None else repr(str(kind)[:40])}; "
                               f"choose one of {', '.join(KINDS)}")
        model = _MODELS[kind]
        try:
            parsed = model.model_validate(spec)
        except ValidationError as exc:
            err = next((e for e in exc.errors() if e["type"] == "extra_forbidden"), exc.errors()[0])
            loc = ".".join(str(x) for x in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = unknown_key_message(str(err["loc"][-1]), list(model.model_fields))
            raise TriggerError(f"{where}.{loc}: {msg}") from None
        out.append(Trigger(name, kind, parsed.model_dump(exclude={"type"})))
    return out
