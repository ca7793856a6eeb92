"""Rendering Terraform root modules (aws_tf.py, gcp via unumctl/gcp/render.py) and the reusable
child modules they call, which live in the repository's `terraform/modules/<name>/`.

`modules_dir` is the one lookup: from a source checkout (unumctl on PYTHONPATH, or an editable
install) the checkout's `terraform/modules/`; from an installed wheel the package data
`unumctl/render/modules/`, which setup.py maps onto `terraform/modules/` when the wheel is
built (package `unumctl.render.modules`, its files listed in pyproject.toml `package-data`).
"""

from __future__ import annotations

from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

__all__ = ["MODULES_PACKAGE", "module_files", "modules_dir"]

MODULES_PACKAGE = "unumctl.render"


def modules_dir() -> Traversable:
    """The folder of the child modules (one sub-folder per module). The checkout's
    `terraform/modules/` when the imported unumctl is a source checkout's (its root holds
    pyproject.toml and terraform/modules/), else the wheel's package data
    `unumctl/render/modules/` read with importlib.resources. The folder may be missing (an
    installation without its package data): module_files says so."""
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file() and (checkout / "terraform" / "modules").is_dir():
        return checkout / "terraform" / "modules"
    return resources.files(MODULES_PACKAGE) / "modules"


def module_files(name: str) -> dict[str, str]:
    """{file name: text} of the `.tf` files of the child module `name` (e.g.
    "aws-unum-function"), from `modules_dir()`; its README.md and examples/ are not part of a
    deployment. Raises FileNotFoundError when there is no such module (an installation without
    its package data: reinstall unumctl)."""
    src = modules_dir() / name
    files = {f.name: f.read_text(encoding="utf-8") for f in src.iterdir()
             if f.is_file() and f.name.endswith(".tf")} if src.is_dir() else {}
    if not files:
        raise FileNotFoundError(f"{src}: Terraform module {name!r} missing from the unumctl "
                                "package; reinstall unumctl (its wheel ships terraform/modules as "
                                "unumctl/render/modules)")
    return dict(sorted(files.items()))
