"""Queue events (runtime/sources/queue.py): SQS records, Pub/Sub message data and the local
queue's records each give one Start per message, keyed by the message id, with the body as
input; the same message delivered again gives the same session key."""

from __future__ import annotations

import base64
import json

import pytest

from runtime.payload import SessionId
from runtime.sources import SourceEventError, session_key, starts
from runtime.sources.queue import LOCAL_QUEUE_SOURCE

ORDERS = {"name": "orders", "type": "queue", "batch_size": 10, "max_receive_count": 5}


def sqs_record(mid: str, body: str, source: str = "aws:sqs") -> dict:
    """An SQS record as Lambda's event-source mapping delivers it (the example event of
    https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html)."""
    return {"messageId": mid, "receiptHandle": "AQEB...", "body": body,
            "attributes": {"ApproximateReceiveCount": "1", "SentTimestamp": "1545082649183",
                           "SenderId": "AIDAIENQZJOLO23YVJ4VO", "ApproximateFirstReceiveTimestamp": "1545082649185"},
            "messageAttributes": {}, "md5OfBody": "e4e68fb7bd0e697a0ae8f1bb342846b3", "eventSource": source,
            "eventSourceARN": "arn:aws:sqs:us-east-2:123456789012:my-queue", "awsRegion": "us-east-2"}


def test_each_sqs_record_is_one_start_keyed_by_its_message_id_with_the_body_as_input():
    event = {"Records": [sqs_record("059f36b4-87a3", json.dumps({"order": 1})), sqs_record("2e1424d4-f796", "plain text")]}
    got = starts(ORDERS, event)
    assert [s.key for s in got] == ["sqs:059f36b4-87a3", "sqs:2e1424d4-f796"]
    assert [s.input for s in got] == [{"order": 1}, "plain text"]
    assert [s.item_id for s in got] == ["059f36b4-87a3", "2e1424d4-f796"]
    assert got[0].context == {"trigger": "orders", "source": "sqs", "message_id": "059f36b4-87a3",
                              "sent_timestamp": "1545082649183"}


def test_a_redelivered_message_names_the_same_session_and_another_message_another():
    first = starts(ORDERS, {"Records": [sqs_record("m-1", "{}")]})[0]
    again = starts(ORDERS, {"Records": [sqs_record("m-2", "{}"), sqs_record("m-1", "{}")]})
    ids = [SessionId.for_key(session_key("orders", s)) for s in again]
    assert ids[1] == SessionId.for_key(session_key("orders", first))
    assert ids[0] != ids[1]


def test_a_pubsub_message_is_one_start_with_its_data_decoded():
    data = base64.b64encode(json.dumps({"order": 7}).encode()).decode()
    event = {"message": {"data": data, "attributes": {"k": "v"}, "messageId": "2070443601311540",
                         "publishTime": "2021-02-26T19:13:55.749Z"},
             "subscription": "projects/p/subscriptions/s"}
    (s,) = starts(ORDERS, event)
    assert (s.key, s.input, s.item_id) == ("pubsub:2070443601311540", {"order": 7}, "2070443601311540")
    assert s.context["publish_time"] == "2021-02-26T19:13:55.749Z" and s.context["attributes"] == {"k": "v"}


def test_the_local_queue_records_have_their_own_key_prefix():
    (s,) = starts(ORDERS, {"Records": [sqs_record("7", "[1, 2]", LOCAL_QUEUE_SOURCE)]})
    assert (s.key, s.input, s.context["source"]) == ("queue:7", [1, 2], "queue")


@pytest.mark.parametrize("event, field", [
    ({"Records": "x"}, "Records"),
    ({"Records": [{"eventSource": "aws:s3", "messageId": "1"}]}, "eventSource"),
    ({"Records": [{"eventSource": "aws:sqs"}]}, "messageId"),
    ({"Records": [{"eventSource": "aws:sqs", "messageId": "1", "body": 3}]}, "body"),
    ({"message": {"data": "not base64!!"}, "subscription": "s"}, "messageId"),
    ({"message": {"data": "%%%", "messageId": "1"}}, "message.data"),
    ({"detail": {}}, "expected an SQS event"),
])
def test_an_event_of_another_shape_is_one_line_naming_the_field(event, field):
    with pytest.raises(SourceEventError, match=field) as exc:
        starts(ORDERS, event)
    assert str(exc.value).startswith("triggers.orders: queue event") and "\n" not in str(exc.value)
