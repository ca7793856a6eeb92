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
from ..arns import parse_function_name
from ..errors import AslError
from ..limits import limited as _limit

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "LAMBDA_INVOKE", "NAME", "call", "function_arn",
           "iam_statements", "match", "required"]

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


def function_arn(ref: str) -> str | None:
    """The ARN template (runtime.asl.integrations.iam) of the function a FunctionName names:
    `MyFn` / `MyFn:q` -> `arn:{partition}:lambda:{region}:{account}:function:MyFn[:q]`, an
    ARN or `<account>:function:MyFn` as written; None for another shape."""
    from .iam import arn
    parsed = parse_function_name(ref)
    if parsed is None:
        return None
    name, qualifier = parsed
    if ref.startswith("arn:"):
        return ref
    account = ref.split(":", 1)[0] if ":function:" in ref else None
    rest = f"function:{name}" + (f":{qualifier}" if qualifier else "")
    return arn("lambda", rest, account=account) if account else arn("lambda", rest)


def iam_statements(action: str, fields) -> list:
    """lambda:InvokeFunction on the function a lambda:invoke Task of a function outside the
    app names (static FunctionName; runtime.asl.integrations.iam; Step Functions guide "IAM
    policies for AWS Lambda", lambda-iam.html, which grants the function and its versions
    and aliases: `<arn>` and `<arn>:*`); `*` when it is dynamic. The app's own functions
    are granted by the runtime's table (InvokeSuccessors), not here."""
    from .iam import ANY, Statement
    target = function_arn(fields.get("FunctionName") or "")
    if target is None:
        return [Statement(tuple(IAM_ACTIONS[action]), (ANY,))]
    unqualified = target if target.count(":") == 6 else target.rsplit(":", 1)[0]
    return [Statement(tuple(IAM_ACTIONS[action]), (unqualified, unqualified + ":*"))]


def invoke_external(params: dict[str, Any], ctx) -> dict[str, Any]:
    """Call Lambda's Invoke (RequestResponse) for a function outside the app, through the
    integration endpoint (runtime.asl.integrations.sdk.client: real Lambda on aws; on local
    and serve UNUM_AWS_ENDPOINT, the embedded emulator unless the user named another or
    opted into real AWS). Returns
    AWS's optimized-integration shape {ExecutedVersion, Payload, SdkHttpMetadata,
    SdkResponseMetadata, StatusCode[, LogResult]}; a service error raises
    `Lambda.<Code>Exception` (e.g. Lambda.ResourceNotFoundException), a function error
    (X-Amz-Function-Error) raises the function's own errorType with its errorMessage, as
    Step Functions reports them (connect-lambda.html)."""
    from . import sdk
    payload = params.get("Payload", {})
    request: dict[str, Any] = {"FunctionName": params["FunctionName"], "InvocationType": "RequestResponse",
                               "Payload": payload if isinstance(payload, str) else
                               json.dumps(payload, separators=(",", ":"))}
    for key in ("LogType", "ClientContext", "Qualifier"):
        if params.get(key) is not None:
            request[key] = params[key]
    res = sdk.invoke_api("lambda", "invoke", request, "Lambda")
    body = res.get("Payload")  # the response stream, read as text (sdk.jsonable)
    try:
        value = json.loads(body) if isinstance(body, str) and body else None
    except ValueError:
        value = body
    if res.get("FunctionError"):
        err = value if isinstance(value, dict) else {}
        raise AslError(str(err.get("errorType") or "Lambda.Unknown"),
                       str(err.get("errorMessage") if "errorMessage" in err else value))
    out = {"ExecutedVersion": res.get("ExecutedVersion") or "$LATEST", "Payload": value,
           "StatusCode": res.get("StatusCode", 200)}
    if res.get("LogResult"):
        out["LogResult"] = res["LogResult"]
    return sdk.with_metadata(out)


def call(action: str, params: Any, ctx) -> Any:
    """Invoke the function: for 'invoke', `params` holds FunctionName, Payload, LogType;
    for 'direct', `params` is the event and the resource names the function. A function
    outside the app (`ctx.external`) is called through Lambda's Invoke (invoke_external)."""
    if action == "invoke" and getattr(ctx, "external", False) and isinstance(params, dict) \
            and "FunctionName" in params:
        return _limit(invoke_external(params, ctx), "lambda")
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
