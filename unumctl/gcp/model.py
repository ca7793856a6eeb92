"""The deployment model of an app on GCP: gcp's TargetSpec `model` (unumctl/registry.py,
called by unumctl/deploy/appgraph.py `build`).

One Cloud Functions gen2 function per IR function (entry point `handle_cloudevent`,
runtime.gcp.entry), triggered by its own Pub/Sub topic, a service account per function, the
dead-letter topic, the Firestore database and collection and the GCS bucket of large values;
every name from unumctl/gcp/names.py, every setting from `clouds.gcp` (unumctl/gcp/settings.py).
The GCP-only parameters of the deployment are `GcpParams`, held in `Deployment.params`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from runtime.asl.integrations.sdk import ENV_AWS_CREDENTIALS

from ..deploy.appgraph import _blob_expiry_days, _common, _successors
from ..deploy.models import BlobStore, Datastore, Deployment, Function, Ref, Role, Topic
from ..manifest import App, AppError
from . import names

ENTRY_POINT = "handle_cloudevent"  # runtime.gcp.entry; the main.py of unumctl/gcp/bundle.py exports it
MIN_MEMORY = 128
ACK_MARGIN = 600  # s added to each attempt's timeout before redeliveries give up


@dataclass(frozen=True)
class GcpParams:
    """The GCP-only parameters of a deployment (`Deployment.params` on gcp), from the resolved
    `clouds.gcp` section: `project` (None: not known before apply), `max_instances` (per
    function), `build_service_account` (the user's Cloud Build account email; None: the
    app's own, unumctl/gcp/names.py), `dead_letter` (the app's dead-letter topic)."""

    project: str | None
    max_instances: int
    build_service_account: str | None
    dead_letter: Topic


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
    from runtime.asl.integrations import inline_tasks
    for f in app.workflow.functions.values():
        w = f.wrapper or {}
        if w.get("Kind") != "asl" or not isinstance(w.get("Definition"), dict):
            continue
        found = inline_tasks(w["Definition"])
        if found:
            where, res = found[0]
            raise AppError(f"{app.root / 'unumctl.yaml'}: workflow.stepfunctions: {where}.Resource: "
                           f"{res} is an AWS service integration, which the gcp target does not call "
                           "(set clouds.gcp.aws_credentials_secret to call AWS, deploy to aws, or run it on local)")
        for scope, name in w.get("External") or []:  # lambda:invoke of a function outside the app
            raise AppError(f"{app.root / 'unumctl.yaml'}: workflow.stepfunctions: state {name!r}"
                           f"{' (in ' + scope.strip('/') + ')' if scope else ''}: lambda:invoke of a "
                           "function outside the app calls AWS Lambda, which the gcp target does not call "
                           "(add the function to the manifest's functions, set clouds.gcp.aws_credentials_secret, "
                           "deploy to aws, or run it on local)")
        return  # every compiled function carries the whole definition


def calls_aws(app: App, name: str) -> bool:
    """True when compiled function `name` runs an AWS service integration Task or a Lambda
    function outside the app (its wrapper's `Integrations` / `External`)."""
    w = app.workflow.functions[name].wrapper
    return isinstance(w, dict) and bool(w.get("Integrations") or w.get("External"))


def build(app: App, flags: dict[str, Any]) -> Deployment:
    """The deployment model of `app` on gcp (`flags`: the command line's settings, None = not
    given). AppError (one line) for an AWS integration without
    `clouds.gcp.aws_credentials_secret`."""
    common = _common(app, "gcp", flags)
    s = common["settings"]
    if s.aws_credentials_secret is None:  # else the functions that call AWS read the key pair
        _no_aws_integrations(app)
    attempts = app.manifest.runtime.max_delivery_attempts
    fns = []
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        give_up = attempts * (spec.timeout + ACK_MARGIN)
        env: dict[str, str | Ref] = {"UNUM_PROJECT": Ref("project"), "UNUM_DATABASE": Ref("database"),
               "UNUM_COLLECTION": Ref("collection"), "UNUM_BUCKET": Ref("bucket"),
               "UNUM_DEAD_LETTER_TOPIC": Ref("dead_letter_topic"),
               "UNUM_MAX_DELIVERY_ATTEMPTS": str(attempts), "UNUM_GIVE_UP_SECONDS": str(give_up)}
        fns.append(Function(name, names.function_name(app.name, name), ENTRY_POINT,
                            max(spec.memory, MIN_MEMORY), spec.timeout, env, _successors(app, name),
                            role=Role(service_account=names.service_account_id(app.name, name)),
                            topic=Topic(names.topic_id(app.name, name), name),
                            secrets={ENV_AWS_CREDENTIALS: s.aws_credentials_secret}
                            if s.aws_credentials_secret and calls_aws(app, name) else {}))
    expiry = s.payload_expiry_days if s.payload_expiry_days is not None else _blob_expiry_days(app)
    return Deployment(
        **common, functions=fns,
        datastore=Datastore(names.store_name(app.name), database=s.database or names.database_name(app.name),
                            create_database=s.create_database, location=s.database_location),
        blobs=BlobStore(names.payload_prefix(app.name), expiry,
                        bucket_prefix=names.bucket_prefix(app.name)),
        region=s.region,
        params=GcpParams(project=s.project, max_instances=s.max_instances,
                         build_service_account=s.build_service_account,
                         dead_letter=Topic(names.dead_letter_topic(app.name))))
