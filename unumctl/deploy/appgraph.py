"""Building the deployment model of an app (after Chalice's chalice/deploy/appgraph.py).

`build(app, cloud, **flags)` -> models.Deployment: every function, store, topic, role and
the error path of `app` on target `cloud` (a registered target), with names from
deploy/names.py (a cloud target's own: unumctl/<cloud>/names.py) and settings from the typed
`clouds.<cloud>` section resolved by the one precedence rule (deploy/settings.py; `flags`:
region, profile, project ... given on the command line, None = not given). Nothing is built or written: archives are placeholders.
`package(app, dep)` builds the archives (unumctl.build) and fills them in.

Raises AppError (one line naming `<app>/unumctl.yaml` and the field) for names the cloud
would reject (a Lambda name over 64 characters); ValueError for an unknown target.
Which builder a target uses is its TargetSpec's `model` (unumctl/registry.py).
"""

from __future__ import annotations

from typing import Any

from runtime.asl.machine import WAIT_FOR_TOKEN
from runtime.aws.iam import integration_statements, role_permissions
from runtime.aws import (ENV_BLOB_PREFIX, ENV_BUCKET, ENV_FUNCTION_PREFIX, ENV_HISTORY, ENV_MAX_ATTEMPTS,
                         ENV_RESULT_RETENTION, ENV_TABLE)
from runtime.engine import Options

from .. import registry
from ..build import build_app, build_support
from ..manifest import App, AppError
from . import names
from .models import Archive, BlobStore, Datastore, Deployment, Function, Ref, Role
from .windows import window_timers
from ..aws.policies import check_policy_sizes, invoke_names
from ..aws.unsupported import refuse_suspending_integrations

AWS_FUNCTION_HANDLER = "unum_entry.lambda_handler"
AWS_ERROR_HANDLER_HANDLER = "runtime.aws.entry.error_handler"


def build(app: App, cloud: str, **flags: Any) -> Deployment:
    """The deployment model of `app` on `cloud` (see the module docstring)."""
    return registry.part(cloud, "model")(app, flags)


def package(app: App, dep: Deployment) -> Deployment:
    """Build every archive of `dep` (unumctl.build.build_app for the functions, build_support
    for runtime-only ones) and fill the placeholders; returns `dep`. Raises what the builders
    raise (AppError, AWS PackagingError)."""
    arts = build_app(app, dep.cloud, settings=dep.settings)
    for f in dep.all_functions:
        art = (arts[f.unum_name] if f.archive.kind == "function"
               else build_support(app, dep.cloud, f.unum_name, settings=dep.settings))
        f.archive.path, f.archive.sha256 = art.path, art.sha256
    return dep


def _successors(app: App, fn: str) -> list[str]:
    """Unum names `fn` may invoke: its IR Next targets (fan-in targets included), sorted."""
    return sorted({e.target for e in app.workflow.functions[fn].next})


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
        w = ir.wrapper if isinstance(ir.wrapper, dict) else {}
        if w.get("Kind") != "asl" or not w.get("Task"):
            continue
        st = find((w.get("Definition") or {}).get("States", {}), w["Task"]) or {}
        if str(st.get("Resource", "")).endswith(WAIT_FOR_TOKEN):
            out.append(fn)
    return out


def _common(app: App, cloud: str, flags: dict[str, Any]) -> dict[str, Any]:
    rt = app.manifest.runtime
    section = app.manifest.clouds.section(cloud)
    return {"app": app.name, "cloud": cloud, "entry_name": app.workflow.entry.name,
            "max_delivery_attempts": rt.max_delivery_attempts,
            "result_retention_seconds": rt.result_retention_seconds, "history": rt.history,
            "settings": section.resolved(**flags) if section is not None else None,
            "timers": window_timers(app.workflow, getattr(section, "window_seconds", None) or {},
                                    f"{app.root / 'unumctl.yaml'}: clouds.{cloud}.window_seconds")}


def _blob_expiry_days(app: App) -> int:
    retention = Options.from_mapping(app.runtime_options()).retention
    windows = any(e.window is not None for node in app.workflow.functions.values() for e in node.next)
    return retention.window_blob_expiry_days if windows else retention.blob_expiry_days


