"""The registry of Task integrations: one module per service family (this package), one lookup.

Source: AWS Step Functions developer guide, "Integrating services with Step Functions"
(optimized integrations, https://docs.aws.amazon.com/step-functions/latest/dg/integrate-optimized.html)
and "Learning to use AWS service SDK integrations in Step Functions"
(https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html).

`find(resource)` maps a Task's `Resource` to a `Target` (family module, service, action);
`Machine.run_task` (runtime.asl.machine) calls `call(target, params, invoke, state)` for
every Task, so the Lambda path (`lambda_`) sits behind the same interface as the
request-response integrations (`dynamodb`, `sns`, `sqs`, `events`, `states`, `bedrock`, `sdk`) and the
Run a Job (`.sync`) ones (`jobs`).

A family module defines (`Family`, a typing.Protocol that mypy checks every module of
`FAMILIES` against):

* `match(resource) -> str | None`: the action it serves for `resource` (None: not its own);
* `call(action, params, ctx) -> result`: the call, returning AWS's result shape and raising
  runtime.asl.errors.AslError with AWS's error names;
* `required(action) -> list[tuple[str, ...]]`: the request fields AWS requires (each tuple
  lists alternatives, one of which must be given), checked at validate time;
* `IAM_ACTIONS` (dict action -> list of IAM actions; `sdk.iam_actions` for aws-sdk): the
  permissions the AWS target grants the role of the function running the Task, and
  `iam_statements(action, fields)`: those actions on the resources the Task's definition
  names (runtime.asl.integrations.iam; runtime/aws/iam.py integration_statements);
* `INLINE`: True when the Task runs in the compiled function that reaches it (no user
  function, no extra invocation), as Pass and Choice do; False only for Lambda;
* `CALLBACK`: True when AWS offers the Wait for Callback pattern (`.waitForTaskToken`) for
  the family, per the developer guide's table "Optimized integrations in Step Functions"
  (https://docs.aws.amazon.com/step-functions/latest/dg/integrate-optimized.html): Lambda,
  SNS, SQS, EventBridge and the AWS SDK integrations yes, DynamoDB no;
* optionally `KEYED` (True: `CallContext.invocation` is filled in, at the cost of a digest
  of the Task's input) and `suspends(action)` (True: the Task waits for its task token,
  `CallContext.token`, to be completed by another party); `TASK = False` for a family
  whose resources only a Distributed Map's ItemReader / ResultWriter name (`s3`).

The runtime core never imports boto3: only the integration modules do, when called.
Where the calls go and what they are signed with: `sdk.settings`, from `UNUM_AWS_ENDPOINT`
(`ENV_AWS_ENDPOINT`): a URL (placeholder keys, never boto3's credential chain), `aws` or
unset (boto3's own configuration), `none` (refused).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

from . import bedrock, dynamodb, events, jobs, lambda_, s3, sdk, sns, sqs, states
from .sdk import ENV_AWS_ENDPOINT  # noqa: F401  (re-exported: where the calls go)

__all__ = ["CALLBACK_SUFFIX", "CallContext", "activity_refusal", "call", "callback_refusal", "find", "iam_actions", "inline",
           "inline_tasks", "required", "s3", "supported", "suspends"]


class Family(Protocol):
    """What a family module provides (the module docstring's list; the optional members
    `IAM_ACTIONS` / `iam_actions`, `KEYED`, `TASK` and `suspends` are read with getattr)."""

    NAME: str
    INLINE: bool
    CALLBACK: bool

    def match(self, resource: str) -> str | None: ...

    def call(self, action: str, params: Any, ctx: Any) -> Any: ...

    def required(self, action: str) -> list[tuple[str, ...]]: ...

    def iam_statements(self, action: str, fields: Any) -> list[Any]: ...


# order matters: the optimized families before the generic aws-sdk one, Lambda last (it
# also takes plain function names and Lambda ARNs)
FAMILIES: tuple[Family, ...] = (dynamodb, sns, sqs, events, states, jobs, bedrock, s3, sdk, lambda_)
CALLBACK_SUFFIX = ".waitForTaskToken"
SYNC_SUFFIXES = (".sync", ".sync:2")


@dataclass(frozen=True)
class Target:
    """What a Task's Resource names: `family` (the module), `action` (its name there, e.g.
    'putItem', or 'dynamodb:query' for aws-sdk), `resource` (as written)."""

    family: Family
    action: str
    resource: str
    callback: bool = False

    @property
    def inline(self) -> bool:
        """True when the Task runs inside the compiled function that reaches it."""
        return bool(self.family.INLINE)

    @property
    def name(self) -> str:
        """The family's short name ('lambda', 'dynamodb', 'sns', 'sqs', 'events', 'aws-sdk')."""
        return self.family.NAME


