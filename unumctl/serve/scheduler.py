"""When a `schedule` trigger fires on `unumctl serve`: the next fire time of an EventBridge
Scheduler expression (unumctl.triggers.check_expression), computed with croniter for
`cron(...)`.

EventBridge Scheduler's cron has six fields, `minutes hours day-of-month month day-of-week
year`, with day-of-week 1-7 = SUN-SAT and `?` for "any"
(https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html#cron-based);
croniter reads five, with day-of-week 0-6 = SUN-SAT: `?` becomes `*`, day-of-week numbers
move down by one, and the year field filters the times croniter yields. `W` (nearest
weekday) has no croniter form and is refused on serve. A `rate(N unit)` fires at the
multiples of its period since the Unix epoch, so a restarted serve names the same fire
times (and a firing delivered again starts nothing new).
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

from croniter import croniter

from ..triggers import check_expression

__all__ = ["next_fire"]

_DOW_NUMBER = re.compile(r"(?<![A-Za-z#])([1-7])")


def _croniter_dow(field: str) -> str:
    """An EventBridge day-of-week field in croniter's numbering (SUN = 0): each weekday
    number n becomes n - 1 (`2#1`, the first Monday, becomes `1#1`; the `#` occurrence
    count stays)."""
    return _DOW_NUMBER.sub(lambda m: str(int(m[1]) - 1), field)


def _years(field: str) -> set[int] | None:
    """The years of a year field (None: any): `*`, `2030`, `2030,2032`, `2030-2035`."""
    if field in ("*", "?"):
        return None
    years: set[int] = set()
    for part in field.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            raise ValueError(f"year field {field!r}: give *, years, or ranges such as 2030-2035")
        years.update(range(int(lo), int(hi or lo) + 1))
    return years


def next_fire(expression: str, tz: str, after: datetime) -> datetime | None:
    """The first fire time of `expression` strictly after `after` (aware), as an aware UTC
    datetime; None when a cron's year field has no year left. ValueError (one line) for an
    expression croniter cannot run (`W`)."""
    kind, parsed = check_expression(expression)
    if kind == "rate":
        period = int(parsed)
        t = int(after.timestamp()) // period * period + period
        return datetime.fromtimestamp(t, timezone.utc)
    minutes, hours, dom, month, dow, year = parsed
    if "W" in dom.upper():
        raise ValueError(f"{expression}: 'W' (nearest weekday) does not run on serve; use explicit days")
    spec = " ".join([minutes, hours, dom.replace("?", "*"), month, _croniter_dow(dow.replace("?", "*"))])
    years = _years(year)
    try:
        it = croniter(spec, after.astimezone(ZoneInfo(tz)), day_or=False)
        for _ in range(100_000):
            when = it.get_next(datetime)
            if years is None or when.year in years:
                return when.astimezone(timezone.utc)
            if years and when.year > max(years):
                return None
    except (ValueError, KeyError) as exc:
        raise ValueError(f"{expression}: {exc}") from None
    return None
