"""Building the deployment model of an app (after Chalice's chalice/deploy/appgraph.py).

`build(app, cloud, **flags)` -> models.Deployment: every function, store, topic, role and
the error path of `app` on target `cloud` ("aws", "gcp", "local"), with names from
deploy/names.py and settings from the typed `clouds.<cloud>` section resolved by the one
precedence rule (deploy/settings.py; `flags`: region, profile, project ... given on the
command line, None = not given). Nothing is built or written: archives are placeholders.
`package(app, dep)` builds the archives (unumctl.build) and fills them in.

Raises AppError (one line naming `<app>/unumctl.yaml` and the field) for names the cloud
would reject (a Lambda name over 64 characters); ValueError for an unknown target.
Which builder a target uses is its TargetSpec's `model` (unumctl/registry.py).
"""

from __future__ import annotations

from typing import Any

from runtime.asl.integrations.sdk import ENV_AWS_CREDENTIALS
from runtime.asl.machine import WAIT_FOR_TOKEN
from runtime.aws.iam import integration_statements, role_permissions
from runtime.aws import (ENV_BLOB_PREFIX, ENV_BUCKET, ENV_FUNCTION_PREFIX, ENV_HISTORY, ENV_MAX_ATTEMPTS,
                         ENV_RESULT_RETENTION, ENV_TABLE)
from runtime.engine import Options

from .. import registry
from ..build import build_app, build_support
from ..manifest import App, AppError
from . import names
from .models import Archive, BlobStore, Datastore, Deployment, Function, Ref, Role, Topic
from .windows import window_timers
from ..aws.policies import check_policy_sizes, invoke_names
from ..aws.unsupported import refuse_suspending_integrations

AWS_FUNCTION_HANDLER = "unum_entry.lambda_handler"
AWS_ERROR_HANDLER_HANDLER = "runtime.aws.entry.error_handler"
GCP_ENTRY_POINT = "handle_cloudevent"  # runtime.gcp.entry; the main.py of unumctl/gcp/bundle.py exports it
GCP_MIN_MEMORY = 128
GCP_ACK_MARGIN = 600  # s added to each attempt's timeout before redeliveries give up


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
        w = ir.asl
        if w is None or not w.task:
            continue
        st = find(w.definition.get("States", {}), w.task) or {}
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


def _no_aws_integrations(app: App) -> None:
    """Without `clouds.gcp.aws_credentials_secret` the gcp target does not call AWS: an AWS
    service integration Task is refused naming the state (runtime.asl.integrations;
    docs/stepfunctions.md "Service integrations")."""
    from runtime.asl.integrations import inline_tasks
    for f in app.workflow.functions.values():
        w = f.asl
        if w is None:
            continue
        found = inline_tasks(w.definition)
        if found:
            where, res = found[0]
            raise AppError(f"{app.root / 'unumctl.yaml'}: workflow.stepfunctions: {where}.Resource: "
                           f"{res} is an AWS service integration, which the gcp target does not call "
                           "(set clouds.gcp.aws_credentials_secret to call AWS, deploy to aws, or run it on local)")
        for scope, name in w.external:  # lambda:invoke of a function outside the app
            raise AppError(f"{app.root / 'unumctl.yaml'}: workflow.stepfunctions: state {name!r}"
                           f"{' (in ' + scope.strip('/') + ')' if scope else ''}: lambda:invoke of a "
                           "function outside the app calls AWS Lambda, which the gcp target does not call "
                           "(add the function to the manifest's functions, set clouds.gcp.aws_credentials_secret, "
                           "deploy to aws, or run it on local)")
        return  # every compiled function carries the whole definition


def calls_aws(app: App, name: str) -> bool:
    """True when compiled function `name` runs an AWS service integration Task or a Lambda
    function outside the app (its wrapper's `Integrations` / `External`)."""
    w = app.workflow.functions[name].asl
    return w is not None and bool(w.integrations or w.external)


def _gcp(app: App, flags: dict[str, Any]) -> Deployment:
    common = _common(app, "gcp", flags)
    s = common["settings"]
    if s.aws_credentials_secret is None:  # else the functions that call AWS read the key pair
        _no_aws_integrations(app)
    attempts = app.manifest.runtime.max_delivery_attempts
    fns = []
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        give_up = attempts * (spec.timeout + GCP_ACK_MARGIN)
        env: dict[str, str | Ref] = {"UNUM_PROJECT": Ref("project"), "UNUM_DATABASE": Ref("database"),
               "UNUM_COLLECTION": Ref("collection"), "UNUM_BUCKET": Ref("bucket"),
               "UNUM_DEAD_LETTER_TOPIC": Ref("dead_letter_topic"),
               "UNUM_MAX_DELIVERY_ATTEMPTS": str(attempts), "UNUM_GIVE_UP_SECONDS": str(give_up)}
        fns.append(Function(name, names.gcp_function(app.name, name), GCP_ENTRY_POINT,
                            max(spec.memory, GCP_MIN_MEMORY), spec.timeout, env, _successors(app, name),
                            role=Role(service_account=names.gcp_service_account(app.name, name)),
                            topic=Topic(names.topic_id(app.name, name), name), give_up_seconds=give_up,
                            secrets={ENV_AWS_CREDENTIALS: s.aws_credentials_secret}
                            if s.aws_credentials_secret and calls_aws(app, name) else {}))
    expiry = s.payload_expiry_days if s.payload_expiry_days is not None else _blob_expiry_days(app)
    return Deployment(
        **common, functions=fns, dead_letter=Topic(names.gcp_dead_letter_topic(app.name)),
        datastore=Datastore(names.store_name(app.name), database=s.database or names.database_name(app.name),
                            create_database=s.create_database, location=s.database_location),
        blobs=BlobStore(names.payload_prefix(app.name), expiry,
                        bucket_prefix=names.gcp_bucket_prefix(app.name)),
        project=s.project, region=s.region, max_instances=s.max_instances,
        build_service_account=s.build_service_account)


def _local(app: App, flags: dict[str, Any]) -> Deployment:
    """Local: worker processes per function, one SQLite datastore `unum.db` and the file blob
    store `blobs/` in the state directory (`<app>/.unum/local`)."""
    fns = [Function(name, name, app.manifest.functions[name].handler, app.manifest.functions[name].memory,
                    app.manifest.functions[name].timeout, {}, _successors(app, name))
           for name in sorted(app.workflow.functions)]
    return Deployment(**_common(app, "local", flags), functions=fns, datastore=Datastore(names.LOCAL_DATASTORE),
                      blobs=BlobStore(names.LOCAL_BLOBS, _blob_expiry_days(app)))
