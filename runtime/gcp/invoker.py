"""`Invoker` over Pub/Sub: invoking a function = publishing to its own topic.

Source: seed 001 §4.2 (Cloud Functions has no asynchronous invoke API, so every function
has a Pub/Sub topic that triggers it), Pub/Sub `projects.topics.publish`. All messages of a
fan-out are published concurrently (the client batches them) and `invoke_many` returns
only once every publish future has resolved: a lost publish would stall the workflow
(ARCHITECTURE.md §4: the original never awaited the futures).
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any, Sequence

from ..ports import Invoker

MAX_MESSAGE_BYTES = 10_000_000  # Pub/Sub publish request limit (10 MB)


def topic_id(app: str, function: str) -> str:
    """Topic of a function: `<app>-<function>` (as rendered by Terraform)."""
    return f"{app}-{function}"


class PubSubInvoker(Invoker):
    """Publishes invocation payloads (JSON) to `projects/<project>/topics/<app>-<fn>`.

    `publisher`: google.cloud.pubsub_v1.PublisherClient; `timeout`: seconds to wait for
    each publish future (raises the publish error or TimeoutError, so the platform retries
    the whole execution; duplicates are harmless by the protocol). Values above
    `max_payload_bytes` travel by reference (runtime/engine.py switches to Data.Source
    'blob'); the bound leaves room for the envelope under the 10 MB message limit.
    `usage` counts publishes and their billed bytes (Pub/Sub bills ≥ 1000 B per message)."""

    max_payload_bytes = 9_000_000

    def __init__(self, publisher, project: str, app: str, timeout: float = 60.0):
        self.publisher = publisher
        self.project = project
        self.app = app
        self.timeout = timeout
        self.usage: Counter[str] = Counter()

    def topic_path(self, function: str) -> str:
        return self.publisher.topic_path(self.project, topic_id(self.app, function))

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        futures = []
        for function, payload in calls:
            data = json.dumps(payload, separators=(",", ":")).encode()
            if len(data) > MAX_MESSAGE_BYTES:
                raise ValueError(f"payload for {function} is {len(data)} bytes, above the Pub/Sub "
                                 f"limit of {MAX_MESSAGE_BYTES}")
            futures.append(self.publisher.publish(self.topic_path(function), data,
                                                  unum_function=function))
            self.usage["publishes"] += 1
            self.usage["publish_bytes"] += max(1000, len(data))
        for f in futures:  # wait for all: no fire-and-forget
            f.result(timeout=self.timeout)
