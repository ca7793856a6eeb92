"""The deployment model of an app on AWS (TargetSpec `model`, unumctl/registry.py): its Lambda
functions, error handler, DynamoDB table, S3 bucket and roles, and the AWS-only parameters
the renderer formats (`AwsParams`, held in `Deployment.params`).

Built on the shared parts of unumctl/deploy/appgraph.py (`_common`: names, runtime options,
the resolved `clouds.aws` section, window timers). Raises AppError (one line naming
`<app>/unumctl.yaml` and the field) for names AWS would reject (a Lambda name over 64
characters: "Lambda quotas", https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html;
an IAM role name over 64: IAM API reference, CreateRole, RoleName,
https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html), for a role's inline
policy over IAM's limit (aws/policies.py) and for integrations the target refuses
(aws/unsupported.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.asl.machine import WAIT_FOR_TOKEN
from runtime.aws import (ENV_BLOB_PREFIX, ENV_BUCKET, ENV_FUNCTION_PREFIX, ENV_HISTORY, ENV_MAX_ATTEMPTS,
                         ENV_RESULT_RETENTION, ENV_TABLE)
from runtime.aws.iam import integration_statements, role_permissions

from ..deploy.appgraph import _blob_expiry_days, _common, _successors
from ..deploy.models import Archive, BlobStore, Datastore, Deployment, Function, Ref, Role
from ..manifest import App, AppError
from . import names
from .policies import check_policy_sizes, invoke_names
from .sources import trigger_functions
from .timers import schedule_names
from .unsupported import refuse_suspending_integrations

__all__ = ["build"]

FUNCTION_HANDLER = "unum_entry.lambda_handler"
ERROR_HANDLER_HANDLER = "runtime.aws.entry.error_handler"


@dataclass(frozen=True)
class AwsParams:
    """What only an AWS deployment has (`Deployment.params`), from `clouds.aws`
    (aws/settings.py): `runtime` the Lambda runtime id (e.g. python3.13), `architecture`
    x86_64 | arm64, `max_retry_attempts` Lambda's asynchronous retries (0..2),
    `log_retention_days` of every log group, `reserved_concurrency` per function (-1 =
    unreserved), `kms_key_arn` the customer-managed key (None = AWS-owned keys)."""

    runtime: str
    architecture: str
    max_retry_attempts: int
    log_retention_days: int
    reserved_concurrency: int = -1
    kms_key_arn: str | None = None


def _callback_functions(app: App) -> list[str]:
    """Unum names of the functions that run a Step Functions callback Task (Resource ending
    in `.waitForTaskToken`): any function's user code may resume them with the token
    (runtime.asl.callback re-invokes the waiting function), so every role may invoke them."""
    def find(states: dict[str, Any], name: str) -> dict[str, Any] | None:
        for n, st in (states or {}).items():
            if n == name:
                return st
            for sub in [*(b.get("States") for b in st.get("Branches", [])),
                        (st.get("ItemProcessor") or st.get("Iterator") or {}).get("States")]:
                hit = find(sub or {}, name)
                if hit is not None:
                    return hit
        return None

    out = []
    for fn, ir in sorted(app.workflow.functions.items()):
        w = ir.asl
        if w is None or not w.task:
            continue
        st = find(w.definition.get("States", {}), w.task) or {}
        if str(st.get("Resource", "")).endswith(WAIT_FOR_TOKEN):
            out.append(fn)
    return out


def build(app: App, flags: dict[str, Any]) -> Deployment:
    """The deployment model of `app` on aws (`flags`: region, profile ... given on the command
    line, None = not given). AppError as the module docstring says."""
    refuse_suspending_integrations(app)  # .sync nested executions: never a session that waits forever
    common = _common(app, "aws", flags)
    s = common["settings"]
    mpath = app.root / "unumctl.yaml"
    rt = app.manifest.runtime
    stage, region = common["stage"], s.region
    env: dict[str, str | Ref] = {ENV_TABLE: Ref("table"), ENV_BUCKET: Ref("bucket"), ENV_BLOB_PREFIX: names.BLOB_PREFIX,
                                 ENV_FUNCTION_PREFIX: names.function_prefix(app.name, stage)}
    fns = []
    callbacks = _callback_functions(app)
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        fns.append(Function(name, names.function(app.name, stage, name), FUNCTION_HANDLER,
                            spec.memory, spec.timeout, dict(env), _successors(app, name),
                            role=Role(role_permissions(),
                                      integrations=integration_statements(app.workflow.functions[name].wrapper)),
                            resumes=list(callbacks)))
    eh_env = {**env, ENV_HISTORY: rt.history, ENV_MAX_ATTEMPTS: str(rt.max_delivery_attempts),
              ENV_RESULT_RETENTION: str(rt.result_retention_seconds)}
    eh = Function(names.ERROR_HANDLER, names.error_handler(app.name, stage), ERROR_HANDLER_HANDLER,
                  128, 60, eh_env, [f.unum_name for f in fns], Archive("support"),
                  Role(role_permissions()), is_error_handler=True)
    by_unum = {f.unum_name: f.name for f in fns}
    for f in fns + [eh]:  # what each role may invoke (unumctl/aws/policies.py: a pattern past a few)
        listed = [by_unum[s] for s in f.invokes] + ([] if f.is_error_handler else [eh.name])
        f.role.invoke = invoke_names(app.name, stage, listed, f.is_error_handler)
        f.role.name = names.role(f.name, region)
    for f in fns + [eh]:
        if len(f.name) > names.FUNCTION_NAME_MAX:
            raise AppError(f"{mpath}: functions.{f.unum_name}: deployed name {f.name!r} is longer than "
                           "Lambda's 64 characters; shorten the app, stage or function name")
        role = f.role.name or ""
        if len(role) > names.IAM_ROLE_NAME_MAX:  # never: names.role hashes past the limit
            raise AppError(f"{mpath}: functions.{f.unum_name}: its role name {role!r} is longer than "
                           f"IAM's {names.IAM_ROLE_NAME_MAX} characters; shorten the app or function name")
    retries = s.max_retry_attempts if s.max_retry_attempts is not None else min(2, rt.max_delivery_attempts - 1)
    dep = Deployment(
        **common, functions=fns, error_handler=eh,
        datastore=Datastore(names.table(app.name, stage), point_in_time_recovery=s.point_in_time_recovery),
        blobs=BlobStore(names.BLOB_PREFIX, _blob_expiry_days(app),
                        bucket_prefix=names.bucket_prefix(app.name, stage, region)),
        params=AwsParams(runtime=s.runtime, architecture=s.architecture, max_retry_attempts=retries,
                         log_retention_days=s.log_retention_days, reserved_concurrency=s.reserved_concurrency,
                         kms_key_arn=s.kms_key_arn),
        region=s.region)
    try:  # every schedule name within its limit, every role's inline policy within IAM's
        dep.trigger_functions = trigger_functions(dep, dep.entry_function, str(mpath))
        schedule_names(dep)
        check_policy_sizes(dep, str(mpath))
    except ValueError as e:
        raise AppError(str(e)) from None
    return dep
