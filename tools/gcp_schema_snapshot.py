"""Snapshot of the hashicorp/google provider schema for the resource types unumctl renders.

No google provider can be installed offline, so the schema check of the rendered GCP
Terraform (unumctl/gcp/checks/tf_schema.py, tests/gcp/test_gcp_schema.py) reads a committed snapshot
made by this command from the npm package `@cdktf/provider-google`, which is generated
from the provider's schema (16.12.1 is generated from hashicorp/google 6.50.0; 14.11.0
from 6.12.0). For every resource the package's `lib/<resource>/index.js` carries its
TypeScript source (inline source map) with, per struct:

- a `<struct>ToHclTerraform` function (for the resource: `synthesizeHclAttributes`)
  listing every settable name with `isBlock`, `type` and `storageClassType`; a nested
  block calls the nested struct's function, directly when the block holds at most one
  element (`single`) and through `cdktf.listMapperHcl` when it is a list or set;
- comments `// <name> - computed: X, optional: Y, required: Z` in the resource class and
  in each `<Struct>OutputReference` class, for settable and computed-only names alike.

Usage (network: only the npm registry, through npm itself):

    python tools/gcp_schema_snapshot.py                       # npm pack 16.12.1 into a temp dir
    python tools/gcp_schema_snapshot.py --package-dir DIR     # an unpacked package (DIR/lib/...)

writes unumctl/gcp/checks/schema/google-<provider version>.json (the version is read from the
package). The resource types are those named in `resource "google_..."` blocks of
unumctl/gcp/templates/*.j2 and terraform/modules/gcp-*/*.tf. Snapshot shape:

    {"provider": "hashicorp/google", "version": "6.50.0", "source": "@cdktf/provider-google@16.12.1",
     "provider_config": BLOCK, "resources": {"google_x": BLOCK}}
    BLOCK = {"attributes": {name: {"mode": "required"|"optional"|"computed", "type": str}},
             "blocks": {name: {"nesting": "single"|"list"|"set", "required": bool, **BLOCK}}}

`provider_config` is the `provider "google"` block. `computed` means computed-only (may not be set in configuration). Errors (unknown
resource type, a struct whose flags cannot be found) exit with a one-line message.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "@cdktf/provider-google"
PACKAGE_VERSION = "16.12.1"
SOURCES = [ROOT / "unumctl" / "gcp" / "templates", *sorted((ROOT / "terraform" / "modules").glob("gcp-*"))]

_FLAGS = re.compile(r"// (\w+) - computed: (true|false), optional: (true|false), required: (true|false)\n(.*\n.*)")
_ENTRY = re.compile(r"(\w+): \{\s*value: (.*?),\s*isBlock: (true|false),\s*type: \"(\w+)\",\s*"
                    r"storageClassType: \"(\w+)\",\s*\}", re.DOTALL)
_NESTED = re.compile(r"(?<![\w.])(\w+)ToHclTerraform\b")


class SnapshotError(Exception):
    """A resource or struct of the package could not be read (message names it)."""


def used_resource_types(sources=SOURCES) -> list[str]:
    """Sorted `google_*` resource types declared in the GCP template and modules."""
    types = set()
    for d in sources:
        for f in sorted(d.glob("*.tf")) + sorted(d.glob("*.j2")):
            types.update(re.findall(r'resource\s+"(google_\w+)"', f.read_text()))
    return sorted(types)


def _typescript(index_js: Path) -> str:
    m = re.search(r"sourceMappingURL=data:application/json;base64,(\S+)", index_js.read_text())
    if not m:
        raise SnapshotError(f"{index_js}: no inline source map (is this @cdktf/provider-google?)")
    return json.loads(base64.b64decode(m.group(1)))["sourcesContent"][0]


def _body(ts: str, header: re.Pattern) -> str | None:
    """The text from a top-level declaration matching `header` to its closing `}` line."""
    m = header.search(ts)
    if not m:
        return None
    end = ts.find("\n}\n", m.end())
    return ts[m.start():end]


def _flags(class_body: str | None) -> dict:
    """{name: (computed, optional, required, next line)} from the class's comments."""
    out = {}
    for name, c, o, r, nxt in _FLAGS.findall(class_body or ""):
        out[name] = (c == "true", o == "true", r == "true", nxt)
    return out


def _getter_type(line: str) -> str:
    m = re.search(r"this\.get(\w+?)Attribute\(", line)
    if m:
        return m.group(1)[0].lower() + m.group(1)[1:]
    m = re.search(r"(?:private|public) _?\w+\??(?: = new |: )([\w.]+)", line)
    return m.group(1) if m else "object"


