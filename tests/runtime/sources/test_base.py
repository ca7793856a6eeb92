"""The shared part of the sources (runtime/sources/base.py and the dispatch of
runtime/sources/__init__.py): session keys within the idempotency key rules, and one-line
errors for an unknown trigger type or a non-object event."""

from __future__ import annotations

import pytest

from runtime.payload import MAX_IDEMPOTENCY_KEY, SessionId
from runtime.sources import SourceEventError, Start, session_key, starts


def test_a_short_key_is_kept_readable_and_a_long_or_odd_one_is_hashed_into_the_rules():
    assert session_key("web", Start("http:k1", None)) == "trigger:web:http:k1"
    long = session_key("uploads", Start("s3:b/" + "x" * 1020 + "@1", None))
    odd = session_key("uploads", Start("s3:b/a\nb@1", None))
    for key in (long, odd):
        assert key.startswith("trigger:uploads:sha256:") and len(key) <= MAX_IDEMPOTENCY_KEY
        SessionId.for_key(key)  # accepted
    assert long != odd


def test_two_triggers_never_share_a_session_for_the_same_source_key():
    s = Start("sqs:m-1", {})
    assert SessionId.for_key(session_key("a", s)) != SessionId.for_key(session_key("b", s))


@pytest.mark.parametrize("trigger, event, why", [
    ({"name": "x", "type": "ftp"}, {}, "triggers.x.type: 'ftp' is not one of http"),
    ({"type": "http"}, {}, "expected the bundled entry"),
    ({"name": "x", "type": "http"}, [1], "triggers.x: http event: expected an object"),
])
def test_an_unknown_type_or_a_non_object_event_is_one_line(trigger, event, why):
    with pytest.raises(SourceEventError, match=why):
        starts(trigger, event)
