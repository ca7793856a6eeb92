"""Rendering Terraform root modules (aws_tf.py, gcp via unumctl/gcp/render.py) and the reusable
child modules they call, shipped as package data in `unumctl/render/modules/<name>/`.

The modules are read with importlib.resources, so they are found the same way from a source
checkout, an editable install and an installed wheel (pyproject.toml `package-data`).
"""

from __future__ import annotations

from importlib import resources

MODULES_PACKAGE = "unumctl.render"


def module_files(name: str) -> dict[str, str]:
    """{file name: text} of the `.tf` files of the child module `name` (e.g.
    "aws-unum-function"), from the installed package; its README.md and examples/ are not
    part of a deployment. Raises FileNotFoundError when the package has no such module (an
    installation without its package data: reinstall unumctl)."""
    src = resources.files(MODULES_PACKAGE) / "modules" / name
    files = {f.name: f.read_text(encoding="utf-8") for f in src.iterdir()
             if f.is_file() and f.name.endswith(".tf")} if src.is_dir() else {}
    if not files:
        raise FileNotFoundError(f"{src}: Terraform module {name!r} missing from the unumctl "
                                "package; reinstall unumctl (its wheel ships unumctl/render/modules)")
    return dict(sorted(files.items()))
