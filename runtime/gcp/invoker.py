"""`Invoker` over Pub/Sub: invoking a function = publishing to its own topic.

Source: seed 001 §4.2 (Cloud Functions has no asynchronous invoke API, so every function
has a Pub/Sub topic that triggers it), Pub/Sub `projects.topics.publish`. All messages of a
fan-out are published concurrently (the client batches them) and `invoke_many` returns
only once every publish future has resolved: a lost publish would stall the workflow
(docs/architecture.md §4: the original never awaited the futures).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Sequence

from ..ports import Invoker

__all__ = ["MAX_EVENT_BYTES", "MAX_MESSAGE_BYTES", "PubSubInvoker", "topic_id"]

# Cloud Run functions quotas, "Max event size for event-driven functions": 512KB for Eventarc
# events (2nd gen; 10MB only for legacy events), https://cloud.google.com/functions/quotas.
# Counted in the smaller reading of KB (512,000 bytes).
MAX_EVENT_BYTES = 512_000
# What the event adds around the message data: the Eventarc Pub/Sub event's `data` is
# MessagePublishedData {"message": {"data": <base64>, "attributes", "messageId",
# "publishTime"}, "subscription": <name, up to 255 characters>}, with the CloudEvent
# attributes (id, source, type, time) as headers.
EVENT_ENVELOPE_BYTES = 8 * 1024
# The largest message data whose event fits: base64 carries 3 bytes in 4 characters.
MAX_MESSAGE_BYTES = (MAX_EVENT_BYTES - EVENT_ENVELOPE_BYTES) * 3 // 4
# Room left in a message for the payload's own envelope (Session, fan-out frames, parents,
# context) around a value sent inline.
PAYLOAD_ENVELOPE_BYTES = 16 * 1024


def topic_id(app: str, function: str, prefix: str | None = None) -> str:
    """Topic of a function: `prefix` + function, the prefix the deployment gives its functions
    (UNUM_TOPIC_PREFIX: `<app>-<stage>-<region>-`, unumctl/gcp/names.py); without one
    `<app>-<function>`."""
    return f"{prefix if prefix is not None else app + '-'}{function}"


class PubSubInvoker(Invoker):
    """Publishes invocation payloads (JSON) to `projects/<project>/topics/<app>-<fn>`.

    `publisher`: google.cloud.pubsub_v1.PublisherClient; `timeout`: seconds to wait for
    each publish future (raises the publish error or TimeoutError, so the platform retries
    the whole execution; duplicates are harmless by the protocol). Values above
    `max_payload_bytes` travel by reference (runtime/engine.py and runtime/session.py
    `entry_payload` switch to Data.Source 'blob', a GCS object): the bound is the Eventarc
    event limit MAX_EVENT_BYTES (512 KB, not Pub/Sub's 10 MB message limit) less the base64
    expansion and both envelopes. A message longer than MAX_MESSAGE_BYTES is refused
    (ValueError) rather than published as an event the trigger could not deliver.
    `usage` counts publishes and their billed bytes (Pub/Sub bills ≥ 1000 B per message)."""

    max_payload_bytes = MAX_MESSAGE_BYTES - PAYLOAD_ENVELOPE_BYTES

    def __init__(self, publisher, project: str, app: str, timeout: float = 60.0,
                 topic_prefix: str | None = None):
        self.publisher = publisher
        self.project = project
        self.app = app
        self.topic_prefix = topic_prefix  # None: `<app>-` (topic_id)
        self.timeout = timeout
        self.usage: Counter[str] = Counter()

    def topic_path(self, function: str) -> str:
        return self.publisher.topic_path(self.project, topic_id(self.app, function, self.topic_prefix))

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        futures = []
        for function, payload in calls:
            data = json.dumps(payload, separators=(",", ":")).encode()
            if len(data) > MAX_MESSAGE_BYTES:
                raise ValueError(f"payload for {function} is {len(data)} bytes, above the "
                                 f"{MAX_MESSAGE_BYTES} bytes whose Eventarc event fits the "
                                 f"{MAX_EVENT_BYTES}-byte limit of Cloud Run functions")
            futures.append(self.publisher.publish(self.topic_path(function), data,
                                                  unum_function=function))
            self.usage["publishes"] += 1
            self.usage["publish_bytes"] += max(1000, len(data))
        for f in futures:  # wait for all: no fire-and-forget
            f.result(timeout=self.timeout)
