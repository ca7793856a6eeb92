"""The IAM policies the AWS rendering creates, sized at model time against IAM's limits.

Which functions a role may invoke (`invoke_names`): a function's successors and the error
handler, by name, while they are at most INVOKE_LIST_MAX; the stage's name pattern
`<app>-<stage>_*` (aws/names.py function_pattern: exact to this app and stage, as no app or
stage name holds a '_' and no stage name a '-') for the error handler (every function's on-failure destination, which re-invokes any of
them) and for a function with more successors (a wide fan-out). Listing every name made the
error handler's policy grow with the function count: 14,009 characters at 200 functions.
What is traded: a wide fan-out's role may invoke any function of its app, not only its
successors (never another app's or another stage's).

Sizes (`policy_sizes`, `check_policy_sizes`): the inline policy of each role as
unumctl/render/modules/aws-unum-function/iam.tf and unumctl/aws/templates/main.tf.j2 render
it, with the longest partition, region and account an ARN can hold where the model does not
know them yet, counted as IAM counts: characters other than white space. Limits (IAM User
Guide, "IAM and AWS STS quotas", IAM and STS character limits,
https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html): the inline
policies of one role 10,240 characters in aggregate, a managed policy 6,144 characters,
white space not counted. The rendering attaches no managed policy: each role has one inline
policy (`unum`, or the window scheduler's `invoke-window-consumers`).
"""

from __future__ import annotations

import json
from typing import Any

from runtime.aws.iam import BLOBS, BUCKET, DATASTORE, FAILURE_QUEUE, INVOKE, KMS, LOGS

from . import names
from ..deploy.models import Deployment, Function

__all__ = ["check_policy_sizes", "invoke_names", "policy_sizes"]

INVOKE_LIST_MAX = 10          # names a role's InvokeSuccessors lists before it takes the app's pattern
ROLE_INLINE_POLICIES_MAX = 10_240  # characters, all inline policies of a role (IAM quotas page)
MANAGED_POLICY_MAX = 6_144    # characters, one managed policy (IAM quotas page; none is rendered)
# the longest values an ARN can take where the model does not know them (partition
# `aws-us-gov`; region names are 14 characters at most today, e.g. `ap-southeast-4`)
PARTITION_MAX = "x" * 10
REGION_MAX = "x" * 16
ACCOUNT = "0" * 12
BUCKET_SUFFIX = 26            # characters Terraform adds to `bucket_prefix`


def invoke_names(app: str, stage: str, invokes: list[str], is_error_handler: bool) -> list[str]:
    """The function names (or the stage's pattern `<app>-<stage>_*`) a role's InvokeSuccessors statement
    lists: `invokes` (deployed names: successors, resumed functions, the error handler) while
    at most INVOKE_LIST_MAX and the role is not the error handler's, else [pattern]. Each name
    comes twice, unqualified and as `NAME:*`: an Invoke with a Qualifier (a session pinned to
    its version, runtime/aws/pins.py) is authorized against the qualified ARN, which an
    unqualified resource does not match (Lambda developer guide, "Fine-tuning the Resources
    and Conditions sections of policies", https://docs.aws.amazon.com/lambda/latest/dg/lambda-api-permissions-ref.html:
    functions "can be restricted to a specific function by function, version, or alias ARN");
    the pattern matches both."""
    if is_error_handler or len(invokes) > INVOKE_LIST_MAX:
        return [names.function_pattern(app, stage)]
    return [n + q for n in invokes for q in ("", ":*")]


def _statement(sid: str, actions: list[str], resources: list[str]) -> dict[str, Any]:
    return {"Sid": sid, "Effect": "Allow", "Action": sorted(actions), "Resource": resources}


def function_policy(dep: Deployment, f: Function, region: str | None = None) -> dict[str, Any]:
    """The inline policy `unum` of `f`'s execution role as iam.tf renders it, with the
    longest partition and account (and region, unless `region` is given) in its ARNs."""
    p, r, a = PARTITION_MAX, region or REGION_MAX, ACCOUNT
    bucket = (dep.bucket_prefix or "") + "x" * BUCKET_SUFFIX
    table = dep.table
    arns = {DATASTORE: [f"arn:{p}:dynamodb:{r}:{a}:table/{table}"],
            BLOBS: [f"arn:{p}:s3:::{bucket}/{dep.blobs.prefix if dep.blobs else ''}*"],
            BUCKET: [f"arn:{p}:s3:::{bucket}"],
            INVOKE: [f"arn:{p}:lambda:{r}:{a}:function:{n}" for n in f.role.invoke],
            LOGS: [f"arn:{p}:logs:{r}:{a}:log-group:/aws/lambda/{f.name}:log-stream:*"],
            FAILURE_QUEUE: [f"arn:{p}:sqs:{r}:{a}:{table.replace('.', '-')[:73]}-failed"]
            if f.is_error_handler else [],
            KMS: [dep.params.kms_key_arn] if dep.params.kms_key_arn else []}
    fill = {"{partition}": p, "{region}": r, "{account}": a}

    def filled(res: str) -> str:
        for k, v in fill.items():
            res = res.replace(k, v)
        return res
    return {"Version": "2012-10-17", "Statement": [
        _statement(name, actions, arns[name])
        for name, actions in f.role.permissions.items() if arns.get(name) and actions] + [
        _statement(st["sid"], st["actions"], [filled(x) for x in st["resources"]])
        for st in f.role.integrations]}


def scheduler_policy(dep: Deployment, region: str | None = None) -> dict[str, Any] | None:
    """The window scheduler role's inline policy (main.tf.j2: invoke the ByTime windows'
    consumers), or None when the app has no timer."""
    if not dep.timers:
        return None
    r = region or REGION_MAX
    consumers = sorted({dep.function(t.consumer).name for t in dep.timers})
    return {"Version": "2012-10-17", "Statement": [{
        "Effect": "Allow", "Action": "lambda:InvokeFunction",
        "Resource": [f"arn:{PARTITION_MAX}:lambda:{r}:{ACCOUNT}:function:{n}" for n in consumers]}]}


def size(policy: dict[str, Any]) -> int:
    """Characters of `policy` as IAM counts them: its JSON without white space outside
    strings (the IAM quotas page: white space is not counted)."""
    return len(json.dumps(policy, separators=(",", ":")))


def policy_sizes(dep: Deployment) -> dict[str, int]:
    """Role name -> the aggregate size (characters, as `size`) of its inline policies, for
    every role the AWS rendering creates."""
    region = dep.region
    out = {f.role.name or names.role(f.name, region): size(function_policy(dep, f, region)) for f in dep.all_functions}
    sched = scheduler_policy(dep, region)
    if sched is not None:
        out[names.scheduler_role(dep.app, dep.stage, region)] = size(sched)
    return out


def check_policy_sizes(dep: Deployment, where: str) -> None:
    """Raise ValueError (one line naming `where`, the role, its size and the limit) for the
    first role whose inline policies exceed ROLE_INLINE_POLICIES_MAX characters."""
    for role, n in policy_sizes(dep).items():
        if n > ROLE_INLINE_POLICIES_MAX:
            raise ValueError(
                f"{where}: the inline policy of IAM role {role!r} would be about {n} characters, over IAM's "
                f"{ROLE_INLINE_POLICIES_MAX} for a role's inline policies (IAM quotas page, "
                "https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html); "
                "split the function's integration Tasks or successors over more functions")
