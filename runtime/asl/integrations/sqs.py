"""The optimized SQS integration: `arn:aws:states:::sqs:sendMessage`.

Source: AWS Step Functions developer guide "Send messages to an Amazon SQS queue with Step
Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-sqs.html):
Parameters are the SendMessage API's (QueueUrl, MessageBody, DelaySeconds,
MessageAttributes, MessageDeduplicationId, MessageGroupId); a JSON MessageBody is sent as
its JSON text; the result is {MD5OfMessageBody, MessageId, ..., SdkHttpMetadata,
SdkResponseMetadata}; errors are `SQS.<Exception>`. At-least-once: a FIFO queue's
MessageDeduplicationId drops a repeated send within its 5-minute deduplication interval.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import AslError
from . import sdk

NAME = "sqs"
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = True
RESOURCE = "arn:aws:states:::sqs:sendMessage"
IAM_ACTIONS = {"sendMessage": ["sqs:SendMessage"]}


def match(resource: str) -> str | None:
    """'sendMessage' for the SQS resource, else None."""
    return "sendMessage" if resource == RESOURCE else None


def required(action: str) -> list[tuple[str, ...]]:
    """SendMessage requires QueueUrl and MessageBody."""
    return [("QueueUrl",), ("MessageBody",)]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Send the message; a non-string MessageBody is serialized as JSON text."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} "
                       "must be a JSON object")
    p = dict(params)
    if "MessageBody" in p and not isinstance(p["MessageBody"], str):
        p["MessageBody"] = json.dumps(p["MessageBody"], separators=(",", ":"))
    return sdk.with_metadata(sdk.invoke_api("sqs", "send_message", p, "SQS"))
