"""Rendering the AWS Terraform root module of an app from Jinja templates.

Input: the deployment model (unumctl/aws/model.py). Output directory (default
`<app>/.unum/terraform/aws/`): `main.tf` (from unumctl/render/aws/main.tf.j2), a copy of the
reusable modules from terraform/modules/ under `modules/`, and `terraform.tfvars.json`
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

from ..aws.model import BLOB_PREFIX, AwsDeployment
from .hcl import hcl_fragment, hcl_identifier, hcl_string, hcl_value

TEMPLATES = Path(__file__).parent / "aws"
MODULES_SRC = Path(__file__).resolve().parents[2] / "terraform" / "modules"
AWS_MODULES = ("aws-unum-datastore", "aws-unum-function")
PROVIDER_VERSION = "~> 5.100"
SERVICES = ("dynamodb", "iam", "lambda", "logs", "s3", "sqs", "sts")
FUNCTION_DDB_ACTIONS = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:DeleteItem",
                        "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem"]
ERROR_HANDLER_DDB_ACTIONS = ["dynamodb:BatchGetItem", "dynamodb:BatchWriteItem",
                             "dynamodb:DeleteItem", "dynamodb:PutItem", "dynamodb:Query",
                             "dynamodb:UpdateItem"]  # UpdateItem: the session index (history)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), trim_blocks=True,
                             lstrip_blocks=True, keep_trailing_newline=True,
                             undefined=jinja2.StrictUndefined, autoescape=False)
    env.filters["hcl"] = hcl_value  # every value goes in as an inert literal (render/hcl.py)
    env.filters["hcl_fragment"] = hcl_fragment
    return env


def render_main(dep: AwsDeployment, outdir: Path, backend: dict[str, Any] | None = None) -> str:
    """The text of main.tf. `backend`: {"type": "s3", "config": {...}} or None (local), as
    checked by aws.model.backend_setting. Raises ValueError for a backend type or key that is
    not an identifier (values are written as quoted literals, render/hcl.py)."""
    fns = []
    for f in dep.functions + [dep.error_handler]:
        extra = None
        if f.is_error_handler:
            env = dep.environment("", "", True)
            extra = "{ " + ", ".join(f'{k} = {hcl_string(env[k])}' for k in sorted(env)
                                     if k.startswith(("UNUM_MAX", "UNUM_RESULT", "UNUM_HISTORY"))) + " }"
        fns.append({
            "unum_name": f.unum_name, "name": f.name, "handler": f.handler, "memory": f.memory,
            "timeout": f.timeout, "is_error_handler": f.is_error_handler, "extra_env": extra,
            "module": "error_handler" if f.is_error_handler else f"fn_{f.unum_name}",
            "zip_rel": os.path.relpath(f.zip_path, outdir).replace(os.sep, "/"),
            "invokes": f.successors if f.is_error_handler else f.successors + [dep.error_handler.name],
            "dynamodb_actions": ERROR_HANDLER_DDB_ACTIONS if f.is_error_handler else FUNCTION_DDB_ACTIONS,
        })
    be = None
    if backend:
        cfg = sorted((backend.get("config") or {}).items())
        bad = [str(x) for x in [backend["type"]] + [k for k, _ in cfg] if not hcl_identifier(x)]
        if bad:
            raise ValueError(f"backend type/key {bad[0][:40]!r} is not an identifier")
        be = {"type": backend["type"], "config": cfg, "width": max((len(k) for k, _ in cfg), default=0)}
    entry_module = next(f["module"] for f in fns if f["name"] == dep.entry)
    width = max(len(f.unum_name) for f in dep.functions)
    return _env().get_template("main.tf.j2").render(
        d=dep, functions=fns, backend=be, services=SERVICES, blob_prefix=BLOB_PREFIX,
        provider_version=PROVIDER_VERSION, entry_module=entry_module, width=width)


def render(dep: AwsDeployment, outdir: Path, tfvars: dict[str, Any],
           backend: dict[str, Any] | None = None) -> Path:
    """Write the root module, the child modules and terraform.tfvars.json into `outdir`."""
    outdir.mkdir(parents=True, exist_ok=True)
    _write(outdir / "main.tf", render_main(dep, outdir, backend))
    for name in AWS_MODULES:
        src = MODULES_SRC / name
        dst = outdir / "modules" / name
        dst.mkdir(parents=True, exist_ok=True)
        names = {f.name for f in src.glob("*.tf")}
        for stale in dst.glob("*.tf"):  # a file the module no longer has (e.g. after a split)
            if stale.name not in names:
                stale.unlink()
        for name in sorted(names):  # the .tf files only: README.md and examples/ stay here
            _write(dst / name, (src / name).read_text())
    _write(outdir / "terraform.tfvars.json", json.dumps(tfvars, indent=2, sort_keys=True) + "\n")
    return outdir


def _write(path: Path, text: str) -> None:
    if not path.exists() or path.read_text() != text:  # keep mtimes of unchanged files
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)




