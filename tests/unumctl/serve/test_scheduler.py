"""The fire times of schedule triggers on serve (unumctl/serve/scheduler.py): EventBridge
Scheduler's cron read in croniter's numbering (day-of-week 1 = SUN), the year field, time
zones, rates on the multiples of their period, and `W` refused in one line."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from unumctl.serve.scheduler import next_fire

T0 = datetime(2030, 1, 1, 0, 0, 30, tzinfo=timezone.utc)  # a Tuesday


def test_a_rate_fires_on_the_multiples_of_its_period():
    assert next_fire("rate(5 minutes)", "UTC", T0) == datetime(2030, 1, 1, 0, 5, tzinfo=timezone.utc)
    assert next_fire("rate(1 day)", "UTC", T0) == datetime(2030, 1, 2, tzinfo=timezone.utc)


def test_cron_day_of_week_numbers_count_from_sunday_as_one():
    # 2 = MON in EventBridge's numbering (croniter's 1): the next Monday 02:00 after Tuesday
    assert next_fire("cron(0 2 ? * 2 *)", "UTC", T0) == datetime(2030, 1, 7, 2, tzinfo=timezone.utc)
    assert next_fire("cron(0 2 ? * MON *)", "UTC", T0) == datetime(2030, 1, 7, 2, tzinfo=timezone.utc)
    assert next_fire("cron(0 2 ? * 1 *)", "UTC", T0) == datetime(2030, 1, 6, 2, tzinfo=timezone.utc)  # SUN


def test_cron_times_are_in_the_triggers_time_zone_and_the_year_filters():
    assert next_fire("cron(0 2 * * ? *)", "Europe/Paris", T0) == datetime(2030, 1, 1, 1, tzinfo=timezone.utc)
    assert next_fire("cron(0 2 1 1 ? 2032)", "UTC", T0) == datetime(2032, 1, 1, 2, tzinfo=timezone.utc)
    assert next_fire("cron(0 2 1 1 ? 2029)", "UTC", T0) is None


def test_nearest_weekday_is_refused_in_one_line():
    with pytest.raises(ValueError, match="'W' .* does not run on serve"):
        next_fire("cron(0 2 15W * ? *)", "UTC", T0)
