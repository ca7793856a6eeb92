"""Render the GCP Terraform root module of an app (Jinja, unumctl/gcp/templates/main.tf.j2)
into `<app>/.unum/terraform/gcp/<region>/<stage>/`, with the modules of terraform/modules (render.module_files) copied beside it.

Source: Terraform google provider resources google_cloudfunctions2_function,
google_pubsub_topic(_iam_member), google_firestore_database/_field, google_storage_bucket
(_object, _iam_member), google_service_account, google_project_service,
google_cloud_scheduler_job (ByTime windows); seed 001 §4.2.
Input: the packaged deployment model (unumctl/deploy/, cloud "gcp"); the template only
formats it (the Chalice model in docs/architecture.md §6).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import jinja2

from ..deploy.models import Deployment, Ref
from ..manifest import App
from ..render import module_files
from ..render.hcl import hcl_fragment, hcl_value
from .model import params
from .sources import trigger_views
from .timers import timers as scheduler_jobs

__all__ = ["PROVIDER_VERSION", "TIME_VERSION", "TEMPLATES", "render", "terraform_dir"]

PROVIDER_VERSION = "6.50.0"  # pinned hashicorp/google and google-beta version (unumctl/gcp/checks/schema/google[-beta]-6.50.0.json)
# pinned hashicorp/time (time_sleep: the propagation waits), the provider of the npm package
# @cdktf/provider-time 11.0.1 (`npm view @cdktf/provider-time cdktf`)
TIME_VERSION = "0.13.1"
PYTHON_RUNTIME = "python312"
TEMPLATES = Path(__file__).resolve().parent / "templates"  # package data (pyproject.toml)
MODULE_NAMES = ("gcp-unum-datastore", "gcp-unum-function")
# the Terraform expression of each value the model only knows by name (models.Ref)
REFS = {"project": "module.datastore.project", "database": "module.datastore.database",
        "collection": "module.datastore.collection", "bucket": "module.datastore.bucket",
        "dead_letter_topic": "module.datastore.dead_letter_topic"}


def _expr(v: str | Ref) -> str:
    return REFS[v.name] if isinstance(v, Ref) else hcl_value(v)


def terraform_dir(app: App, dep: Deployment) -> Path:
    """Where the root module of `app`'s deployment `dep` is rendered: its region and stage's
    `<app>/.unum/terraform/gcp/<region>/<stage>` (unumctl/deploy/statepath.py)."""
    from ..deploy.statepath import terraform_dir as keyed
    return keyed(app, "gcp", dep.region or "", dep.stage)


def render(app: App, dep: Deployment, adopt_database: str | None = None) -> tuple[Path, Deployment]:
    """Write main.tf for the packaged model `dep` (deploy.appgraph.package) and copy the
    modules' .tf files (render.module_files); returns (directory, dep). `adopt_database`:
    the id `projects/<p>/databases/<d>` of the Firestore database an earlier destroy left,
    rendered as an `import` block into the datastore module's database (unumctl/gcp/adopt.py).
    FileNotFoundError when the installed package lacks a module; ValueError (one line) for a
    ByTime window that Cloud Scheduler cannot tick (unumctl/gcp/timers.py)."""
    out = terraform_dir(app, dep)
    out.mkdir(parents=True, exist_ok=True)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["hcl"] = hcl_value  # every value goes in as an inert literal (render/hcl.py)
    env.filters["hcl_fragment"] = hcl_fragment
    fns = [{"name": f.unum_name, "function_name": f.name, "topic": f.topic.name if f.topic else None,
            "service_account_id": f.role.service_account, "sha256": f.zip_sha256,
            "source_path": os.path.relpath(f.zip_path, out), "memory": f.memory, "timeout": f.timeout,
            "handler": f.handler, "environment": [(k, _expr(v)) for k, v in f.environment.items()],
            "env_width": max((len(k) for k in f.environment), default=0), "secrets": sorted(f.secrets.items())}
           for f in dep.functions]
    p = params(dep)
    if p.runtime_service_account:  # one account: one grant per called topic, never two alike
        called = sorted({b for _, b in dep.edges})
        edges = [{"target": b, "resource": f"publish_to_{b}",
                  "member": "module.datastore.runtime_service_account_email"} for b in called]
    else:
        edges = [{"target": b, "resource": f"publish_{a}_to_{b}",
                  "member": f"module.fn_{a}.service_account_email"} for a, b in dep.edges]
    secrets = sorted({kv for f in dep.functions for kv in f.secrets.items()})
    text = env.get_template("main.tf.j2").render(
        provider_version=PROVIDER_VERSION, time_version=TIME_VERSION, python_runtime=PYTHON_RUNTIME,
        d=dep, functions=fns, p=p, runtime_secrets=secrets, adopt_database=adopt_database,
        edges=edges, name_width=max(len(f.unum_name) for f in dep.functions),
        timers=scheduler_jobs(dep.app, params(dep).stage, dep.timers),
        scheduler_api=bool(dep.timers) or any(t.type == "schedule" for t in dep.triggers))
    (out / "main.tf").write_text(text)
    if dep.triggers:  # each trigger's function and source (unumctl/gcp/sources.py)
        entry = next(f for f in fns if f["name"] == dep.entry_name)
        views = trigger_views(dep, entry, str(app.root / "unumctl.yaml"))
        width = max(len(hcl_value(t["name"])) for t in views)
        for t in views:  # the output's keys, aligned as `terraform fmt` aligns them
            t["key"] = hcl_value(t["name"]).ljust(width)
        (out / "triggers.tf").write_text(env.get_template("triggers.tf.j2").render(
            d=dep, entry=entry, triggers=views, python_runtime=PYTHON_RUNTIME,
            storage=any(t["type"] == "storage" for t in views)))
    elif (out / "triggers.tf").is_file():  # the app's triggers were removed
        (out / "triggers.tf").unlink()
    for name in MODULE_NAMES:
        files = module_files(name)  # the module's own .tf files: no README, no examples/
        dst = out / "modules" / name
        if dst.exists():
            shutil.rmtree(dst)
        dst.mkdir(parents=True)
        for fname, text in files.items():
            (dst / fname).write_text(text)
    return out, dep
