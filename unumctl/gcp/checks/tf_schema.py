"""Offline check of Terraform files against a committed google provider schema snapshot.

The google provider cannot be installed here, so `terraform validate` cannot run on the
GCP Terraform. This checks the part of validation that depends on the provider's schema,
from the snapshot that tools/gcp_schema_snapshot.py makes of `@cdktf/provider-google`
(unumctl/gcp/checks/schema/google-<version>.json): for every `resource` block whose type belongs
to the google provider (`google_*`), at any depth of nested blocks,

- the resource type exists;
- every argument is a known attribute or block, written as what it is (`name = value`
  for an attribute, `name { ... }` for a block, see
  https://developer.hashicorp.com/terraform/language/syntax/configuration);
- no computed-only attribute is set; every required attribute and block is present;
- a block that nests at most one element (`single`) appears at most once;
- a literal value converts to the attribute's type (a list or map for a string, number or
  bool; a scalar for a list or map; a string that is no number or bool for one); expressions
  are not judged.

The `provider "google"` block is checked the same way (cdktf records its single blocks as
lists, so a repeated one is not noticed there).

Meta-arguments (https://developer.hashicorp.com/terraform/language/meta-arguments):
`count`, `for_each`, `depends_on`, `provider` must be attributes and `lifecycle`,
`provisioner`, `connection` blocks; they are not checked against the schema.
`dynamic "<name>" { for_each = ..., content { ... } }` counts as blocks `<name>` whose
body is `content`. A resource with `provider = google-beta` is checked against the
google-beta snapshot of the same version (`google-beta-<version>.json`, same shape, made by
`python tools/gcp_schema_snapshot.py --beta`; a finding when there is none). Resources of
other providers (hashicorp/random, hashicorp/time, Terraform's built-in `terraform_data`)
are outside these schemas and skipped; module calls, variables and
expressions are not evaluated (a required attribute set to `null` is not noticed).

Calls of local modules (`source = "./..."` or `"../..."`) are checked against the module's
`variable` blocks: every argument is a declared variable, every variable without a
`default` is set (https://developer.hashicorp.com/terraform/language/modules/syntax).

Files are parsed with python-hcl2. Findings are strings
`<file>:<type>.<name>.<path>: <problem>`; an empty list means the files pass.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import hcl2
from lark.exceptions import LarkError  # python-hcl2's parser

__all__ = ["check_dir", "check_file", "hcl2", "load_schema"]

SCHEMA_DIR = Path(__file__).resolve().parent / "schema"  # package data of unumctl.gcp.checks (pyproject.toml)
GOOGLE_PREFIXES = ("google_",)  # google and google-beta resource types
META_ATTRIBUTES = {"count", "for_each", "depends_on", "provider"}
META_BLOCKS = {"lifecycle", "provisioner", "connection"}
MODULE_META = {"source", "version", "count", "for_each", "depends_on", "providers"}
_HCL_KEYS = {"__is_block__", "__comments__", "__start_line__", "__end_line__"}


def schema_path(version: str, beta: bool = False) -> Path:
    """unumctl/gcp/checks/schema/google[-beta]-<version>.json (may not exist)."""
    return SCHEMA_DIR / f"google{'-beta' if beta else ''}-{version}.json"


def load_schema(version: str) -> dict:
    """The snapshot of hashicorp/google `version`, with the google-beta snapshot of the same
    version under "beta" when it exists. FileNotFoundError names the command that makes it."""
    path = schema_path(version)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no schema snapshot for google {version} "
                                f"(run: python tools/gcp_schema_snapshot.py)")
    schema = json.loads(path.read_text())
    beta = schema_path(version, beta=True)
    if beta.exists():
        schema["beta"] = json.loads(beta.read_text())
    return schema


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _is_block(value) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(v, dict) and v.get("__is_block__") for v in value)


def _instances(body: dict) -> dict[str, list[dict]]:
    """{block name: [bodies]} of a body's blocks, `dynamic` ones unfolded into their content."""
    out: dict[str, list[dict]] = {}
    for key, value in body.items():
        if key == "dynamic" and isinstance(value, list):
            for entry in value:
                for label, dyn in entry.items():
                    if label in _HCL_KEYS:
                        continue
                    content = dyn.get("content")
                    out.setdefault(_unquote(label), []).append(
                        content[0] if _is_block(content) else {"__missing_content__": True})
        elif key not in _HCL_KEYS and _is_block(value):
            out.setdefault(key, []).extend(value)
    return out


