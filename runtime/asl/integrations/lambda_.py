"""The Lambda family: a Task whose Resource is a function name, a Lambda function ARN or
`arn:aws:states:::lambda:invoke` (optionally `.waitForTaskToken`).

Source: AWS Step Functions developer guide "Invoke an AWS Lambda function with Step
Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/connect-lambda.html):
the optimized integration's result is {ExecutedVersion, Payload, SdkHttpMetadata,
SdkResponseMetadata, StatusCode[, LogResult]}; the legacy form returns the payload itself.
The app's functions are called through `ctx.invoke` (the compiled function's user code),
so this family does not run inline.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from .. import logtail
from ..errors import AslError

NAME = "lambda"
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = False
LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
IAM_ACTIONS = {"invoke": ["lambda:InvokeFunction"], "direct": ["lambda:InvokeFunction"]}


def match(resource: str) -> str | None:
    """'invoke' for lambda:invoke (any pattern), 'direct' for a function name or a Lambda
    ARN, None for any other `arn:aws:states:::` or non-Lambda ARN."""
    if resource.startswith(LAMBDA_INVOKE):
        return "invoke"
    if resource.startswith("arn:aws:lambda:") or not resource.startswith("arn:"):
        return "direct"
    return None


def required(action: str) -> list[tuple[str, ...]]:
    """lambda:invoke requires FunctionName; the direct form takes any input."""
    return [("FunctionName",)] if action == "invoke" else []


def call(action: str, params: Any, ctx) -> Any:
    """Invoke the function: for 'invoke', `params` holds FunctionName, Payload, LogType;
    for 'direct', `params` is the event and the resource names the function."""
    from ..machine import _limit
    if action == "direct":
        return _limit(ctx.invoke(ctx.resource, params), "lambda")
    if not isinstance(params, dict) or "FunctionName" not in params:
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field}.FunctionName is "
                       "required for arn:aws:states:::lambda:invoke")
    payload = params.get("Payload")
    if isinstance(payload, str):
        try:
            payload = json.loads(payload)
        except ValueError:
            pass
    elif payload is None:
        payload = {}
    request_id = str(uuid.uuid4())
    if params.get("LogType") == "Tail":  # LogResult: the tail of the function's log
        with logtail.capture() as log:
            res = ctx.invoke(params["FunctionName"], payload)
    else:
        log, res = None, ctx.invoke(params["FunctionName"], payload)
    result = {"ExecutedVersion": "$LATEST", "Payload": _limit(res, "lambda"),
              "SdkHttpMetadata": {"HttpStatusCode": 200},
              "SdkResponseMetadata": {"RequestId": request_id},
              "StatusCode": 200}
    if log is not None:
        result["LogResult"] = log.result(request_id)
    return result
