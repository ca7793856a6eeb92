"""What every event source shares: `Start` (one session start an event asks for), the one
error of a malformed event, the session key, and the reading of a message body.

Source: docs/triggers.md (the manifest's `triggers:` and what each source guarantees);
issue "Exactly one session per event": the session id comes from the source's own identity
of the event, so a redelivered event names the session it started, and `claim_start`
(runtime/session.py) / the local session registry start nothing new.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..payload import MAX_IDEMPOTENCY_KEY

__all__ = ["SourceEventError", "Start", "decoded_body", "field_of", "session_key", "text_of"]


class SourceEventError(ValueError):
    """An event that is not of the shape its trigger's source delivers. The message is one
    line naming the trigger, the field and what was expected."""


@dataclass(frozen=True)
class Start:
    """One session an event asks for.

    `key`: the source's own identity of the event (`sqs:<messageId>`, `pubsub:<messageId>`,
    `s3:<bucket>/<key>@<versionId or sequencer>`, `gcs:<bucket>/<name>#<generation>`,
    `schedule:<scheduled time, ISO 8601 UTC>`, `http:<Idempotency-Key>`,
    `eventbridge:<id>`, ...): the same event delivered again has the same key.
    `input`: the session's input (a JSON value). `context`: {"trigger": NAME, "source":
    KIND, ...} (e.g. "scheduled_time", "bucket", "message_id"). `item_id`: for a batch
    source, the id the platform wants back for a record that failed (SQS partial batch
    response `batchItemFailures[].itemIdentifier`)."""

    key: str
    input: Any
    context: dict[str, Any] = field(default_factory=dict)
    item_id: str | None = None


def session_key(trigger_name: str, start: Start) -> str:
    """The idempotency key of `start` of trigger `trigger_name`, handed to
    runtime.payload.SessionId.for_key (and so to `claim_start` / the local session
    registry): `trigger:<name>:<start.key>`, or `trigger:<name>:sha256:<hex of start.key>`
    when that is longer than MAX_IDEMPOTENCY_KEY (255) characters or holds a control
    character (an S3 key may be 1024 bytes). Two triggers never share a session."""
    key = f"trigger:{trigger_name}:{start.key}"
    if len(key) > MAX_IDEMPOTENCY_KEY or any(ord(c) < 32 or ord(c) == 127 for c in key):
        key = f"trigger:{trigger_name}:sha256:{hashlib.sha256(start.key.encode()).hexdigest()}"
    return key


def field_of(obj: Any, name: str, where: str, kind: type = str) -> Any:
    """`obj[name]` when `obj` is a mapping holding a value of `kind` there (a non-empty
    string for str, an object for dict); SourceEventError `<where>.<name>: ...` otherwise."""
    if not isinstance(obj, Mapping):
        raise SourceEventError(f"{where}: expected an object, got {type(obj).__name__}")
    value = obj.get(name)
    if not isinstance(value, Mapping if kind is dict else kind) or value == "":
        raise SourceEventError(f"{where}.{name}: expected {'an object' if kind is dict else 'a non-empty ' + kind.__name__}, "
                               f"got {str(value)[:60]!r}")
    return value


def text_of(data: str | None, base64_encoded: bool, where: str) -> str | None:
    """The text of a body that may be base64 (Function URL `isBase64Encoded`, Pub/Sub
    `message.data`): decoded, as UTF-8. SourceEventError for bad base64 or bytes that are
    not UTF-8."""
    if data is None or not base64_encoded:
        return data
    try:
        return base64.b64decode(data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        raise SourceEventError(f"{where}: not base64 UTF-8 text") from None


def decoded_body(text: str | None) -> Any:
    """A session input from a message body: the body parsed as JSON, else the text itself
    (a body that is not JSON reaches the session as a string); None for no body."""
    if text is None or text == "":
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text
