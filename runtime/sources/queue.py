"""Queue triggers (`type: queue`): the sessions a batch of queue messages asks for.

Event shapes, as delivered to the entry function:

- AWS, an SQS event-source mapping: {"Records": [{"messageId", "receiptHandle", "body",
  "attributes": {"ApproximateReceiveCount", "SentTimestamp", ...}, "eventSource":
  "aws:sqs", "eventSourceARN", ...}]} (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html,
  "Example standard queue message event"); the key is `sqs:<messageId>` and `item_id` the
  `messageId` a partial batch response names
  (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html,
  `batchItemFailures[].itemIdentifier`).
- GCP, a Pub/Sub push (Eventarc `google.cloud.pubsub.topic.v1.messagePublished`), the
  CloudEvent's data: {"message": {"data": base64, "attributes", "messageId",
  "publishTime"}, "subscription"} (https://cloud.google.com/eventarc/docs/cloudevents,
  MessagePublishedData; PubsubMessage:
  https://cloud.google.com/pubsub/docs/reference/rest/v1/PubsubMessage); the key is
  `pubsub:<messageId>` ("Guaranteed to be unique within the topic").
- local/serve, the local queue: the SQS record shape with "eventSource": "unumctl:queue";
  the key is `queue:<messageId>`.

A body (or Pub/Sub data) that is JSON becomes the session's input parsed; any other text
is passed as a string.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import SourceEventError, Start, decoded_body, field_of, text_of

__all__ = ["LOCAL_QUEUE_SOURCE", "queue_starts"]

LOCAL_QUEUE_SOURCE = "unumctl:queue"  # eventSource of the local queue's records
_SQS_SOURCES = {"aws:sqs": "sqs", LOCAL_QUEUE_SOURCE: "queue"}


def queue_starts(name: str, event: Mapping[str, Any]) -> list[Start]:
    """The Starts of a queue event for trigger `name`: one per SQS (or local queue) record,
    in order, or one for a Pub/Sub message. SourceEventError for another shape."""
    where = f"triggers.{name}: queue event"
    if "Records" in event:
        records = event["Records"]
        if not isinstance(records, list):
            raise SourceEventError(f"{where}: Records: expected a list of SQS records")
        return [_sqs(name, r, f"{where}: Records[{i}]") for i, r in enumerate(records)]
    if "message" in event:
        return [_pubsub(name, event, where)]
    raise SourceEventError(f"{where}: expected an SQS event (Records) or Pub/Sub message data (message)")


def _sqs(name: str, record: Any, where: str) -> Start:
    source = field_of(record, "eventSource", where)
    kind = _SQS_SOURCES.get(source)
    if kind is None:
        raise SourceEventError(f"{where}.eventSource: {source[:40]!r} is not a queue "
                               f"(expected one of {', '.join(_SQS_SOURCES)})")
    mid = field_of(record, "messageId", where)
    body = record.get("body")
    if body is not None and not isinstance(body, str):
        raise SourceEventError(f"{where}.body: expected a string")
    attrs = record.get("attributes") if isinstance(record.get("attributes"), Mapping) else {}
    ctx = {"trigger": name, "source": kind, "message_id": mid}
    if "SentTimestamp" in attrs:
        ctx["sent_timestamp"] = attrs["SentTimestamp"]
    return Start(f"{kind}:{mid}", decoded_body(body), ctx, item_id=mid)


def _pubsub(name: str, event: Mapping[str, Any], where: str) -> Start:
    msg = field_of(event, "message", where, dict)
    mid = msg.get("messageId", msg.get("message_id"))  # the push body repeats it in snake case
    if not isinstance(mid, str) or not mid:
        raise SourceEventError(f"{where}: message.messageId: expected a non-empty str")
    data = msg.get("data")
    if data is not None and not isinstance(data, str):
        raise SourceEventError(f"{where}: message.data: expected a base64 string")
    ctx: dict[str, Any] = {"trigger": name, "source": "pubsub", "message_id": mid}
    if isinstance(msg.get("publishTime"), str):
        ctx["publish_time"] = msg["publishTime"]
    if isinstance(msg.get("attributes"), Mapping):
        ctx["attributes"] = dict(msg["attributes"])
    return Start(f"pubsub:{mid}", decoded_body(text_of(data, True, f"{where}: message.data")), ctx, item_id=mid)