_PRIMITIVES = {"string", "number", "boolean"}
_COLLECTIONS = {"stringList": "list", "numberList": "list", "booleanList": "list",
                "stringMap": "map", "numberMap": "map", "booleanMap": "map"}


def _kind(value) -> str | None:
    """'list', 'map', 'string', 'number', 'boolean' of a literal; None for an expression or null."""
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, str) and len(value) >= 2 and value[0] == value[-1] == '"':
        return "string"
    return None


def _type_problem(value, declared: str) -> str | None:
    """Why a literal cannot convert to the attribute's type (Terraform's conversions:
    https://developer.hashicorp.com/terraform/language/expressions/type-constraints#conversion-of-primitive-types),
    or None. Expressions, templates and null are not judged."""
    kind = _kind(value)
    if kind is None:
        return None
    if declared in _PRIMITIVES:
        if kind in ("list", "map"):
            return f"expects a {declared}, got a {kind}"
        if kind == "string" and "${" not in value:
            text = value[1:-1]
            if declared == "number" and not _is_number(text):
                return f"expects a number, got the string {value}"
            if declared == "boolean" and text not in ("true", "false"):
                return f"expects a boolean, got the string {value}"
        return None
    want = _COLLECTIONS.get(declared)
    if want and kind != want and not (want == "map" and kind == "list" and not value):
        return f"expects a {want} ({declared}), got a {kind}"
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_body(body: dict, schema: dict, where: str, *, resource_level: bool = False) -> list[str]:
    """Findings for one block body against its schema BLOCK (see tools/gcp_schema_snapshot.py)."""
    problems = []
    attrs, blocks = schema["attributes"], schema["blocks"]
    if body.get("__missing_content__"):
        return [f"{where}: dynamic block without a content block"]
    for key, value in body.items():
        if key in _HCL_KEYS or key == "dynamic":
            continue
        block_form = _is_block(value)
        if resource_level and key in META_ATTRIBUTES | META_BLOCKS:
            if block_form != (key in META_BLOCKS):
                kind = "a block" if key in META_BLOCKS else "an attribute"
                problems.append(f"{where}.{key}: meta-argument {key!r} must be {kind}")
            continue
        if key in attrs:
            if block_form:
                problems.append(f"{where}.{key}: {key!r} is an attribute, written as a block "
                                f"(write `{key} = ...`)")
            elif attrs[key]["mode"] == "computed":
                problems.append(f"{where}.{key}: {key!r} is computed-only and cannot be set")
            elif (wrong := _type_problem(value, attrs[key]["type"])):
                problems.append(f"{where}.{key}: {wrong}")
        elif key in blocks:
            if not block_form:
                problems.append(f"{where}.{key}: {key!r} is a block, written as an attribute "
                                f"(write `{key} {{ ... }}`)")
        else:
            kind = "block" if block_form else "attribute"
            known = sorted(attrs.keys() | blocks.keys())
            listed = ", ".join(known) if len(known) <= 30 else f"{len(known)} names, see the snapshot"
            problems.append(f"{where}.{key}: unknown {kind} {key!r} (known: {listed})")
    instances = _instances(body)
    for name, bodies in instances.items():
        if name not in blocks:
            if name not in body:  # only from `dynamic`; static ones are reported above
                kind = "an attribute, not a block" if name in attrs else "unknown"
                problems.append(f"{where}.{name}: dynamic block {name!r}: {kind}")
            continue
        spec = blocks[name]
        if spec["nesting"] == "single" and len(bodies) > 1:
            problems.append(f"{where}.{name}: at most one {name!r} block is allowed, found {len(bodies)}")
        for i, sub in enumerate(bodies):
            label = f"{where}.{name}" if len(bodies) == 1 else f"{where}.{name}[{i}]"
            problems += check_body(sub, spec, label)
    for name, spec in attrs.items():
        if spec["mode"] == "required" and name not in body:
            problems.append(f"{where}: required attribute {name!r} is missing")
    for name, spec in blocks.items():
        if spec["required"] and name not in instances:
            problems.append(f"{where}: required block {name!r} is missing")
    return problems


