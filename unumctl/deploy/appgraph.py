"""Building the deployment model of an app (after Chalice's chalice/deploy/appgraph.py).

`build(app, cloud, **flags)` -> models.Deployment: every function, store, topic, role and
the error path of `app` on target `cloud` (a registered target), with names from
deploy/names.py (a target's own: unumctl/<cloud>/names.py) and settings from the typed `clouds.<cloud>` section resolved by the one
precedence rule (deploy/settings.py; `flags`: region, profile, project ... given on the
command line, None = not given). Nothing is built or written: archives are placeholders.
`package(app, dep)` builds the archives (unumctl.build) and fills them in.

Raises AppError (one line naming `<app>/unumctl.yaml` and the field) for names the cloud
would reject (a Lambda name over 64 characters); ValueError for an unknown target.
Which builder a target uses is its TargetSpec's `model` (unumctl/registry.py; AWS's is
unumctl/aws/model.py); this module holds what the builders share (`_common`, `_successors`,
`_blob_expiry_days`) and the builders of the targets not yet in their own package.
"""

from __future__ import annotations

from typing import Any

from runtime.asl.integrations.sdk import ENV_AWS_CREDENTIALS
from runtime.engine import Options

from .. import registry
from ..build import build_app, build_support
from ..manifest import App
from . import names
from .models import BlobStore, Datastore, Deployment, Function, Ref, Role, Topic
from .windows import window_timers
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


def _common(app: App, cloud: str, flags: dict[str, Any]) -> dict[str, Any]:
    rt = app.manifest.runtime
    section = app.manifest.clouds.section(cloud)
    return {"app": app.name, "cloud": cloud, "stage": flags.get("stage") or "dev", "entry_name": app.workflow.entry.name,
            "max_delivery_attempts": rt.max_delivery_attempts,
            "result_retention_seconds": rt.result_retention_seconds, "history": rt.history,
            "settings": section.resolved(**flags) if section is not None else None,
            "timers": window_timers(app.workflow, getattr(section, "window_seconds", None) or {},
                                    f"{app.root / 'unumctl.yaml'}: clouds.{cloud}.window_seconds")}


def _blob_expiry_days(app: App) -> int:
    retention = Options.from_mapping(app.runtime_options()).retention
    windows = any(e.window is not None for node in app.workflow.functions.values() for e in node.next)
    return retention.window_blob_expiry_days if windows else retention.blob_expiry_days


def _gcp(app: App, flags: dict[str, Any]) -> Deployment:
    common = _common(app, "gcp", flags)
    s = common["settings"]
    from ..aws.model import calls_aws, no_aws_integrations  # what of the machine calls AWS
    if s.aws_credentials_secret is None:  # else the functions that call AWS read the key pair
        no_aws_integrations(app)
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


def deployment(app: App, cloud: str, **flags: Any) -> Deployment:
    """`package(app, build(app, cloud, **flags))`: the model with its archives built."""
    return package(app, build(app, cloud, **flags))
