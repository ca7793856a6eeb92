"""Saved plans (`unumctl plan --out FILE`, `unumctl apply APP --plan FILE`) and the Terraform
arguments `--var KEY=VALUE` / `--target ADDRESS`, checked before they reach Terraform.

FILE is Terraform's own saved plan (`terraform plan -out=FILE`; `terraform show FILE` reads
it), applied with `terraform apply FILE`, which applies exactly the reviewed changes and
refuses with "Saved plan is stale" when the state changed since the plan
(https://developer.hashicorp.com/terraform/cli/commands/apply#automatic-plan-mode vs
"Saved plan mode"). Terraform does not know that the Lambda archives a plan names by path
(and their `source_code_hash`) were rebuilt, or that the rendered configuration changed, so
a record beside FILE (`FILE.unumctl.json`, RECORD_SUFFIX) holds the SHA-256 of the plan
file, of the rendered configuration and of every archive; `apply --plan` renders again and
refuses when any of them differs.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, Iterable

from .deploy.statepath import key_of
from .safefile import load_json, read_bounded, write_atomic
from .targets import TargetError

__all__ = ["check_fresh", "check_out_path", "check_targets", "check_vars", "config_digest", "declarations",
           "read_record", "record_path", "write_record"]

RECORD_SUFFIX = ".unumctl.json"
RECORD_FORMAT = 1
RECORD_MAX_BYTES = 4 * 1024 * 1024  # digests of a configuration and its archives: a few KB

_NAME = r"[A-Za-z_][A-Za-z0-9_-]*"
_KEY = r'\[(?:[0-9]+|"[^"\\\n]*")\]'
_MODULE = rf"module\.{_NAME}(?:{_KEY})?"
_RESOURCE = rf"(?:data\.)?{_NAME}\.{_NAME}(?:{_KEY})?"
# a resource address (https://developer.hashicorp.com/terraform/cli/state/resource-addressing):
# module path, then a resource, or a module path alone
ADDRESS_RE = re.compile(rf"(?:{_MODULE}\.)*(?:{_RESOURCE}|{_MODULE})")
VAR_NAME_RE = re.compile(_NAME)
_DECL_RE = re.compile(r'^(variable|module|resource|data)\s+"([^"]+)"(?:\s+"([^"]+)")?', re.M)


def declarations(root_tf: str) -> dict[str, set[str]]:
    """{"variable": {name}, "module": {name}, "resource": {"TYPE.NAME"}, "data": {"data.TYPE.NAME"}}
    declared at the top level of a root module's text (the rendered main.tf)."""
    out: dict[str, set[str]] = {"variable": set(), "module": set(), "resource": set(), "data": set()}
    for kind, a, b in _DECL_RE.findall(root_tf):
        out[kind].add(a if kind in ("variable", "module") else f"{a}.{b}" if kind == "resource" else f"data.{a}.{b}")
    return out


def check_vars(pairs: Iterable[str], declared: dict[str, set[str]]) -> dict[str, str]:
    """`--var KEY=VALUE` options -> {KEY: VALUE}. ValueError (one line) when one has no `=`,
    KEY is not a variable the root module declares, VALUE holds a line break, or KEY repeats.
    Terraform reads VALUE as a string for a string variable, as HCL for a map or list
    (https://developer.hashicorp.com/terraform/language/values/variables#variables-on-the-command-line)."""
    out: dict[str, str] = {}
    known = sorted(declared["variable"])
    for p in pairs:
        key, sep, value = p.partition("=")
        if not sep or not VAR_NAME_RE.fullmatch(key):
            raise ValueError(f"--var {p!r}: expected KEY=VALUE with KEY a Terraform variable name "
                             f"(e.g. --var region=eu-west-1)")
        if key not in declared["variable"]:
            raise ValueError(f"--var {key}: not a variable of the rendered root module (known: {', '.join(known)})")
        if "\n" in value or "\r" in value or "\0" in value:
            raise ValueError(f"--var {key}: the value must be one line")
        if key in out:
            raise ValueError(f"--var {key}: given twice")
        out[key] = value
    return out


def check_targets(addresses: Iterable[str], declared: dict[str, set[str]]) -> list[str]:
    """`--target ADDRESS` options, each a resource address whose first part (a module or a
    resource) the root module declares. ValueError (one line) otherwise: Terraform itself
    plans nothing, without an error, for a target that matches nothing."""
    out = []
    for a in addresses:
        if not ADDRESS_RE.fullmatch(a):
            raise ValueError(f"--target {a!r}: not a resource address (e.g. module.fn_Split or "
                             "module.fn_Split.aws_lambda_function.this; see: unumctl plan APP)")
        if a.startswith("module."):
            head = a.split(".")[1].split("[")[0]
            ok = head in declared["module"]
        else:
            head = ".".join(a.split(".")[:3 if a.startswith("data.") else 2]).split("[")[0]
            ok = head in declared["resource"] | declared["data"]
        if not ok:
            raise ValueError(f"--target {a}: the configuration has no {head} (modules: "
                             f"{', '.join(sorted(declared['module']))})")
        out.append(a)
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


CONFIG_GLOBS = ("*.tf", "*.tf.json", "*.tfvars", "*.tfvars.json", ".terraform.lock.hcl", "modules/**/*.tf")


