"""The deployment model of an app on GCP: gcp's TargetSpec `model` (unumctl/registry.py,
called by unumctl/deploy/appgraph.py `build`).

One Cloud Functions gen2 function per IR function (entry point `handle_cloudevent`,
runtime.gcp.entry), triggered by its own Pub/Sub topic, one runtime service account for the
deployment (or one per function: `clouds.gcp.service_accounts`), the dead-letter topic, the Firestore database and collection and the GCS bucket of large values;
every name from unumctl/gcp/names.py, every setting from `clouds.gcp` (unumctl/gcp/settings.py).
The GCP-only parameters of the deployment are `GcpParams`, held in `Deployment.params`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from runtime.asl.integrations.sdk import ENV_AWS_CREDENTIALS

from ..deploy.appgraph import _blob_expiry_days, _common, _successors
from ..deploy.models import BlobStore, Datastore, Deployment, Function, Ref, Role, Topic
from ..manifest import App, AppError
from .sources import check as check_triggers
from . import names

__all__ = ["ENTRY_POINT", "build", "calls_aws", "params", "service_account_ids", "topics"]

ENTRY_POINT = "handle_cloudevent"  # runtime.gcp.entry; the main.py of unumctl/gcp/bundle.py exports it
MIN_MEMORY = 128
ACK_MARGIN = 600  # s added to each attempt's timeout before redeliveries give up


REGION = re.compile(r"[a-z][a-z0-9-]*[0-9]")   # a Google Cloud region id, e.g. us-central1
# every member of a project's allow policy, in all its bindings (each runtime account is one in
# roles/datastore.user): "All members (including Google groups) in all bindings within a
# policy 1,500"; and "Number of service accounts 100" per project by default (IAM, "Quotas
# and limits", https://cloud.google.com/iam/quotas)
POLICY_MEMBERS_MAX = 1500
PROJECT_SERVICE_ACCOUNTS_DEFAULT = 100


@dataclass(frozen=True)
class GcpParams:
    """The GCP-only parameters of a deployment (`Deployment.params` on gcp), from the resolved
    `clouds.gcp` section and the stage: `project` (None: not known before apply),
    `max_instances` (per function), `build_service_account` (the user's Cloud Build account
    email; None: the deployment's own, `build_service_account_id`), `dead_letter` (the
    deployment's dead-letter topic) and `dead_letter_subscription`, `stage`, `topic_prefix`
    (UNUM_TOPIC_PREFIX), `service_accounts` ("per-app" | "per-function") and
    `runtime_service_account` (the one account id of per-app, else None)."""

    project: str | None
    max_instances: int
    build_service_account: str | None
    dead_letter: Topic
    stage: str = "dev"
    topic_prefix: str = ""
    dead_letter_subscription: str = ""
    build_service_account_id: str = ""
    service_accounts: str = "per-app"
    runtime_service_account: str | None = None


def service_account_ids(dep: Deployment) -> list[str]:
    """The service account ids a gcp deployment creates, sorted, no duplicates: the runtime
    accounts (one, or one per function) and the Cloud Build account unless the user gives
    their own."""
    p = params(dep)
    ids = {f.role.service_account for f in dep.functions if f.role.service_account}
    if p.build_service_account is None:
        ids.add(p.build_service_account_id)
    return sorted(ids)


def params(dep: Deployment) -> GcpParams:
    """`dep.params` of a gcp deployment; TypeError when `dep` is not one."""
    if not isinstance(dep.params, GcpParams):
        raise TypeError(f"{dep.app}: not a gcp deployment model (cloud {dep.cloud!r})")
    return dep.params


def topics(dep: Deployment) -> list[Topic]:
    """Every topic of a gcp deployment: one per function, then the dead-letter topic."""
    return [f.topic for f in dep.functions if f.topic] + [params(dep).dead_letter]


def _no_aws_integrations(app: App) -> None:
    """Without `clouds.gcp.aws_credentials_secret` the gcp target does not call AWS: an AWS
    service integration Task is refused naming the state (runtime.asl.integrations;
    docs/stepfunctions.md "Service integrations")."""
    from runtime.asl.integrations.registry import inline_tasks
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


def _check_names(dep: Deployment, mpath: str) -> None:
    """AppError (one line naming the resource, its name and the limit) for a name over its
    documented limit (unumctl/gcp/names.py); the budget of service accounts."""
    p = params(dep)
    for f in dep.functions:
        assert f.topic is not None
        if len(f.topic.name) > names.TOPIC_ID_MAX:
            raise AppError(f"{mpath}: functions.{f.unum_name}: its Pub/Sub topic {f.topic.name[:60]!r}... is "
                           f"{len(f.topic.name)} characters, over Pub/Sub's {names.TOPIC_ID_MAX}; shorten the "
                           "app, stage or function name")
        if len(f.name) > names.FUNCTION_ID_MAX:  # names.function_name hashes: a bug if it happens
            raise AppError(f"{mpath}: functions.{f.unum_name}: Cloud Functions name {f.name!r} is over "
                           f"{names.FUNCTION_ID_MAX} characters")
    for sa in service_account_ids(dep):
        if not (names.SERVICE_ACCOUNT_ID_MIN <= len(sa) <= names.SERVICE_ACCOUNT_ID_MAX
                and names.SERVICE_ACCOUNT_ID.fullmatch(sa)):
            raise AppError(f"{mpath}: service account id {sa!r} is not 6-30 characters of a-z, 0-9 and '-'")
    db = dep.datastore.database or ""
    if db != "(default)" and not 4 <= len(db) <= names.DATABASE_ID_MAX:
        raise AppError(f"{mpath}: clouds.gcp.database: Firestore database id {db!r} is not 4-63 characters")
    if dep.blobs and dep.blobs.bucket_prefix and len(dep.blobs.bucket_prefix) > names.BUCKET_PREFIX_MAX:
        raise AppError(f"{mpath}: bucket prefix {dep.blobs.bucket_prefix!r} leaves no room within "
                       f"Cloud Storage's {names.BUCKET_NAME_MAX} characters")
    accounts = service_account_ids(dep)
    budget = dep.settings.max_service_accounts
    if len(accounts) > budget:
        raise AppError(f"{mpath}: clouds.gcp: this deployment would create {len(accounts)} service accounts "
                       f"({p.service_accounts}), over clouds.gcp.max_service_accounts {budget} (a project holds "
                       f"{PROJECT_SERVICE_ACCOUNTS_DEFAULT} by default, and its policy {POLICY_MEMBERS_MAX} "
                       "members); set clouds.gcp.service_accounts: per-app or raise max_service_accounts")


def build(app: App, flags: dict[str, Any]) -> Deployment:
    """The deployment model of `app` on gcp (`flags`: the command line's settings, None = not
    given, and `stage`, CONTRACT §1, default "dev"). AppError (one line) for an AWS
    integration without `clouds.gcp.aws_credentials_secret`, a name over its documented limit
    or more service accounts than `clouds.gcp.max_service_accounts`."""
    mpath = str(app.root / "unumctl.yaml")
    common = _common(app, "gcp", flags)  # its "stage": checked by unumctl/deploy/stage.py
    stage, s = common["stage"], common["settings"]
    if not REGION.fullmatch(s.region):
        raise AppError(f"{mpath}: clouds.gcp.region: {s.region[:40]!r} is not a region id (e.g. us-central1)")
    if s.aws_credentials_secret is None:  # else the functions that call AWS read the key pair
        _no_aws_integrations(app)
    region, attempts = s.region, app.manifest.runtime.max_delivery_attempts
    prefix = names.topic_prefix(app.name, stage, region)
    shared = names.runtime_service_account_id(app.name, stage, region) if s.service_accounts == "per-app" else None
    fns = []
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        give_up = attempts * (spec.timeout + ACK_MARGIN)
        env: dict[str, str | Ref] = {"UNUM_PROJECT": Ref("project"), "UNUM_DATABASE": Ref("database"),
               "UNUM_COLLECTION": Ref("collection"), "UNUM_BUCKET": Ref("bucket"),
               "UNUM_DEAD_LETTER_TOPIC": Ref("dead_letter_topic"), "UNUM_TOPIC_PREFIX": prefix,
               "UNUM_MAX_DELIVERY_ATTEMPTS": str(attempts), "UNUM_GIVE_UP_SECONDS": str(give_up)}
        fns.append(Function(name, names.function_name(app.name, stage, name), ENTRY_POINT,
                            max(spec.memory, MIN_MEMORY), spec.timeout, env, _successors(app, name),
                            role=Role(service_account=shared or names.service_account_id(app.name, stage, region, name)),
                            topic=Topic(names.topic_id(app.name, name, prefix), name),
                            secrets={ENV_AWS_CREDENTIALS: s.aws_credentials_secret}
                            if s.aws_credentials_secret and calls_aws(app, name) else {}))
    expiry = s.payload_expiry_days if s.payload_expiry_days is not None else _blob_expiry_days(app)
    dep = Deployment(
        **common, functions=fns,
        datastore=Datastore(names.collection(app.name, stage, region),
                            database=s.database or names.database_name(app.name, stage, region),
                            create_database=s.create_database, location=s.database_location),
        blobs=BlobStore(names.payload_prefix(app.name), expiry,
                        bucket_prefix=names.bucket_prefix(app.name, stage, region)),
        region=region,
        params=GcpParams(project=s.project, max_instances=s.max_instances,
                         build_service_account=s.build_service_account,
                         dead_letter=Topic(names.dead_letter_topic(app.name, stage, region)),
                         stage=stage, topic_prefix=prefix,
                         dead_letter_subscription=names.dead_letter_subscription(app.name, stage, region),
                         build_service_account_id=names.build_service_account_id(app.name, stage, region),
                         service_accounts=s.service_accounts, runtime_service_account=shared))
    _check_names(dep, mpath)
    try:  # a trigger gcp cannot run (eventbridge, a schedule with no cron equivalent)
        check_triggers(dep, mpath)
    except ValueError as e:
        raise AppError(str(e)) from None
    return dep
