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

from runtime.engine import Options

from .. import registry
from ..build import build_app, build_support
from ..manifest import App
from . import names
from .models import BlobStore, Datastore, Deployment, Function
from .stage import resolve_stage
from .windows import window_timers

__all__ = ["build", "package"]


def build(app: App, cloud: str, **flags: Any) -> Deployment:
    """The deployment model of `app` on `cloud` (see the module docstring). The builder gets
    `flags["stage"]` as a checked str: --stage > the manifest's `stage:` > "dev"
    (deploy/stage.py; ValueError, one line, for a bad name)."""
    flags["stage"] = resolve_stage(flags.get("stage"), app.manifest.stage)
    return registry.part(cloud, "model")(app, flags)


def package(app: App, dep: Deployment) -> Deployment:
    """Build every archive of `dep` (unumctl.build.build_app for the functions, build_support
    for runtime-only ones) and fill the placeholders; returns `dep`. Raises what the builders
    raise (AppError, AWS PackagingError)."""
    arts = build_app(app, dep.cloud, settings=dep.settings)
    for f in dep.all_functions:
        if f.trigger is not None:
            continue  # the entry function's archive (the same Archive object), filled with it
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
    # flags["stage"]: --stage (checked) > the manifest's `stage:` > "dev" (deploy/stage.py)
    return {"app": app.name, "cloud": cloud, "stage": resolve_stage(flags.get("stage"), app.manifest.stage),
            "entry_name": app.workflow.entry.name,
            "max_delivery_attempts": rt.max_delivery_attempts,
            "result_retention_seconds": rt.result_retention_seconds, "history": rt.history,
            "settings": section.resolved(**flags) if section is not None else None,
            "triggers": list(app.triggers),  # unumctl/triggers.py Trigger
            "timers": window_timers(app.workflow, getattr(section, "window_seconds", None) or {},
                                    f"{app.root / 'unumctl.yaml'}: clouds.{cloud}.window_seconds")}


def _blob_expiry_days(app: App) -> int:
    retention = Options.from_mapping(app.runtime_options()).retention
    windows = any(e.window is not None for node in app.workflow.functions.values() for e in node.next)
    return retention.window_blob_expiry_days if windows else retention.blob_expiry_days




def _local(app: App, flags: dict[str, Any]) -> Deployment:
    """Local: worker processes per function, one SQLite datastore `unum.db` and the file blob
    store `blobs/` in the state directory (`<app>/.unum/local`)."""
    fns = [Function(name, name, app.manifest.functions[name].handler, app.manifest.functions[name].memory,
                    app.manifest.functions[name].timeout, {}, _successors(app, name))
           for name in sorted(app.workflow.functions)]
    return Deployment(**_common(app, "local", flags), functions=fns, datastore=Datastore(names.LOCAL_DATASTORE),
                      blobs=BlobStore(names.LOCAL_BLOBS, _blob_expiry_days(app)))