def _aws(app: App, flags: dict[str, Any]) -> Deployment:
    refuse_suspending_integrations(app)  # .sync nested executions: never a session that waits forever
    common = _common(app, "aws", flags)
    s = common["settings"]
    mpath = app.root / "unumctl.yaml"
    rt = app.manifest.runtime
    env: dict[str, str | Ref] = {ENV_TABLE: Ref("table"), ENV_BUCKET: Ref("bucket"), ENV_BLOB_PREFIX: names.AWS_BLOB_PREFIX,
           ENV_FUNCTION_PREFIX: names.aws_function_prefix(app.name)}
    fns = []
    callbacks = _callback_functions(app)
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        fns.append(Function(name, names.aws_function(app.name, name), AWS_FUNCTION_HANDLER,
                            spec.memory, spec.timeout, dict(env), _successors(app, name),
                            role=Role(role_permissions(),
                                      integrations=integration_statements(app.workflow.functions[name].wrapper)),
                            resumes=list(callbacks)))
    eh_env = {**env, ENV_HISTORY: rt.history, ENV_MAX_ATTEMPTS: str(rt.max_delivery_attempts),
              ENV_RESULT_RETENTION: str(rt.result_retention_seconds)}
    eh = Function(names.AWS_ERROR_HANDLER, names.aws_error_handler(app.name), AWS_ERROR_HANDLER_HANDLER,
                  128, 60, eh_env, [f.unum_name for f in fns], Archive("support"),
                  Role(role_permissions()), is_error_handler=True)
    by_unum = {f.unum_name: f.name for f in fns}
    for f in fns + [eh]:  # what each role may invoke (unumctl/aws/policies.py: a pattern past a few)
        listed = [by_unum[s] for s in f.invokes] + ([] if f.is_error_handler else [eh.name])
        f.role.invoke = invoke_names(app.name, listed, f.is_error_handler)
    for f in fns + [eh]:
        if len(f.name) > names.AWS_FUNCTION_NAME_MAX:
            raise AppError(f"{mpath}: functions.{f.unum_name}: deployed name {f.name!r} is longer than "
                           "Lambda's 64 characters; shorten the app or function name")
        role = f.name + names.AWS_ROLE_SUFFIX
        if len(role) > names.IAM_ROLE_NAME_MAX:
            raise AppError(f"{mpath}: functions.{f.unum_name}: its role name {role!r} is longer than "
                           f"IAM's {names.IAM_ROLE_NAME_MAX} characters; shorten the app or function name")
    retries = s.max_retry_attempts if s.max_retry_attempts is not None else min(2, rt.max_delivery_attempts - 1)
    dep = Deployment(
        **common, functions=fns, error_handler=eh,
        datastore=Datastore(names.store_name(app.name), point_in_time_recovery=s.point_in_time_recovery),
        blobs=BlobStore(names.AWS_BLOB_PREFIX, _blob_expiry_days(app),
                        bucket_prefix=names.aws_bucket_prefix(app.name)),
        runtime=s.runtime, architecture=s.architecture, max_retry_attempts=retries,
        log_retention_days=s.log_retention_days, reserved_concurrency=s.reserved_concurrency,
        kms_key_arn=s.kms_key_arn, region=s.region)
    try:  # every role's inline policy within IAM's limit, before anything is planned
        check_policy_sizes(dep, str(mpath))
    except ValueError as e:
        raise AppError(str(e)) from None
    return dep


def _local(app: App, flags: dict[str, Any]) -> Deployment:
    """Local: worker processes per function, one SQLite datastore `unum.db` and the file blob
    store `blobs/` in the state directory (`<app>/.unum/local`)."""
    fns = [Function(name, name, app.manifest.functions[name].handler, app.manifest.functions[name].memory,
                    app.manifest.functions[name].timeout, {}, _successors(app, name))
           for name in sorted(app.workflow.functions)]
    return Deployment(**_common(app, "local", flags), functions=fns, datastore=Datastore(names.LOCAL_DATASTORE),
                      blobs=BlobStore(names.LOCAL_BLOBS, _blob_expiry_days(app)))


def deployment(app: App, cloud: str, **flags: Any) -> Deployment:
    """`package(app, build(app, cloud, **flags))`: the model with its archives built."""
    return package(app, build(app, cloud, **flags))
