"""README tables and registry-standard checks for the Terraform modules in terraform/modules/.

Usage (from the repository root):

    python -m tools.tf_module_docs            # rewrite each module's README tables
    python -m tools.tf_module_docs --check    # exit 1 and list the problems, change nothing

Each module's `*.tf` files are parsed with python-hcl2 (no regular expressions over HCL). The
tables (Requirements, Inputs, Outputs, in the layout of terraform-docs as used by
terraform-aws-modules/terraform-aws-lambda) go between the markers BEGIN and END below in the
module's README.md; the text around them is hand-written and kept.

`problems(module_dir)` is the registry standard this project holds its modules to (issue 11
item 4; https://developer.hashicorp.com/terraform/language/modules/develop/structure):
every variable has a description and a type, every output a description, `versions.tf` sets
`required_version` and a minimum version for every provider, README.md exists with up-to-date
tables, and `examples/<name>/main.tf` calls the module (`source = "../.."`).
"""

from __future__ import annotations

import argparse
import functools
import json
import sys
from pathlib import Path
from typing import Any

import hcl2
from lark.exceptions import LarkError  # python-hcl2's parser

MODULES_DIR = Path(__file__).resolve().parents[1] / "terraform" / "modules"
BEGIN = "<!-- BEGINNING OF PRE-COMMIT-TERRAFORM DOCS HOOK -->"
END = "<!-- END OF PRE-COMMIT-TERRAFORM DOCS HOOK -->"


def _unquote(x: Any) -> Any:
    """python-hcl2 (>= 5) keeps string literals quoted and expressions as `${...}`: give plain
    Python values, string literals decoded (HCL escapes are JSON's for what modules use)."""
    if isinstance(x, dict):
        return {_unquote(k): _unquote(v) for k, v in x.items() if k not in ("__is_block__", "__comments__")}
    if isinstance(x, list):
        return [_unquote(v) for v in x]
    if isinstance(x, str) and len(x) >= 2 and x[0] == x[-1] == '"':
        try:
            return json.loads(x)
        except ValueError:
            return x[1:-1]
    return x


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> str:
    """The plain-value document of one HCL file's text, as JSON (python-hcl2's parse is
    slow, and a check reads each file several times: parsed once per text)."""
    return json.dumps(_unquote(hcl2.loads(text)))


def load_hcl(path: Path) -> dict[str, Any]:
    """The HCL file `path` as plain Python values (_unquote of python-hcl2's document);
    raises LarkError or ValueError when it does not parse. A fresh copy per call."""
    return json.loads(_parsed(path.read_text()))


def _expr(x: Any) -> str:
    """A type expression as written: `${map(string)}` -> `map(string)`."""
    s = str(x)
    return s[2:-1] if s.startswith("${") and s.endswith("}") else s


def parse_module(module_dir: Path) -> dict[str, Any]:
    """{"variables": {name: body}, "outputs": {name: body}, "terraform": [blocks],
    "files": [names]} from the module's top-level *.tf files (sorted). Raises ValueError naming
    the file when one does not parse."""
    out: dict[str, Any] = {"variables": {}, "outputs": {}, "terraform": [], "files": []}
    for path in sorted(module_dir.glob("*.tf")):
        out["files"].append(path.name)
        try:
            doc = load_hcl(path)
        except (LarkError, ValueError) as exc:
            raise ValueError(f"{path}: not valid HCL: {str(exc).splitlines()[0]}") from None
        for kind, key in (("variable", "variables"), ("output", "outputs")):
            for entry in doc.get(kind, []):
                for name, body in entry.items():
                    out[key][name] = dict(body, _file=path.name)
        out["terraform"].extend(doc.get("terraform", []))
    return out


def _cell(text: str) -> str:
    text = " ".join(str(text).split()).replace("|", "\\|")
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _default(body: dict[str, Any]) -> str:
    if "default" not in body:
        return "n/a"
    return f"`{json.dumps(body['default'])}`"


def requirements(mod: dict[str, Any]) -> list[tuple[str, str]]:
    """[(name, version constraint)]: terraform first, then providers in file order."""
    rows: list[tuple[str, str]] = []
    for block in mod["terraform"]:
        if "required_version" in block:
            rows.append(("terraform", block["required_version"]))
        for req in block.get("required_providers", []):
            for name, spec in req.items():
                rows.append((name, spec.get("version", "") if isinstance(spec, dict) else str(spec)))
    return rows


