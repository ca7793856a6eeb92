"""The optimized Amazon Bedrock integration: `arn:aws:states:::bedrock:invokeModel`
(request-response), through the bedrock-runtime InvokeModel API.

Source: AWS Step Functions developer guide "Invoke and customize Amazon Bedrock models with
Step Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-bedrock.html):
Parameters `ModelId` (a model id or ARN), `Body` (the request body as a JSON object),
`ContentType` / `Accept` (default application/json), and `Input` / `Output` ({S3Uri}) to
read the body from / write the response to S3 instead, which this module refuses in one line
(States.Runtime) until wired; the result is {Body: the model's response parsed from JSON,
ContentType}; errors are `Bedrock.<Exception>`. IAM: bedrock:InvokeModel on the foundation
model (`arn:<partition>:bedrock:<region>::foundation-model/<ModelId>`, or the ARN given),
`*` when ModelId is dynamic ("IAM policies for Amazon Bedrock" on the same page).
`createModelCustomizationJob` (a job, `.sync`) is not served.
"""

from __future__ import annotations

import json
from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "call", "iam_statements", "match", "required"]

NAME = "bedrock"
CALLBACK = False
INLINE = True
RESOURCE = "arn:aws:states:::bedrock:invokeModel"
IAM_ACTIONS = {"invokeModel": ["bedrock:InvokeModel"]}


def match(resource: str) -> str | None:
    """'invokeModel' for the Bedrock InvokeModel resource, else None."""
    return "invokeModel" if resource == RESOURCE else None


def required(action: str) -> list[tuple[str, ...]]:
    """InvokeModel requires ModelId."""
    return [("ModelId",)]


def iam_statements(action: str, fields: Any) -> list[Any]:
    """bedrock:InvokeModel on the model `ModelId` names (a model id or an ARN), else `*`."""
    from .iam import ANY, PARTITION, REGION, Statement
    model = fields.get("ModelId")
    if model is None:
        res = ANY
    elif model.startswith("arn:"):
        res = model
    else:
        res = f"arn:{PARTITION}:bedrock:{REGION}::foundation-model/{model}"
    return [Statement(tuple(IAM_ACTIONS[action]), (res,))]


def call(action: str, params: Any, ctx: Any) -> dict[str, Any]:
    """InvokeModel with `Body` sent as JSON text; the response body parsed from JSON."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} must be "
                       "a JSON object")
    for field in ("Input", "Output"):
        if field in params:
            raise AslError("States.Runtime", f"state {ctx.state!r}: bedrock:invokeModel's {field} (an S3 "
                           "location) is not supported here; pass the request as Body and read the response "
                           "from the result's Body")
    body = params.get("Body", {})
    req = {"modelId": params.get("ModelId"), "contentType": params.get("ContentType", "application/json"),
           "accept": params.get("Accept", "application/json"),
           "body": body if isinstance(body, str) else json.dumps(body, separators=(",", ":"))}
    resp = sdk.invoke_api("bedrock-runtime", "invoke_model", req, "Bedrock")
    text = resp.get("body", "")
    try:
        parsed = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        parsed = text
    return {"Body": parsed, "ContentType": resp.get("contentType")}
