"""`unumctl init`: a new app from a template (unumctl/templates/, package data read with
importlib.resources, so an installed wheel has them too).

A template is a directory holding `template.json` ({"description": one line}) and the files
of a working app (manifest, IR or state machine, handlers, input.json, expected_output.json,
tests/); `__APP__` in a file stands for the app's name. Like `sam init`, but the app is
written all at once: into a temporary directory beside DIR, then renamed into place, so a
failure leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib.resources import files
from importlib.resources.abc import Traversable
from pathlib import Path

from .manifest import AppError, check_app_name

__all__ = ["init_app", "templates"]

PLACEHOLDER = "__APP__"
META = "template.json"
_SKIP = {META, "__init__.py", "__pycache__"}


def _root() -> Traversable:
    return files("unumctl") / "templates"


def templates() -> dict[str, str]:
    """{template name: one-line description}, sorted by name."""
    out = {}
    for d in sorted(_root().iterdir(), key=lambda t: t.name):
        if d.is_dir() and (d / META).is_file():
            out[d.name] = str(json.loads((d / META).read_text(encoding="utf-8"))["description"])
    return out


def _walk(node: Traversable, rel: Path) -> list[tuple[Path, Traversable]]:
    found: list[tuple[Path, Traversable]] = []
    for child in sorted(node.iterdir(), key=lambda t: t.name):
        if child.name in _SKIP or child.name.endswith(".pyc"):
            continue
        if child.is_dir():
            found += _walk(child, rel / child.name)
        else:
            found.append((rel / child.name, child))
    return found


def init_app(directory: Path, template: str, name: str | None = None) -> dict[str, object]:
    """Write a new app from `template` into `directory` (created; an existing one must be
    empty). The app's name is `name`, else the directory's name; it must follow the
    manifest's rule (manifest.check_app_name). Returns {"app", "template", "dir", "files":
    [relative path]}. AppError (one line, nothing written) for an unknown template, a
    non-empty or non-directory DIR, or a name the manifest would reject."""
    known = templates()
    if template not in known:
        raise AppError(f"--template: unknown template {template!r} (known: {', '.join(known)}; "
                       "see: unumctl init --list)")
    directory = Path(directory)
    target = directory.resolve()
    app_name = name if name is not None else target.name
    try:
        check_app_name(app_name)
    except ValueError as exc:
        hint = "--name" if name is not None else f"the directory name {app_name!r} is the app's name; pass --name"
        raise AppError(f"{directory}: app name {app_name!r} {exc} ({hint} to choose one)") from None
    if target.exists() and not target.is_dir():
        raise AppError(f"{directory}: exists and is not a directory; choose a new directory")
    if target.is_dir() and any(target.iterdir()):
        raise AppError(f"{directory}: not empty; init writes into a new or empty directory "
                       f"(e.g. unumctl init {app_name}-new)")
    parent = target.parent
    if not parent.is_dir():
        raise AppError(f"{directory}: parent directory {parent} does not exist")
    entries = _walk(_root() / template, Path())
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=parent))
    try:
        for rel, src in entries:
            dest = staging / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(src.read_text(encoding="utf-8").replace(PLACEHOLDER, app_name), encoding="utf-8")
        os.chmod(staging, 0o777 & ~_umask())
        if target.is_dir():
            target.rmdir()  # empty (checked above)
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return {"app": app_name, "template": template, "dir": str(directory),
            "files": [str(rel) for rel, _ in entries]}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
