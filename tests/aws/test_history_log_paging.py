"""`unumctl history --cloud aws` reads CloudWatch Logs FilterLogEvents to the last page.

CloudWatch answers pages with no events that still carry a `nextToken` (the search goes on
over the group's streams: FilterLogEvents API reference, "nextToken"); the reader must page
until no token, or the lines after an empty page are silently dropped (issue 23 item 4).
The contract is the one botocore call, so botocore's Stubber plays CloudWatch here: it
checks every request's parameters (the filter pattern included) against the API model.
"""

from __future__ import annotations

import json

import pytest

boto3 = pytest.importorskip("boto3", reason="boto3 not installed (pip install -e '.[aws]')")
from botocore.stub import Stubber  # noqa: E402

from unumctl.aws.history import HISTORY_PATTERN, AwsHistoryReader  # noqa: E402

GROUP = "/aws/lambda/app-A"


def _event(i: int, message: str, stream: str = "2026/11/26/[$LATEST]abc") -> dict:
    return {"logStreamName": stream, "timestamp": 1_000_000 + i, "message": message,
            "ingestionTime": 1_000_000 + i, "eventId": f"e{i}"}


def _client():
    return boto3.client("logs", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="x")


LINES = ["START RequestId: r1 Version: $LATEST",
         json.dumps({"unum": "event", "kind": "ran", "session": "s1", "instance": "A", "request_id": "r1",
                     "attempt": 1, "t0": 1000.0}),
         "END RequestId: r1",
         "REPORT RequestId: r1\tDuration: 1.0 ms"]


def _stub_pages(stubber: Stubber, pattern: str | None) -> None:
    """Four pages: two lines, then two empty pages that carry a token, then two more lines."""
    base = {"logGroupName": GROUP, "startTime": 1_000_000, "endTime": 1_010_001}
    if pattern is not None:
        base["filterPattern"] = pattern
    pages = [([_event(0, LINES[0]), _event(1, LINES[1])], "t1"), ([], "t2"), ([], "t3"),
             ([_event(2, LINES[2]), _event(3, LINES[3])], None)]
    token = None
    for events, nxt in pages:
        params = dict(base, **({"nextToken": token} if token else {}))
        resp = {"events": events, "searchedLogStreams": []}
        if nxt:
            resp["nextToken"] = nxt
        stubber.add_response("filter_log_events", resp, params)
        token = nxt


def test_pages_past_empty_pages_that_carry_a_token():
    """Fails without the fix: the reader stopped at the first empty page (lines 3-4 lost)."""
    client = _client()
    reader = AwsHistoryReader(None, None, client, {"A": "app-A"})
    with Stubber(client) as stubber:
        _stub_pages(stubber, HISTORY_PATTERN)
        lines = reader._lines(1000.0, 1010.0)
        stubber.assert_no_pending_responses()
    assert [ln["message"] for ln in lines] == LINES
    parsed = reader._parse(lines)
    assert [a["rid"] for a in parsed.attempts] == ["r1"] and parsed.attempts[0]["t1"] is not None
    assert [e["kind"] for e in parsed.events] == ["ran"]


def test_logs_reads_every_line_without_a_pattern():
    """`logs` shows the functions' own output, so it asks for every line (no filterPattern:
    the Stubber refuses a request whose parameters differ)."""
    client = _client()
    reader = AwsHistoryReader(None, None, client, {"A": "app-A"}, clock=lambda: 1000.0 + 86400.0)
    with Stubber(client) as stubber:  # `logs` without --session: the last day
        base = {"logGroupName": GROUP, "startTime": 1_000_000, "endTime": 87_400_001}
        stubber.add_response("filter_log_events", {"events": [_event(0, LINES[0])], "nextToken": "t1"}, base)
        stubber.add_response("filter_log_events", {"events": [], "nextToken": "t2"}, dict(base, nextToken="t1"))
        stubber.add_response("filter_log_events", {"events": [_event(1, "user output"), _event(2, LINES[2]),
                                                         _event(3, LINES[3])]},
                             dict(base, nextToken="t2"))
        rows, _ = reader.logs(function="A")
        stubber.assert_no_pending_responses()
    assert [r["line"] for r in rows] == ["user output"]


def test_history_pattern_matches_every_line_kind_the_reader_uses():
    """The pattern's terms (CloudWatch OR syntax `?term`) each occur in a line kind the
    history needs: Lambda's START/END/REPORT and crash lines, and the event lines."""
    terms = [t.strip('?"') for t in HISTORY_PATTERN.split()]
    assert all(t.startswith("?") for t in HISTORY_PATTERN.split())
    for line in LINES + ["RequestId: r1 Error: Runtime exited with error: signal: killed"]:
        assert any(t in line for t in terms), line
