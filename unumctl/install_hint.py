"""How to install a missing optional part of unumctl (an extra of setup.py's extras_require),
worded for how this unumctl was installed: the one helper behind every "... not installed:
<how>" line.

- pipx (this interpreter is one of pipx's venvs, `.../pipx/venvs/unumctl`): `pipx inject
  unumctl <packages>` (pipx installs an app's extras only through inject);
- a checkout of the repository (unumctl/ sits beside setup.py and the Makefile, as with
  `pip install -e .`): `make .venv/.installed` (the Makefile installs every extra);
- otherwise (a venv or a plain pip install): `<this interpreter> -m pip install
  'unumctl[<extra>]'`, naming the interpreter so that the install lands where unumctl runs.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

__all__ = ["install_hint", "install_kind"]


def extra_packages(extra: str) -> list[str]:
    """The requirements unumctl's extra `extra` adds (pyproject.toml's
    [project.optional-dependencies], read from the installed metadata), each once; `extra`
    may name several, comma-separated ("aws,emulate"); [] when unknown."""
    from importlib import metadata
    try:
        reqs = metadata.requires("unumctl") or []
    except metadata.PackageNotFoundError:
        return []
    out: list[str] = []
    for name in extra.split(","):
        for req in reqs:
            spec, _, marker = req.partition(";")
            if re.search(r"extra\s*==\s*[\"']" + re.escape(name.strip()) + r"[\"']", marker) and spec.strip() not in out:
                out.append(spec.strip())
    return out


def install_kind() -> str:
    """'pipx', 'clone' or 'pip': how this unumctl was installed (module docstring)."""
    if "pipx" in Path(sys.prefix).parts and Path(sys.prefix).parent.name == "venvs":
        return "pipx"
    root = Path(__file__).resolve().parent.parent
    if (root / "setup.py").is_file() and (root / "Makefile").is_file():
        return "clone"
    return "pip"


def install_hint(extra: str, packages: str | None = None) -> str:
    """The command that installs unumctl's extra `extra` for this installation (module
    docstring; `extra` may name several, "aws,emulate"); `packages`: what `pipx inject` installs (default: the extra's requirements,
    extra_packages)."""
    kind = install_kind()
    if kind == "pipx":
        pkgs = packages or " ".join(shlex.quote(p) for p in extra_packages(extra))
        return f"pipx inject unumctl {pkgs}" if pkgs else f"pipx install --force 'unumctl[{extra}]'"
    if kind == "clone":
        return f"make .venv/.installed (in {Path(__file__).resolve().parent.parent})"
    return f"{shlex.quote(sys.executable)} -m pip install 'unumctl[{extra}]'"