def tables(module_dir: Path) -> str:
    """The generated Markdown (without the markers) for one module."""
    mod = parse_module(module_dir)
    lines = ["## Requirements", "", "| Name | Version |", "|------|---------|"]
    lines += [f"| {n} | {_cell(v)} |" for n, v in requirements(mod)]
    lines += ["", "## Inputs", ""]
    if mod["variables"]:
        lines += ["| Name | Description | Type | Default | Required |",
                  "|------|-------------|------|---------|:--------:|"]
        for name in sorted(mod["variables"]):
            b = mod["variables"][name]
            lines.append(f"| {name} | {_cell(b.get('description', 'n/a'))} | "
                         f"`{_cell(_expr(b.get('type', 'any')))}` | {_cell(_default(b))} | "
                         f"{'no' if 'default' in b else 'yes'} |")
    else:
        lines.append("No inputs.")
    lines += ["", "## Outputs", ""]
    if mod["outputs"]:
        lines += ["| Name | Description |", "|------|-------------|"]
        for name in sorted(mod["outputs"]):
            lines.append(f"| {name} | {_cell(mod['outputs'][name].get('description', 'n/a'))} |")
    else:
        lines.append("No outputs.")
    return "\n".join(lines) + "\n"


def render_readme(module_dir: Path, current: str | None) -> str:
    """README text with the tables replaced (or, for a new README, a title and the tables)."""
    block = f"{BEGIN}\n{tables(module_dir)}{END}\n"
    if current is None:
        return f"# {module_dir.name}\n\n{block}"
    if BEGIN not in current or END not in current:
        return current.rstrip("\n") + "\n\n" + block
    head, rest = current.split(BEGIN, 1)
    tail = rest.split(END, 1)[1].lstrip("\n")
    return head + block + (("\n" + tail) if tail else "")


def _examples(module_dir: Path) -> list[Path]:
    return sorted(p for p in (module_dir / "examples").glob("*/main.tf"))


def problems(module_dir: Path) -> list[str]:
    """Every way the module misses the registry standard, one line each naming file and fix;
    [] when it meets it."""
    found: list[str] = []
    try:
        mod = parse_module(module_dir)
    except ValueError as exc:
        return [str(exc)]
    for name, b in sorted(mod["variables"].items()):
        for key in ("description", "type"):
            if not str(b.get(key, "")).strip():
                found.append(f"{module_dir / b['_file']}: variable {name!r} has no {key}; add one")
    for name, b in sorted(mod["outputs"].items()):
        if not str(b.get("description", "")).strip():
            found.append(f"{module_dir / b['_file']}: output {name!r} has no description; add one")
    if "versions.tf" not in mod["files"]:
        found.append(f"{module_dir}: no versions.tf; add a terraform block with required_version "
                     "and required_providers")
    else:
        reqs = dict(requirements(parse_module_file(module_dir / "versions.tf")))
        if "terraform" not in reqs:
            found.append(f"{module_dir / 'versions.tf'}: no required_version; add e.g. \">= 1.5\"")
        for name, version in reqs.items():
            if name != "terraform" and not version:
                found.append(f"{module_dir / 'versions.tf'}: provider {name!r} has no minimum "
                             "version; add e.g. version = \">= 5.100\"")
        if not [n for n in reqs if n != "terraform"]:
            found.append(f"{module_dir / 'versions.tf'}: no required_providers; list each provider "
                         "with its source and minimum version")
    readme = module_dir / "README.md"
    if not readme.is_file():
        found.append(f"{readme}: missing; run python -m tools.tf_module_docs")
    elif render_readme(module_dir, readme.read_text()) != readme.read_text():
        found.append(f"{readme}: input/output tables out of date with the .tf files; run "
                     "python -m tools.tf_module_docs")
    examples = _examples(module_dir)
    if not examples:
        found.append(f"{module_dir / 'examples'}: no examples/<name>/main.tf; add one that calls "
                     "the module")
    for ex in examples:
        try:
            doc = load_hcl(ex)
        except (LarkError, ValueError) as exc:
            found.append(f"{ex}: not valid HCL: {str(exc).splitlines()[0]}")
            continue
        sources = [body.get("source") for m in doc.get("module", []) for body in m.values()]
        if "../.." not in sources:
            found.append(f"{ex}: does not call the module (no module block with source = \"../..\")")
    return found


def parse_module_file(path: Path) -> dict[str, Any]:
    """parse_module restricted to one file (used for versions.tf)."""
    doc = load_hcl(path)
    return {"variables": {}, "outputs": {}, "terraform": doc.get("terraform", []), "files": [path.name]}


def module_dirs(root: Path = MODULES_DIR) -> list[Path]:
    """The module directories under `root` (those holding a .tf file), sorted."""
    return sorted(p for p in root.iterdir() if p.is_dir() and any(p.glob("*.tf")))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="report problems, write nothing")
    ap.add_argument("modules", nargs="*", type=Path, help="module directories (default: all)")
    args = ap.parse_args(argv)
    dirs = args.modules or module_dirs()
    if not args.check:
        for d in dirs:
            readme = d / "README.md"
            current = readme.read_text() if readme.is_file() else None
            new = render_readme(d, current)
            if new != current:
                readme.write_text(new)
                print(f"wrote {readme}")
    bad = [p for d in dirs for p in problems(d)]
    for p in bad:
        print(p, file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