def _struct(ts: str, entries_text: str, flags: dict, where: str) -> dict:
    block = {"attributes": {}, "blocks": {}}
    seen = set()
    entries = _ENTRY.findall(entries_text)
    if len(entries) != len(re.findall(r"^\s+value: (?!\{)", entries_text, re.MULTILINE)):
        raise SnapshotError(f"{where}: some entries of the ToHclTerraform attrs were not understood")
    for name, value, is_block, kind, storage in entries:
        seen.add(name)
        if name not in flags:
            raise SnapshotError(f"{where}: no computed/optional/required comment for {name!r}")
        computed, optional, required, _ = flags[name]
        if is_block == "true":
            nested = [n for n in _NESTED.findall(value)]
            if not nested:
                raise SnapshotError(f"{where}: block {name!r} names no nested struct function")
            sub = _nested_struct(ts, nested[0], f"{where}.{name}")
            nesting = "single" if "listMapperHcl" not in value else ("set" if kind == "set" else "list")
            block["blocks"][name] = {"nesting": nesting, "required": required, **sub}
        else:
            mode = "required" if required else "optional"
            block["attributes"][name] = {"mode": mode, "type": storage}
    for name, (computed, optional, required, nxt) in flags.items():
        if name not in seen and computed and not optional and not required:
            block["attributes"][name] = {"mode": "computed", "type": _getter_type(nxt)}
    block["attributes"] = dict(sorted(block["attributes"].items()))
    block["blocks"] = dict(sorted(block["blocks"].items()))
    return block


def _nested_struct(ts: str, fn: str, where: str) -> dict:
    body = _body(ts, re.compile(rf"^export function {fn}ToHclTerraform\(struct\?: ([^)]*)\): any \{{", re.MULTILINE))
    if body is None:
        raise SnapshotError(f"{where}: function {fn}ToHclTerraform not found")
    sig = re.match(r"[^(]*\(struct\?: ([^)]*)\)", body).group(1)
    iface = next(t.strip() for t in sig.split("|") if not t.strip().startswith("cdktf.")
                 and not t.strip().endswith("OutputReference"))
    cls = _body(ts, re.compile(rf"^export class {iface}OutputReference extends", re.MULTILINE))
    flags = _flags(cls)
    if cls is None:  # no output reference class: required-ness from the interface
        ibody = _body(ts, re.compile(rf"^export interface {iface} \{{", re.MULTILINE)) or ""
        opt = dict(re.findall(r"readonly (\w+)(\??):", ibody))
        for name, value in re.findall(r"(\w+): \{\s*value: [^\n]*struct!?\.(\w+)", body):
            if value in opt:
                flags[name] = (False, opt[value] == "?", opt[value] == "", "")
    return _struct(ts, body, flags, where)


def resource_schema(lib: Path, rtype: str) -> dict:
    """BLOCK (see module doc) of resource type `rtype` from the package's lib directory;
    `rtype` "google" gives the provider configuration block."""
    base, folder = ("TerraformProvider", "provider") if rtype == "google" else \
        ("TerraformResource", rtype.removeprefix("google_").replace("_", "-"))
    index = lib / folder / "index.js"
    if not index.exists():
        raise SnapshotError(f"{rtype}: {index} not found (not a resource of this provider version)")
    ts = _typescript(index)
    cls = _body(ts, re.compile(rf"^export class \w+ extends cdktf\.{base} \{{", re.MULTILINE))
    if cls is None or f"tfResourceType = \"{rtype}\"" not in cls:
        raise SnapshotError(f"{rtype}: resource class not found in {index}")
    hcl = cls[cls.index("synthesizeHclAttributes()"):]
    return _struct(ts, hcl, _flags(cls), rtype)


def snapshot(package_dir: Path, types: list[str]) -> dict:
    """The snapshot dict for `types` from an unpacked package directory (holding lib/)."""
    meta = json.loads((package_dir / "package.json").read_text())
    any_index = (package_dir / "lib" / "storage-bucket" / "index.js").read_text()
    version = re.search(r"providerVersion: '([\d.]+)'", any_index).group(1)
    return {"provider": "hashicorp/google", "version": version,
            "source": f"{meta['name']}@{meta['version']}",
            "generated_by": "python tools/gcp_schema_snapshot.py",
            "provider_config": resource_schema(package_dir / "lib", "google"),
            "resources": {t: resource_schema(package_dir / "lib", t) for t in types}}


def _npm_pack(tmp: Path, version: str) -> Path:
    subprocess.run(["npm", "pack", f"{PACKAGE}@{version}", "--silent"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL)
    tgz = next(tmp.glob("*.tgz"))
    with tarfile.open(tgz) as tar:
        members = [m for m in tar.getmembers()
                   if m.name in ("package/package.json",) or m.name.endswith("/index.js")]
        tar.extractall(tmp, members=members, filter="data")
    return tmp / "package"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--package-dir", type=Path, help="an unpacked @cdktf/provider-google (default: npm pack)")
    ap.add_argument("--package-version", default=PACKAGE_VERSION)
    ap.add_argument("--out", type=Path, help="default: unumctl/gcp/checks/schema/google-<version>.json")
    args = ap.parse_args(argv)
    types = used_resource_types()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            pkg = args.package_dir or _npm_pack(Path(tmp), args.package_version)
            snap = snapshot(pkg, types)
    except (SnapshotError, subprocess.CalledProcessError) as exc:
        print(f"gcp_schema_snapshot: {exc}", file=sys.stderr)
        return 1
    out = args.out or ROOT / "unumctl" / "gcp" / "checks" / "schema" / f"google-{snap['version']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(snap, indent=1, sort_keys=False) + "\n")
    print(f"{out}: {len(types)} resource types of hashicorp/google {snap['version']} ({snap['source']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
