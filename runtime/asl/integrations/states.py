"""Nested executions: `arn:aws:states:::states:startExecution` (request-response).

Source: AWS Step Functions developer guide "Start workflow executions from a task state in
Step Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/concepts-nested-workflows.html)
and "Start a new AWS Step Functions state machine from a running execution"
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-stepfunctions.html):
Parameters are the StartExecution API's (StateMachineArn, Input as a JSON object or its JSON
text, Name); the request-response result is {ExecutionArn, StartDate (Unix milliseconds),
SdkHttpMetadata, SdkResponseMetadata}; errors are `StepFunctions.<Exception>`
(`StepFunctions.ExecutionLimitExceeded`, `StepFunctions.StateMachineDoesNotExist`, ...).
To link the child to its parent, AWS asks the machine's author to pass
`"AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID.$": "$$.Execution.Id"` in `Input`; it is passed
through unchanged, so the child's input names the parent's execution ARN (`$$.Execution.Id`
is the ARN `unumctl serve` and DescribeExecution report for the parent).

Where the child runs: the Step Functions API at `UNUM_SFN_ENDPOINT` (`ENV_SFN_ENDPOINT`:
`unumctl serve` sets it to its own URL for the apps it hosts, so a parent starts any machine
the same service hosts, its own app's included; signed with placeholder keys), else where
the other families' calls go (`sdk.settings`: `UNUM_AWS_ENDPOINT`, real AWS on aws).

Exactly-once of the workflow outcome: without a `Name` in the parameters, the child's
execution name is derived from the parent's execution and the Task's invocation
(`CallContext.invocation`: the compiled function's instance, the state, its effective input
and occurrence in that invocation, and the attempt's retry count), so a duplicate delivery
or a re-execution of the parent's Task asks for the same name again. StartExecution is
idempotent by name (StartExecution API reference: the same name and input while the
execution runs returns it; once it has ended, ExecutionAlreadyExists): on
ExecutionAlreadyExists this family reads the execution (DescribeExecution) and, when its
input is the one asked for, returns it as the Task's result. One child per Task attempt.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "ENV_SFN_ENDPOINT", "IAM_ACTIONS", "INLINE", "KEYED", "NAME", "RESOURCE", "call",
           "child_name", "describe", "iam_statements", "match", "notify", "required", "suspends",
           "take_parent"]

NAME = "states"
INLINE = True
KEYED = True  # its calls get CallContext.invocation (Machine.run_task)
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK): the child gets the token in its Input
RESOURCE = "arn:aws:states:::states:startExecution"
ENV_SFN_ENDPOINT = "UNUM_SFN_ENDPOINT"
PARENT_FIELD = "AWS_STEP_FUNCTIONS_STARTED_BY_EXECUTION_ID"
IAM_ACTIONS = {a: ["states:StartExecution", "states:DescribeExecution"]
               for a in ("startExecution", "startExecution.sync", "startExecution.sync:2")}
_MACHINE_ARN = re.compile(r"arn:(aws[a-z-]*):states:([a-z0-9-]{1,30}):(\d{12}):stateMachine:([A-Za-z0-9_-]{1,80})")


SYNC = {RESOURCE: "startExecution", RESOURCE + ".sync": "startExecution.sync",
        RESOURCE + ".sync:2": "startExecution.sync:2"}
PARENT_KEY = "UnumParentTask"  # the continuation a .sync child carries (stripped at its start)


def match(resource: str) -> str | None:
    """'startExecution' for the request-response StartExecution resource (and, through
    integrations.find, for `.waitForTaskToken`: the Task starts the child, whose Input
    carries `$$.Task.Token` where the Parameters place it, and waits for SendTaskSuccess /
    SendTaskFailure with that token), 'startExecution.sync' / 'startExecution.sync:2' for
    the run-a-job patterns, else None."""
    return SYNC.get(resource)


def suspends(action: str) -> bool:
    """True for the `.sync` patterns: the Task waits, suspended, until the child's end
    completes its task token (the continuation registered with the child)."""
    return action != "startExecution"


def required(action: str) -> list[tuple[str, ...]]:
    """StartExecution requires StateMachineArn."""
    return [("StateMachineArn",)]


def iam_statements(action: str, fields) -> list:
    """states:StartExecution on the state machine `StateMachineArn` names and
    states:DescribeExecution (a repeated start reads its child) on that machine's executions
    (`execution:<machine>:*`); `*` when the machine is dynamic (runtime.asl.integrations.iam;
    Step Functions guide "IAM policies for AWS Step Functions", stepfunctions-iam.html)."""
    from .iam import ANY, Statement
    machine = fields.get("StateMachineArn")
    m = _MACHINE_ARN.fullmatch(machine) if machine is not None else None
    start, describe = "states:StartExecution", "states:DescribeExecution"
    assert set(IAM_ACTIONS[action]) == {start, describe}
    if m is None:
        return [Statement((start, describe), (ANY,))]
    return [Statement((start,), (machine,)),
            Statement((describe,), (f"arn:{m.group(1)}:states:{m.group(2)}:{m.group(3)}:execution:{m.group(4)}:*",))]


def child_name(parent_execution: str, invocation: str) -> str:
    """The execution name of the child started by Task invocation `invocation` of execution
    `parent_execution` (an ARN): `<parent name, at most 40 chars>-<32 hex digits of
    sha256(parent ARN, invocation)>`, at most 73 characters of [A-Za-z0-9_-] (AWS allows 80;
    it is also a valid unum session id)."""
    parent = parent_execution.rsplit(":", 1)[-1]
    stem = re.sub(r"[^A-Za-z0-9_-]", "-", parent)[:40].lstrip("_-") or "child"
    digest = hashlib.sha256(f"{parent_execution}\n{invocation}".encode()).hexdigest()[:32]
    return f"{stem}-{digest}"


def _client() -> Any:
    """The Step Functions client: at UNUM_SFN_ENDPOINT when set (`unumctl serve`, which checks
    no signature: signed with sdk.DUMMY_KEYS, never the environment's credentials), else
    where the other families' calls go (sdk.settings)."""
    endpoint = os.environ.get(ENV_SFN_ENDPOINT) or None
    if endpoint is None:
        return sdk.client("stepfunctions")
    return sdk.client("stepfunctions", endpoint, placeholder_keys=True, inject_host_prefix=False)


def _api(method: str, **params: Any) -> dict[str, Any]:
    """Call the Step Functions API `method`; AslError(`StepFunctions.<Code>`) for a service
    error, AslError('States.TaskFailed') for a connection failure."""
    from botocore.exceptions import BotoCoreError, ClientError
    try:
        resp = getattr(_client(), method)(**params)
    except ClientError as err:
        e = err.response.get("Error", {})
        code = str(e.get("Code") or "Unknown").rsplit(".", 1)[-1]
        raise AslError(f"StepFunctions.{code}", f"{e.get('Message', '')} (Service: AWSStepFunctions; "
                       f"Status Code: {err.response.get('ResponseMetadata', {}).get('HTTPStatusCode', 400)}; "
                       f"Error Code: {code})") from None
    except (BotoCoreError, TypeError, ValueError) as err:
        raise AslError("States.TaskFailed", f"stepfunctions.{method}: {err}") from None
    resp.pop("ResponseMetadata", None)
    return resp


def _millis(date: Any) -> Any:
    """A boto3 datetime as Unix milliseconds (how Step Functions writes StartDate)."""
    return int(round(date.timestamp() * 1000)) if hasattr(date, "timestamp") else date


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """StartExecution of `params["StateMachineArn"]` with `Input` (an object or its JSON
    text; default {}) under `Name` (default: child_name of the parent's execution and the
    Task's invocation); returns {ExecutionArn, StartDate, SdkHttpMetadata,
    SdkResponseMetadata}. A repeated start of the same child returns it again."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} must "
                       "be a JSON object")
    arn = params.get("StateMachineArn")
    m = _MACHINE_ARN.fullmatch(arn) if isinstance(arn, str) else None
    if m is None:
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field}.StateMachineArn must be a state "
                       f"machine ARN (arn:aws:states:REGION:ACCOUNT:stateMachine:NAME), got {arn!r}")
    inp = params.get("Input", {})
    if suspends(action):
        # the continuation registered with the child: its end completes this token
        if isinstance(inp, str):
            try:
                inp = json.loads(inp)
            except ValueError:
                inp = None
        if not isinstance(inp, dict) or not ctx.token:
            raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.resource} needs a JSON object "
                           f"{ctx.field}.Input (and a platform that can wait for callbacks)")
        inp = {**inp, PARENT_KEY: {"Token": ctx.token, "Version": 2 if action.endswith(":2") else 1}}
    text = inp if isinstance(inp, str) else json.dumps(inp, separators=(",", ":"))
    name = params.get("Name")
    if name is None:
        if not ctx.execution or not ctx.invocation:
            raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.resource} needs the parent's "
                           "execution and invocation to name its child idempotently")
        name = child_name(ctx.execution, ctx.invocation)
    request = {"stateMachineArn": arn, "name": name, "input": text}
    if params.get("TraceHeader") is not None:
        request["traceHeader"] = params["TraceHeader"]
    try:
        resp = _api("start_execution", **request)
    except AslError as err:
        if err.error != "StepFunctions.ExecutionAlreadyExists":
            raise
        # a repeated start (duplicate delivery, re-execution): the child it started before
        exec_arn = f"arn:{m.group(1)}:states:{m.group(2)}:{m.group(3)}:execution:{m.group(4)}:{name}"
        try:
            desc = _api("describe_execution", executionArn=exec_arn)
        except AslError:
            raise err from None
        if take_parent(json.loads(desc.get("input") or "null"))[0] != take_parent(json.loads(text))[0]:
            raise err from None
        resp = {"executionArn": desc["executionArn"], "startDate": desc["startDate"]}
    return sdk.with_metadata({"ExecutionArn": resp["executionArn"], "StartDate": _millis(resp["startDate"])})


def take_parent(value: Any) -> tuple[Any, dict[str, Any] | None]:
    """(the child's input without the continuation, the continuation {"Token", "Version"}
    or None) for an execution's input `value`."""
    if isinstance(value, dict) and isinstance(value.get(PARENT_KEY), dict):
        rest = dict(value)
        link = rest.pop(PARENT_KEY)
        if isinstance(link.get("Token"), str):
            return rest, {"Token": link["Token"], "Version": 2 if link.get("Version") == 2 else 1}
    return value, None


def describe(link: dict[str, Any], info: dict[str, Any], start: float, stop: float, inp: Any,
             status: str, output: Any = None, error: str | None = None,
             cause: str | None = None) -> dict[str, Any]:
    """The `.sync` Task's result: DescribeExecution's response in Step Functions' task
    output form (connect-stepfunctions "Run a Job"): ExecutionArn, Input, InputDetails,
    Name, Output, OutputDetails, StartDate/StopDate (Unix ms), StateMachineArn, Status
    [, Error, Cause]; `.sync` gives Input and Output as JSON text, `.sync:2` as JSON.
    `info` is the child's exec_info (Id, Name, StateMachine.Id)."""
    def enc(v: Any) -> Any:
        return v if link.get("Version") == 2 else json.dumps(v, separators=(",", ":"))
    out: dict[str, Any] = {"ExecutionArn": info["Id"], "Input": enc(inp), "InputDetails": {"Included": True},
                           "Name": info["Name"], "StartDate": int(start * 1000),
                           "StateMachineArn": info["StateMachine"]["Id"], "Status": status,
                           "StopDate": int(stop * 1000)}
    if status == "SUCCEEDED":
        out.update(Output=enc(output), OutputDetails={"Included": True})
    else:
        out.update(Error=error, Cause=cause)
    return out


def notify(link: dict[str, Any], result: dict[str, Any]) -> None:
    """Complete the parent's task token with a child's end: SendTaskSuccess with `result`
    (describe's shape) when it SUCCEEDED, else SendTaskFailure(States.TaskFailed, the
    result as JSON text), as Step Functions fails a `.sync` Task whose child failed. A token
    already completed or closed (a duplicate end; TaskTimedOut, InvalidToken,
    TaskDoesNotExist) is not an error; anything else raises (the platform delivers the
    child's end again)."""
    try:
        if result["Status"] == "SUCCEEDED":
            _api("send_task_success", taskToken=link["Token"], output=json.dumps(result, separators=(",", ":")))
        else:
            _api("send_task_failure", taskToken=link["Token"], error="States.TaskFailed",
                 cause=json.dumps(result, separators=(",", ":"))[:32768])
    except AslError as err:
        if err.error not in ("StepFunctions.TaskTimedOut", "StepFunctions.InvalidToken",
                             "StepFunctions.TaskDoesNotExist"):
            raise RuntimeError(f"the parent's task token could not be completed: {err.cause}") from None
