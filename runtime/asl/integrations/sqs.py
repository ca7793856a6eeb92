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
import re
from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "call", "iam_statements", "match", "queue_arn",
           "required"]

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


def queue_arn(url: str) -> str | None:
    """The ARN template of the queue a QueueUrl names (`https://sqs.<region>.amazonaws.com/
    <account>/<name>`, the legacy `https://<region>.queue.amazonaws.com/...`, or an endpoint
    such as moto's `http://127.0.0.1:5000/<account>/<name>`, whose region is the
    deployment's); None when the URL has no `/<12-digit account>/<name>` path."""
    from urllib.parse import urlsplit

    from .iam import REGION, arn
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    m = re.fullmatch(r"/(\d{12})/([A-Za-z0-9_-]{1,80}(?:\.fifo)?)/?", parts.path or "")
    if m is None:
        return None
    host = (parts.hostname or "").split(".")
    region = REGION
    if len(host) >= 4 and host[0] == "sqs" and re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", host[1]):
        region = host[1]
    elif len(host) >= 4 and host[1] == "queue" and re.fullmatch(r"[a-z]{2}(-[a-z]+)+-\d", host[0]):
        region = host[0]
    return arn("sqs", m.group(2), region=region, account=m.group(1))


def iam_statements(action: str, fields) -> list:
    """sqs:SendMessage on the queue `QueueUrl` names (queue_arn), `*` when it is dynamic
    (runtime.asl.integrations.iam; Step Functions guide "IAM policies for Amazon SQS",
    sqs-iam.html)."""
    from .iam import ANY, Statement
    url = fields.get("QueueUrl")
    res = queue_arn(url) if url is not None else None
    return [Statement(tuple(IAM_ACTIONS[action]), (res or ANY,))]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Send the message; a non-string MessageBody is serialized as JSON text."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} "
                       "must be a JSON object")
    p = dict(params)
    if "MessageBody" in p and not isinstance(p["MessageBody"], str):
        p["MessageBody"] = json.dumps(p["MessageBody"], separators=(",", ":"))
    return sdk.with_metadata(sdk.invoke_api("sqs", "send_message", p, "SQS"))
