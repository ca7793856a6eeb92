"""The versions a gcp deployment's Terraform keeps (docs/versions.md "On GCP"): the record,
beside the rendered root module, of what the last successful `apply` deployed, so that the
next render keeps every version that may still have running sessions.

    <terraform dir>/versions.json   {"current": <version>, "versions": {<version>: {
                                        "functions": [the function's rendering, as render.py
                                                      gives it to the template],
                                        "edges": [its topic grants]}}}
    <terraform dir>/versions/<version>/<function>.zip   each kept version's code archives

A version is rendered at the module addresses `fn_<function>` while it is current and
`fn_<function>_<version>` once it is not; `moved` blocks carry a version's resources from the
one address to the other, so a deploy never replaces the functions, topics and triggers of
an older version: they are deleted only when the version is collected (dropped from the
record by `apply` once none of its sessions can still run, unumctl/gcp/versions.py).
Written only after a successful apply (`save`); a plan renders against the same record.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from runtime.payload import VersionId

from ..safefile import write_atomic

__all__ = ["NEXT", "RECORD", "clear", "commit", "keep_sources", "load", "save"]

RECORD = "versions.json"
NEXT = "versions.next.json"  # what the last render would make the record once applied
SOURCES = "versions"


def load(out: Path, name: str = RECORD) -> dict[str, Any]:
    """The record {"current": version id | None, "versions": {version: {"functions",
    "edges"}}} of the deployment rendered in `out`, empty before a first apply. ValueError
    (one line naming the file) for a record that is not one."""
    path = Path(out) / name
    if not path.exists():
        return {"current": None, "versions": {}}
    try:
        doc = json.loads(path.read_text())
        current = VersionId(doc["current"]) if doc["current"] else None
        versions = {VersionId(v): {"functions": list(r["functions"]), "edges": list(r["edges"])}
                    for v, r in doc["versions"].items()}
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"{path}: not a record of kept versions ({exc}); delete it only if no session runs "
                         "on an older version") from None
    return {"current": current, "versions": versions}


def keep_sources(out: Path, version: str, functions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copy each function's code archive of `version` under `out/versions/<version>/` and
    return the renderings with `source_path` pointing there (relative to `out`), so a kept
    version's archives outlive the build directory."""
    d = Path(out) / SOURCES / VersionId(version)
    d.mkdir(parents=True, exist_ok=True)
    kept = []
    for f in functions:
        dst = d / f"{f['name']}.zip"
        src = (Path(out) / f["source_path"]).resolve()
        if src != dst.resolve():
            shutil.copyfile(src, dst)
        kept.append({**f, "source_path": str(dst.relative_to(out))})
    return kept


def save(out: Path, current: str, versions: dict[str, dict[str, Any]], name: str = RECORD) -> None:
    """Write the record `name` (`current` and every kept version)."""
    write_atomic(Path(out) / name, json.dumps({"current": current, "versions": versions}, indent=1,
                                              sort_keys=True), mode=0o644)


def commit(out: Path) -> dict[str, Any]:
    """After a successful apply: the record of the last render (NEXT) becomes the record, and
    the archives of the versions it no longer keeps are deleted. Returns the record."""
    nxt = load(out, NEXT)
    if nxt["current"] is None:
        return load(out)
    save(out, nxt["current"], nxt["versions"])
    (Path(out) / NEXT).unlink()
    root = Path(out) / SOURCES
    for d in root.iterdir() if root.is_dir() else ():
        if d.name not in nxt["versions"] and not d.is_symlink():
            shutil.rmtree(d)
    return nxt


def clear(out: Path) -> None:
    """After a destroy (which destroyed every kept version, all being rendered): forget them."""
    for name in (RECORD, NEXT):
        (Path(out) / name).unlink(missing_ok=True)
    root = Path(out) / SOURCES
    if root.is_dir() and not root.is_symlink():
        shutil.rmtree(root)
