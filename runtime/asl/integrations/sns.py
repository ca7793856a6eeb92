"""The optimized SNS integration: `arn:aws:states:::sns:publish`.

Source: AWS Step Functions developer guide "Publish messages to an Amazon SNS topic with
Step Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-sns.html):
Parameters are the SNS Publish API's (Message, TopicArn | TargetArn | PhoneNumber,
Subject, MessageAttributes, MessageGroupId, MessageDeduplicationId, ...); a JSON Message
is sent as its JSON text; the result is {MessageId, SdkHttpMetadata, SdkResponseMetadata};
errors are `SNS.<Exception>`. At-least-once: a FIFO topic's MessageDeduplicationId
drops a repeated publish.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "call", "iam_statements", "match", "required"]

NAME = "sns"
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = True
RESOURCE = "arn:aws:states:::sns:publish"
IAM_ACTIONS = {"publish": ["sns:Publish"]}


def match(resource: str) -> str | None:
    """'publish' for the SNS publish resource, else None."""
    return "publish" if resource == RESOURCE else None


def required(action: str) -> list[tuple[str, ...]]:
    """Publish requires Message and one of TopicArn, TargetArn, PhoneNumber."""
    return [("Message",), ("TopicArn", "TargetArn", "PhoneNumber")]


def iam_statements(action: str, fields) -> list:
    """sns:Publish on the topic `TopicArn` (or `TargetArn`) names; `*` when it is dynamic or
    the message goes to a PhoneNumber (runtime.asl.integrations.iam; Step Functions guide
    "IAM policies for Amazon SNS", sns-iam.html)."""
    from .iam import ANY, Statement
    topic = fields.get("TopicArn") or fields.get("TargetArn")
    static = topic is not None and not fields.present("PhoneNumber") and topic.startswith("arn:")
    return [Statement(tuple(IAM_ACTIONS[action]), (topic if static else ANY,))]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Publish; a non-string Message is serialized as JSON text."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} "
                       "must be a JSON object")
    p = dict(params)
    if "Message" in p and not isinstance(p["Message"], str):
        p["Message"] = json.dumps(p["Message"], separators=(",", ":"))
    return sdk.with_metadata(sdk.invoke_api("sns", "publish", p, "SNS"))