@dataclass
class CallContext:
    """What a family's `call` may use: `invoke(function, event)` (the app's Lambda
    functions; only the Lambda family uses it), `state` (the Task's name, for messages),
    `field` ('Parameters' or 'Arguments'), `resource` (the Task's Resource), `execution`
    (the running execution's ARN, `$$.Execution.Id`) and `invocation` (what identifies this
    attempt of the Task within the execution, the same when a duplicate delivery or a
    re-execution repeats it; "" when unknown): the `states` family names its child
    executions from the two; `token`: the task token of an attempt that suspends
    (`suspends(target)`), "" otherwise; `external`: a lambda:invoke Task of a function
    outside the app (the compiler's `External`), called through Lambda's Invoke API;
    `sleep(seconds)`: the machine's wait (a virtual clock's passes at once) and `timeout`:
    the Task's TimeoutSeconds or None, for a family that waits for a job (`jobs`)."""

    invoke: Callable[[str, Any], Any]
    state: str
    field: str
    resource: str = ""
    execution: str = ""
    invocation: str = ""
    token: str = ""
    external: bool = False
    sleep: Callable[[float], None] = time.sleep
    timeout: float | None = None


def find(resource: str) -> Target | None:
    """The Target for a Task's `resource`, or None when no family serves it. A
    `.waitForTaskToken` resource is served when its family offers the Wait for Callback
    pattern (`CALLBACK`; Target.callback is True); a `.sync` resource when its family
    matches it (`states`, `jobs`)."""
    if not isinstance(resource, str) or not resource:
        return None
    if resource.endswith(CALLBACK_SUFFIX):
        base = resource[:-len(CALLBACK_SUFFIX)]
        for fam in FAMILIES:
            action = fam.match(base)
            if action is not None:
                return Target(fam, action, resource, True) if fam.CALLBACK else None
        return None
    for fam in FAMILIES:
        action = fam.match(resource)
        if action is not None:
            return Target(fam, action, resource)
    return None


def callback_refusal(resource: str) -> str | None:
    """For a `.waitForTaskToken` resource whose service AWS does not offer the Wait for
    Callback pattern for (e.g. DynamoDB), the reason in one line; else None."""
    if not isinstance(resource, str) or not resource.endswith(CALLBACK_SUFFIX):
        return None
    base = resource[:-len(CALLBACK_SUFFIX)]
    for fam in FAMILIES:
        if fam.match(base) is not None:
            if fam.CALLBACK:
                return None
            return (f"{fam.NAME} does not offer the Wait for Callback (.waitForTaskToken) "
                    f"pattern (AWS offers it for {callback_families()}); use {base}")
    return None


# an activity's ARN (Step Functions API reference, CreateActivity: the name is 1-80 characters)
_ACTIVITY = re.compile(r"arn:aws[a-z-]*:states:[a-z]{2}(?:-[a-z]+)+-\d:\d{12}:activity:[^\s:]{1,80}")