def config_digest(workdir: Path, archives: Iterable[Path]) -> dict[str, str]:
    """{relative path or "archive:NAME": sha256} of the rendered configuration in `workdir`
    (CONFIG_GLOBS: root and child modules, variable files, the provider lock file) and of each
    archive the configuration uploads."""
    workdir = Path(workdir)
    out: dict[str, str] = {}
    for pattern in CONFIG_GLOBS:
        for p in sorted(workdir.glob(pattern)):
            if p.is_file() and ".terraform" not in p.relative_to(workdir).parts[:-1]:
                out[p.relative_to(workdir).as_posix()] = _sha256(p)
    for z in archives:
        out[f"archive:{Path(z).name}"] = _sha256(Path(z))
    return dict(sorted(out.items()))


def record_path(plan_file: Path) -> Path:
    """The record beside a saved plan: `FILE` + RECORD_SUFFIX."""
    return Path(str(plan_file) + RECORD_SUFFIX)


def check_out_path(plan_file: Path) -> Path:
    """The absolute path `plan --out FILE` writes; ValueError when its directory does not
    exist or FILE is a directory."""
    p = Path(plan_file).expanduser().resolve()
    if p.is_dir():
        raise ValueError(f"--out {plan_file}: is a directory; give a file name (e.g. --out app.tfplan)")
    if not p.parent.is_dir():
        raise ValueError(f"--out {plan_file}: directory {p.parent} does not exist")
    return p


def write_record(plan_file: Path, *, app: str, cloud: str, workdir: Path, digest: dict[str, str],
                 summary: dict[str, Any], variables: dict[str, str], targets: list[str]) -> Path:
    """Write the record beside the saved plan (RECORD_SUFFIX) atomically (safefile.write_atomic:
    a link planted at the record or beside it is replaced, not written through); returns its
    path."""
    rec = {"format": RECORD_FORMAT, "app": app, "cloud": cloud, "workdir": str(workdir),
           "plan_sha256": _sha256(plan_file), "config": digest, "vars": sorted(variables),
           "targets": targets, "plan": summary}
    path = record_path(plan_file)
    write_atomic(path, json.dumps(rec, indent=2, sort_keys=True) + "\n", mode=0o644)
    return path


def read_record(plan_file: Path, app: str, cloud: str, workdir: Path) -> dict[str, Any]:
    """The record of a saved plan, checked against the plan file and the app it is applied
    to. TargetError (one line) when FILE or its record is missing or altered, or the plan
    was made for another app, cloud, region or stage (`workdir`, the Terraform directory of
    the deployment: unumctl/deploy/statepath.py), and when the record is not a regular file, is larger
    than RECORD_MAX_BYTES or nested deeper than safefile.MAX_DEPTH (read with
    safefile.read_bounded and load_json)."""
    p = Path(plan_file).expanduser().resolve()
    again = f"make one with: unumctl plan APP --cloud {cloud} --out {plan_file}"
    if not p.is_file():
        raise TargetError(f"--plan {plan_file}: no such file; {again}")
    try:
        rec = load_json(read_bounded(record_path(p), RECORD_MAX_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        raise TargetError(f"--plan {plan_file}: no readable {record_path(p).name} beside it, so it cannot "
                          f"be checked for staleness; {again}") from None
    if not isinstance(rec, dict) or rec.get("format") != RECORD_FORMAT:
        raise TargetError(f"--plan {plan_file}: {record_path(p).name} is not a saved-plan record "
                          f"(format {RECORD_FORMAT}); {again}")
    if (rec.get("app"), rec.get("cloud")) == (app, cloud) and rec.get("workdir") != str(workdir):
        made, here = key_of(str(rec.get("workdir"))), key_of(workdir)
        if made and here:  # the same app and cloud, another region or stage (deploy/statepath.py)
            raise TargetError(f"--plan {plan_file}: made for region {made[1]} stage {made[2]}, not region "
                              f"{here[1]} stage {here[2]}; pass --region {made[1]} --stage {made[2]}, or {again}")
    if (rec.get("app"), rec.get("cloud"), rec.get("workdir")) != (app, cloud, str(workdir)):
        raise TargetError(f"--plan {plan_file}: made for app {rec.get('app')} on {rec.get('cloud')} "
                          f"({rec.get('workdir')}), not for {app} on {cloud}")
    if rec.get("plan_sha256") != _sha256(p):
        raise TargetError(f"--plan {plan_file}: the file changed after `unumctl plan` wrote it; {again}")
    return rec


def check_fresh(plan_file: Path, rec: dict[str, Any], digest: dict[str, str], cloud: str) -> None:
    """TargetError (one line, naming the first difference) when the configuration or an
    archive rendered now differs from what the saved plan was made from."""
    old = rec.get("config") or {}
    changed = sorted(k for k in old.keys() | digest.keys() if old.get(k) != digest.get(k))
    if changed:
        raise TargetError(f"saved plan {plan_file} is stale: {changed[0]} changed since it was made"
                          f"{f' (and {len(changed) - 1} more)' if len(changed) > 1 else ''}; nothing "
                          f"was applied; review a new one: unumctl plan APP --cloud {cloud} --out {plan_file}")
