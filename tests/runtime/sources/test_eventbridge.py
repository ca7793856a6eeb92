"""EventBridge events (runtime/sources/eventbridge.py): keyed by the event's id, the whole
event as input."""

from __future__ import annotations

import pytest

from runtime.sources import SourceEventError, starts

AUDIT = {"name": "audit", "type": "eventbridge", "pattern": {"source": ["my.app"]}}
EVENT = {"version": "0", "id": "6a7e8feb-b491-4cf7-a9f1-bf3703467718", "detail-type": "Order Placed",
         "source": "my.app", "account": "111122223333", "time": "2017-12-22T18:43:48Z", "region": "us-west-1",
         "resources": [], "detail": {"order": 9}}


def test_an_event_is_keyed_by_its_id_and_is_the_input():
    (s,) = starts(AUDIT, EVENT)
    assert s.key == "eventbridge:6a7e8feb-b491-4cf7-a9f1-bf3703467718" and s.input == EVENT
    assert (s.context["event_source"], s.context["detail_type"]) == ("my.app", "Order Placed")


@pytest.mark.parametrize("drop", ["id", "source", "detail-type"])
def test_an_event_without_its_identity_is_refused(drop):
    with pytest.raises(SourceEventError, match=drop):
        starts(AUDIT, {k: v for k, v in EVENT.items() if k != drop})