def activity_refusal(resource: str) -> str | None:
    """For an activity's ARN as a Task's Resource, why no target runs it, in one line
    naming the fix; else None. An activity needs a worker polling GetActivityTask (Step
    Functions developer guide, "Learn about Activities in Step Functions",
    https://docs.aws.amazon.com/step-functions/latest/dg/concepts-activities.html)."""
    if not isinstance(resource, str) or _ACTIVITY.fullmatch(resource) is None:
        return None
    return ("is an activity, which no target runs yet (its worker would poll GetActivityTask); hand the "
            "work to the worker with a .waitForTaskToken Task instead (e.g. "
            "arn:aws:states:::sqs:sendMessage.waitForTaskToken with \"TaskToken.$\": \"$$.Task.Token\") "
            "and have it call SendTaskSuccess / SendTaskFailure")


def callback_families() -> str:
    """The families that offer `.waitForTaskToken`, for messages."""
    return ", ".join(f.NAME for f in FAMILIES if f.CALLBACK)


def inline(resource: Any) -> bool:
    """True when `resource` is an integration that runs in the function reaching it."""
    t = find(resource) if isinstance(resource, str) else None
    return t is not None and t.inline


def call(target: Target, params: Any, ctx: CallContext) -> Any:
    """Run `target` with the Task's effective input `params`; AslError on failure."""
    return target.family.call(target.action, params, ctx)


def suspends(target: Target | None) -> bool:
    """True when `target`'s Task waits, suspended, for its task token to be completed by
    another party (`states:startExecution.sync`: the child's end), like a
    `.waitForTaskToken` Task."""
    if target is None:
        return False
    fn = getattr(target.family, "suspends", None)
    return bool(fn and fn(target.action))


def required(target: Target) -> list[tuple[str, ...]]:
    """The request fields AWS requires for `target` (alternatives per tuple)."""
    return target.family.required(target.action)


def iam_actions(target: Target) -> list[str]:
    """The IAM actions the caller's role needs for `target` (e.g. ['dynamodb:PutItem'])."""
    fam = target.family
    actions = getattr(fam, "iam_actions", None)
    if actions is not None:
        return actions(target.action)
    return list(getattr(fam, "IAM_ACTIONS", {}).get(target.action, []))


def supported() -> str:
    """One line listing the supported resources, for error messages."""
    return ("Lambda (function name, ARN, arn:aws:states:::lambda:invoke), "
            "arn:aws:states:::dynamodb:getItem|putItem|updateItem|deleteItem, "
            "arn:aws:states:::sns:publish, arn:aws:states:::sqs:sendMessage, "
            "arn:aws:states:::events:putEvents, arn:aws:states:::bedrock:invokeModel, "
            "arn:aws:states:::states:startExecution[.sync|.sync:2], "
            f"arn:aws:states:::{{{'|'.join(jobs.JOBS)}}}[.sync], "
            "arn:aws:states:::aws-sdk:<service>:<action>; "
            f".waitForTaskToken for {callback_families()}")


def inline_tasks(definition: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """(state path, Resource) of every integration Task of a validated `definition` that runs
    inline (not Lambda), and of every Distributed Map's ItemReader / ResultWriter (S3),
    nested Map/Parallel states included, in definition order; a state path is `States.A`,
    `States.M.ItemReader` or `States.M.ItemProcessor.States.B`."""
    out: list[tuple[str, str]] = []
    for name, st in definition.get("States", {}).items():
        where = f"{prefix}States.{name}"
        if st.get("Type") == "Task" and inline(st.get("Resource")):
            out.append((where, st["Resource"]))
        elif st.get("Type") == "Map":
            for f in ("ItemReader", "ResultWriter"):  # a Distributed Map's S3 calls
                res = (st.get(f) or {}).get("Resource") if isinstance(st.get(f), dict) else None
                if isinstance(res, str) and inline(res):
                    out.append((f"{where}.{f}", res))
            key = "ItemProcessor" if "ItemProcessor" in st else "Iterator"
            out += inline_tasks(st.get(key, {}), f"{where}.{key}.")
        elif st.get("Type") == "Parallel":
            for k, b in enumerate(st.get("Branches", [])):
                out += inline_tasks(b, f"{where}.Branches[{k}].")
    return out
