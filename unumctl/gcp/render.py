"""Render the GCP Terraform root module of an app (Jinja, unumctl/render/gcp/main.tf.j2)
into `<app>/.unum/terraform/gcp/`, with the modules of terraform/modules copied beside it.

Source: Terraform google provider resources google_cloudfunctions2_function,
google_pubsub_topic(_iam_member), google_firestore_database/_field, google_storage_bucket
(_object, _iam_member), google_service_account, google_project_service; seed 001 §4.2.
The plain data model (`GcpDeployment`) is built once from the app and the built bundles;
the template only formats it (the Chalice model in ARCHITECTURE.md §2).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from runtime.engine import Options

from ..build import Artifact, state_dir
from ..manifest import App, AppError
from ..render.hcl import hcl_fragment, hcl_value
from .bundle import ENTRY_POINT

PROVIDER_VERSION = "6.50.0"  # pinned hashicorp/google version (terraform/schema/google-6.50.0.json)
PYTHON_RUNTIME = "python312"
TEMPLATES = Path(__file__).resolve().parent.parent / "render" / "gcp"
MODULES = Path(__file__).resolve().parent.parent.parent / "terraform" / "modules"
MODULE_NAMES = ("gcp-unum-datastore", "gcp-unum-function")


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def function_name(app: str, fn: str) -> str:
    """Cloud Functions name: lower-case `<app>-<fn>` with '_' -> '-', ≤ 63 chars (hash tail
    when longer or when lower-casing/replacing changed it, so names stay distinct)."""
    base = f"{app}-{fn}".lower().replace("_", "-")
    if len(base) > 63 or base != f"{app}-{fn}":
        base = f"{base[:56].rstrip('-')}-{_h(app + '/' + fn)}"
    return base


def service_account_id(app: str, fn: str) -> str:
    """Service account id (6-30 chars of [a-z0-9-], starting with a letter)."""
    base = re.sub(r"[^a-z0-9-]", "-", f"{app}-{fn}".lower())
    return f"{base[:23].rstrip('-')}-{_h(app + '/' + fn)}"


@dataclass
class GcpFunctionModel:
    name: str
    function_name: str
    topic: str
    service_account_id: str
    source_path: str
    sha256: str
    memory: int
    timeout: int
    give_up_seconds: int
    successors: list[str] = field(default_factory=list)


@dataclass
class GcpDeployment:
    """What will exist for one app on GCP (input of the template)."""

    app: str
    project: str | None
    region: str
    database: str
    create_database: bool
    database_location: str
    collection: str
    max_instances: int
    max_delivery_attempts: int
    payload_expiry_days: int
    entry: str
    functions: list[GcpFunctionModel]

    @property
    def edges(self) -> list[dict[str, str]]:
        return [{"source": f.name, "target": s, "resource": f"publish_{f.name}_to_{s}"}
                for f in self.functions for s in f.successors]


def settings(app: App, project: str | None = None, region: str | None = None) -> dict[str, Any]:
    """GCP settings: flags > manifest `clouds.gcp` > standard Google environment variables."""
    cfg = dict(app.manifest.clouds.get("gcp") or {})
    env = os.environ
    return {
        "project": project or cfg.get("project") or env.get("GOOGLE_CLOUD_PROJECT")
        or env.get("CLOUDSDK_CORE_PROJECT") or env.get("GCLOUD_PROJECT"),
        "region": region or cfg.get("region") or env.get("GOOGLE_CLOUD_REGION")
        or env.get("CLOUDSDK_FUNCTIONS_REGION") or "us-central1",
        "database": _typed(cfg, "database", "(default)", str, app),
        "create_database": _typed(cfg, "create_database", True, bool, app),
        "database_location": _typed(cfg, "database_location", "nam5", str, app),
        "max_instances": _typed(cfg, "max_instances", 100, int, app),
        "payload_expiry_days": _typed(cfg, "payload_expiry_days", Options.from_mapping(
            app.runtime_options()).retention.blob_expiry_days, int, app),
    }


def _typed(cfg: dict[str, Any], key: str, default: Any, typ: type, app: App) -> Any:
    """`clouds.gcp.<key>` of exactly type `typ` (YAML true/false for bool: the string 'no' is
    not false), else AppError naming the field."""
    v = cfg.get(key, default)
    if not isinstance(v, typ) or (typ is int and isinstance(v, bool)):
        raise AppError(f"{app.root / 'unumctl.yaml'}: clouds.gcp.{key}: {str(v)[:40]!r} must be "
                       f"{ {bool: 'true or false (unquoted)', int: 'an integer', str: 'a string'}[typ] }")
    return v


def model(app: App, artifacts: dict[str, Artifact], tf_dir: Path, **flags: Any) -> GcpDeployment:
    """Build the deployment model from the app and its built gcp bundles."""
    s = settings(app, flags.get("project"), flags.get("region"))
    attempts = app.manifest.runtime.max_delivery_attempts
    fns = []
    for name in sorted(app.workflow.functions):
        spec = app.manifest.functions[name]
        ir = app.workflow.functions[name]
        art = artifacts[name]
        fns.append(GcpFunctionModel(
            name=name, function_name=function_name(app.name, name), topic=f"{app.name}-{name}",
            service_account_id=service_account_id(app.name, name),
            source_path=os.path.relpath(art.path, tf_dir), sha256=art.sha256,
            memory=max(spec.memory, 128), timeout=spec.timeout,
            give_up_seconds=attempts * (spec.timeout + 600),
            successors=sorted({e.target for e in ir.next})))
    return GcpDeployment(app=app.name, project=s["project"], region=s["region"],
                         database=s["database"], create_database=s["create_database"],
                         database_location=s["database_location"], collection=f"unum-{app.name}",
                         max_instances=s["max_instances"], max_delivery_attempts=attempts,
                         payload_expiry_days=s["payload_expiry_days"],
                         entry=app.workflow.entry.name, functions=fns)


def terraform_dir(app: App) -> Path:
    return state_dir(app) / "terraform" / "gcp"


def render(app: App, artifacts: dict[str, Artifact], **flags: Any) -> tuple[Path, GcpDeployment]:
    """Write main.tf and copy the modules; returns (directory, model). FileNotFoundError
    when terraform/modules is not next to the package (install from a source checkout)."""
    out = terraform_dir(app)
    out.mkdir(parents=True, exist_ok=True)
    dep = model(app, artifacts, out, **flags)
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["hcl"] = hcl_value  # every value goes in as an inert literal (render/hcl.py)
    env.filters["hcl_fragment"] = hcl_fragment
    text = env.get_template("main.tf.j2").render(
        provider_version=PROVIDER_VERSION, python_runtime=PYTHON_RUNTIME, entry_point=ENTRY_POINT,
        edges=dep.edges, name_width=max(len(f.name) for f in dep.functions), **{k: getattr(dep, k) for k in dep.__dataclass_fields__})
    (out / "main.tf").write_text(text)
    for name in MODULE_NAMES:
        src = MODULES / name
        if not src.is_dir():
            raise FileNotFoundError(f"{src}: Terraform module missing; unumctl must run from a "
                                    "source checkout that has terraform/modules")
        dst = out / "modules" / name
        if dst.exists():
            shutil.rmtree(dst)
        # the module's own files only: its README and examples/ are not part of a deployment
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns("examples", "*.md"))
    return out, dep