def check_document(doc: dict, schema: dict, label: str) -> tuple[list[str], set[str]]:
    """(findings, google resource types seen) of one parsed HCL document (python-hcl2 shape)."""
    problems, seen = [], set()
    for entry in doc.get("provider", []):
        for name_q, body in entry.items():
            if _unquote(name_q) == "google" and "provider_config" in schema:
                problems += check_body(body, schema["provider_config"], f"{label}:provider.google")
            elif _unquote(name_q) == "google-beta" and "provider_config" in schema.get("beta", {}):
                problems += check_body(body, schema["beta"]["provider_config"], f"{label}:provider.google-beta")
    resources = schema["resources"]
    for entry in doc.get("resource", []):
        for rtype_q, named in entry.items():
            rtype = _unquote(rtype_q)
            if rtype in _HCL_KEYS or not rtype.startswith(GOOGLE_PREFIXES):
                continue
            for name_q, body in named.items():
                if name_q in _HCL_KEYS:
                    continue
                where = f"{label}:{rtype}.{_unquote(name_q)}"
                if _unquote(str(body.get("provider", ""))).removeprefix("${").removesuffix("}") == "google-beta":
                    beta = schema.get("beta")
                    if beta is None or rtype not in beta["resources"]:
                        problems.append(f"{where}: unknown google-beta resource type {rtype!r} (not in the "
                                        f"google-beta {schema['version']} schema snapshot: python "
                                        "tools/gcp_schema_snapshot.py --beta)")
                        continue
                    seen.add(rtype)
                    problems += check_body(body, beta["resources"][rtype], where, resource_level=True)
                    continue
                if rtype not in resources:
                    problems.append(f"{where}: unknown resource type {rtype!r} (not in the "
                                    f"google {schema['version']} schema snapshot)")
                    continue
                seen.add(rtype)
                problems += check_body(body, resources[rtype], where, resource_level=True)
    return problems, seen


def _parse(path: Path, label: str) -> tuple[dict | None, list[str]]:
    try:
        with open(path) as fh:
            return hcl2.load(fh), []
    except LarkError as exc:
        return None, [f"{label}: does not parse: {str(exc).splitlines()[0]}"]


def module_variables(module_dir: Path) -> dict[str, bool]:
    """{variable name: has a default} of the module in `module_dir` (its *.tf files)."""
    files = tuple((p, p.stat().st_mtime_ns) for p in sorted(module_dir.glob("*.tf")))
    return dict(_variables(files))


@functools.lru_cache(maxsize=256)
def _variables(files: tuple) -> tuple:
    out = {}
    for path, _ in files:
        doc, _ = _parse(path, str(path))
        for entry in (doc or {}).get("variable", []):
            for name, body in entry.items():
                if name not in _HCL_KEYS:
                    out[_unquote(name)] = "default" in body
    return tuple(out.items())


def check_module_calls(doc: dict, base: Path, label: str) -> list[str]:
    """Findings for the calls of local modules in one parsed document whose file is in `base`."""
    problems = []
    for entry in doc.get("module", []):
        for name_q, body in entry.items():
            if name_q in _HCL_KEYS:
                continue
            source = _unquote(str(body.get("source", "")))
            if not source.startswith(("./", "../")):
                continue  # registry or remote module: not ours to check
            where = f"{label}:module.{_unquote(name_q)}"
            module_dir = (base / source).resolve()
            variables = module_variables(module_dir)
            if not variables and not module_dir.is_dir():
                problems.append(f"{where}: module source {source!r} is not a directory")
                continue
            for key in body:
                if key not in _HCL_KEYS and key not in MODULE_META and key not in variables:
                    problems.append(f"{where}.{key}: the module at {source!r} declares no variable {key!r}")
            for var, has_default in variables.items():
                if not has_default and var not in body:
                    problems.append(f"{where}: required variable {var!r} of {source!r} is not set")
    return problems


def check_file(path: Path, schema: dict, label: str | None = None) -> tuple[list[str], set[str]]:
    """(findings, resource types seen) of one .tf file: its google resources and its calls
    of local modules; a parse error is one finding."""
    label = label or str(path)
    doc, problems = _parse(path, label)
    if doc is None:
        return problems, set()
    problems, seen = check_document(doc, schema, label)
    return problems + check_module_calls(doc, path.parent, label), seen


def check_dir(root: Path, schema: dict) -> tuple[list[str], set[str]]:
    """(findings, resource types seen) of every *.tf file under `root` (recursively:
    the root module and its copied modules); file labels are relative to `root`."""
    problems, seen = [], set()
    for path in sorted(root.rglob("*.tf")):
        p, s = check_file(path, schema, str(path.relative_to(root)))
        problems += p
        seen |= s
    return problems, seen
