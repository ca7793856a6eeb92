"""Schedule events (runtime/sources/schedule.py): the scheduled time, however written, keys
the session; the input is the trigger's fixed input."""

from __future__ import annotations

import pytest

from runtime.sources import SourceEventError, starts

NIGHTLY = {"name": "nightly", "type": "schedule", "expression": "cron(0 2 * * ? *)", "timezone": "UTC",
           "input": {"mode": "full"}}


@pytest.mark.parametrize("when", ["2022-03-22T02:00:00Z", "2022-03-22T02:00:00.000+00:00", "2022-03-22T03:00:00+01:00"])
def test_the_same_instant_in_any_notation_is_one_key(when):
    (s,) = starts(NIGHTLY, {"scheduled_time": when})
    assert s.key == "schedule:2022-03-22T02:00:00Z"
    assert s.input == {"mode": "full"}
    assert s.context == {"trigger": "nightly", "source": "schedule", "scheduled_time": "2022-03-22T02:00:00Z"}


def test_cloud_schedulers_header_carries_the_time_and_no_input_is_an_empty_object():
    (s,) = starts({**NIGHTLY, "input": None}, {"headers": {"X-CloudScheduler-ScheduleTime": "2022-03-22T02:00:00Z"},
                                              "body": None})
    assert (s.key, s.input) == ("schedule:2022-03-22T02:00:00Z", {})


@pytest.mark.parametrize("event, why", [({}, "no scheduled_time"), ({"scheduled_time": "yesterday"}, "not an ISO 8601"),
                                        ({"scheduled_time": "2022-03-22T02:00:00"}, "no offset")])
def test_an_event_without_a_usable_time_is_refused(event, why):
    with pytest.raises(SourceEventError, match=why):
        starts(NIGHTLY, event)
