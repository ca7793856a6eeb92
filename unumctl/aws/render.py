"""Rendering the AWS Terraform root module of an app from Jinja templates.

Input: the packaged deployment model (unumctl/deploy/, cloud "aws"). Output directory (default
`<app>/.unum/terraform/aws/`): `main.tf` (from unumctl/aws/templates/main.tf.j2), a copy of the
reusable modules (terraform/modules/, package data in a wheel, read by render.module_files) under `modules/`, and `terraform.tfvars.json`
(region, profile, endpoints, path-style S3). Terraform concepts: root module, child modules,
backend (local state `terraform.tfstate` in that directory unless `backend` is given).
Rendering is deterministic: the same model gives byte-identical files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jinja2

from ..deploy.models import Deployment, Function, Ref
from .settings import AWS_SERVICES as SERVICES
from ..render import module_files
from . import names
from .sources import trigger_views
from .timers import schedules
from ..render.hcl import hcl_fragment, hcl_identifier, hcl_value
from ..safefile import write_atomic

__all__ = ["STATE_KEYS", "keyed_backend_config", "render", "render_main", "render_triggers"]

TEMPLATES = Path(__file__).parent / "templates"
AWS_MODULES = ("aws-unum-datastore", "aws-unum-function")
PROVIDER_VERSION = "~> 5.100"
# the Terraform expression of each value the model only knows by name (models.Ref)
REFS = {"table": "module.datastore.table_name", "bucket": "module.datastore.bucket_name"}


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters["hcl"] = hcl_value  # every value goes in as an inert literal (render/hcl.py)
    env.filters["hcl_fragment"] = hcl_fragment
    return env


def _expr(v: str | Ref) -> str:
    return REFS[v.name] if isinstance(v, Ref) else hcl_value(v)


def environments(dep: Deployment) -> tuple[list[tuple[str, str]], dict[str, str | None]]:
    """The functions' environments as Terraform: (the variables every function shares, as
    [(name, expression)] for `local.environment`; function name -> an HCL object of its own
    extra variables, or None)."""
    fns = dep.all_functions
    shared = [(k, v) for k, v in fns[0].environment.items()
              if all(f.environment.get(k) == v for f in fns)]
    keys = {k for k, _ in shared}
    extra: dict[str, str | None] = {}
    for f in fns:
        own = sorted((k, v) for k, v in f.environment.items() if k not in keys)
        extra[f.name] = ("{ " + ", ".join(f"{k} = {_expr(v)}" for k, v in own) + " }") if own else None
    return [(k, _expr(v)) for k, v in shared], extra


def _function(dep: Deployment, f: Function, outdir: Path, extra_env: str | None,
              via_s3: bool = False) -> dict[str, Any]:
    invokes = f.role.invoke  # names, or the stage's pattern `<app>-<stage>_*` (unumctl/aws/policies.py)
    return {"unum_name": f.unum_name, "name": f.name, "handler": f.handler, "memory": f.memory,
            "timeout": f.timeout, "is_error_handler": f.is_error_handler, "extra_env": extra_env,
            "module": ("error_handler" if f.is_error_handler else f"trigger_{f.trigger}" if f.trigger
                       else f"fn_{f.unum_name}"),
            "comment": ("app error handler: on-failure destination of every function" if f.is_error_handler
                        else f"trigger {f.trigger}: starts sessions of the entry" if f.trigger
                        else f"Unum function {f.unum_name}"),
            # asynchronous invocations that failed every retry: the error handler's SQS queue,
            # the error handler (workflow functions), none (a trigger's source keeps its own:
            # SQS redrive to its DLQ, S3 / EventBridge / Scheduler retries)
            "on_failure": ("module.datastore.failure_queue_arn" if f.is_error_handler else "null" if f.trigger
                           else "module.error_handler.arn"),
            "role_name": f.role.name, "zip_rel": os.path.relpath(f.zip_path, outdir).replace(os.sep, "/"),
            "invokes": invokes, "permissions": f.role.permissions,
            "permissions_width": max((len(r) for r in f.role.permissions), default=0), "via_s3": via_s3,
            "integrations": f.role.integrations, "trigger": f.trigger}


# the backend settings that name where a state lives (Terraform's backend pages: s3 `key`,
# https://developer.hashicorp.com/terraform/language/backend/s3; azurerm `key`; gcs `prefix`,
# https://developer.hashicorp.com/terraform/language/backend/gcs; consul and local `path`;
# cos and oss `key`)
STATE_KEYS = {"s3": "key", "azurerm": "key", "cos": "key", "oss": "key", "gcs": "prefix",
              "consul": "path", "local": "path"}


def keyed_backend_config(backend: dict[str, Any], region: str | None, stage: str) -> dict[str, Any]:
    """The backend's `config` with the setting that names the state (STATE_KEYS) keyed by
    region and stage: `unum/wordcount.tfstate` -> `unum/<region>/<stage>/wordcount.tfstate`,
    so that two regions or stages of one app never share a state (one state per (cloud,
    region, stage), as the local backend's directories: unumctl/deploy/statepath.py).
    ValueError (one line) for a backend whose type names its state in no setting this knows
    (the user cannot key it per stage, and a shared state would plan one stage's resources as
    gone when another is applied)."""
    cfg = dict(backend.get("config") or {})
    key = STATE_KEYS.get(str(backend.get("type")))
    if key is None:
        raise ValueError(f"clouds.aws.backend.type {str(backend.get('type'))[:40]!r}: unumctl keys the state "
                         f"per region and stage only for {', '.join(sorted(STATE_KEYS))}; use one of those")
    value = str(cfg.get(key) or "unum.tfstate")
    head, sep, tail = value.rpartition("/")
    cfg[key] = f"{head}{sep}{region or 'default'}/{stage}/{tail}"
    return cfg


def render_main(dep: Deployment, outdir: Path, backend: dict[str, Any] | None = None,
                via_s3: set[str] | frozenset[str] = frozenset()) -> str:
    """The text of main.tf for a packaged AWS model (deploy.appgraph.package). `backend`:
    {"type": "s3", "config": {...}} or None (local), as checked by deploy.settings.Backend.
    `via_s3`: deployed names of the functions whose archive goes through the app's bucket
    (unumctl/aws/archive_limits.py), the others are uploaded directly.
    Raises ValueError for a backend type or key that is not an identifier (values are
    written as quoted literals, render/hcl.py), or a ByTime window EventBridge Scheduler
    cannot tick (aws/timers.py)."""
    shared, extra = environments(dep)
    fns = [_function(dep, f, outdir, extra[f.name], f.name in via_s3) for f in dep.all_functions]
    assert dep.blobs is not None  # every aws deployment has its bucket
    be = None
    if backend:
        cfg = sorted(keyed_backend_config(backend, dep.region, dep.stage).items())
        bad = [str(x) for x in [backend["type"]] + [k for k, _ in cfg] if not hcl_identifier(x)]
        if bad:
            raise ValueError(f"backend type/key {bad[0][:40]!r} is not an identifier")
        be = {"type": backend["type"], "config": cfg, "width": max((len(k) for k, _ in cfg), default=0)}
    entry_module = next(f["module"] for f in fns if f["name"] == dep.entry)
    timers = schedules(dep)  # ValueError: a ByTime EventBridge Scheduler cannot tick
    width = max(len(f.unum_name) for f in dep.functions)
    return _env().get_template("main.tf.j2").render(
        d=dep, p=dep.params, functions=fns, backend=be, services=SERVICES, svc_width=max(len(s) for s in SERVICES),
        blob_prefix=dep.blobs.prefix,
        provider_version=PROVIDER_VERSION, entry_module=entry_module, width=width,
        environment=shared, env_width=max(len(k) for k, _ in shared), timers=timers,
        timer_role=names.scheduler_role(dep.app, dep.stage, dep.region))


def render_triggers(dep: Deployment) -> str | None:
    """The text of triggers.tf (unumctl/aws/templates/triggers.tf.j2: each trigger's source,
    unumctl/aws/sources.py), or None for an app without triggers."""
    if not dep.triggers:
        return None
    views = trigger_views(dep)
    width = max(len(hcl_value(t["name"])) for t in views)
    for t in views:  # the output's keys, aligned as `terraform fmt` aligns them
        t["key"] = hcl_value(t["name"]).ljust(width)
    return _env().get_template("triggers.tf.j2").render(
        d=dep, triggers=views, schedules=[t for t in views if t["type"] == "schedule"],
        scheduler_role=names.trigger_scheduler_role(dep.app, dep.stage, dep.region))


def render(dep: Deployment, outdir: Path, tfvars: dict[str, Any],
           backend: dict[str, Any] | None = None,
           via_s3: set[str] | frozenset[str] = frozenset()) -> Path:
    """Write the root module, the child modules and terraform.tfvars.json into `outdir`
    (`via_s3` as in render_main)."""
    outdir.mkdir(parents=True, exist_ok=True)
    _write(outdir / "main.tf", render_main(dep, outdir, backend, via_s3))
    triggers = render_triggers(dep)
    if triggers is not None:
        _write(outdir / "triggers.tf", triggers)
    elif (outdir / "triggers.tf").is_file():  # the app's triggers were removed
        (outdir / "triggers.tf").unlink()
    for name in AWS_MODULES:
        files = module_files(name)  # the .tf files only: README.md and examples/ stay behind
        dst = outdir / "modules" / name
        dst.mkdir(parents=True, exist_ok=True)
        for stale in dst.glob("*.tf"):  # a file the module no longer has (e.g. after a split)
            if stale.name not in files:
                stale.unlink()
        for fname, text in files.items():
            _write(dst / fname, text)
    _write(outdir / "terraform.tfvars.json", json.dumps(tfvars, indent=2, sort_keys=True) + "\n")
    return outdir


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:  # keep mtimes of unchanged files
        write_atomic(path, text, mode=0o644)  # a link planted at NAME.tmp is never followed




