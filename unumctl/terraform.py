"""Driving Terraform through python-terraform, shared by the aws and gcp targets.

Works around python-terraform 0.10.1's quirks on current Terraform (ARCHITECTURE.md §5):
`destroy()` passes the removed `-force` flag (we call `apply -destroy`), `plan` returns 2
when there are changes (`-detailed-exitcode`), `output(name)` needs `full_value=True`.
Provider installation can be pinned to a filesystem mirror (no registry reachable) by
writing a CLI config file and pointing TF_CLI_CONFIG_FILE at it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .targets import TargetError


@dataclass
class PlanSummary:
    """Counts from `terraform plan` plus whether anything changes."""

    add: int = 0
    change: int = 0
    destroy: int = 0

    @property
    def changes(self) -> bool:
        return bool(self.add or self.change or self.destroy)

    def as_dict(self) -> dict[str, int]:
        return {"add": self.add, "change": self.change, "destroy": self.destroy}


_PLAN_RE = re.compile(r"Plan: (\d+) to add, (\d+) to change, (\d+) to destroy")


def find_terraform() -> str:
    """Path of the terraform binary; TargetError with the next step when missing."""
    path = os.environ.get("UNUMCTL_TERRAFORM") or shutil.which("terraform")
    if not path:
        raise TargetError("terraform binary not found on PATH; install Terraform >= 1.5 "
                          "(https://developer.hashicorp.com/terraform/install) or set UNUMCTL_TERRAFORM")
    return path


def find_provider_mirror(provider: str = "hashicorp/aws") -> Path | None:
    """A filesystem mirror directory that holds `registry.terraform.io/<provider>`, from
    UNUMCTL_TF_PLUGIN_MIRROR or well-known locations (None when there is none)."""
    candidates = [os.environ.get("UNUMCTL_TF_PLUGIN_MIRROR"), "/opt/tf-plugins",
                  str(Path.home() / ".terraform.d" / "plugins"), "/usr/share/terraform/plugins"]
    for c in candidates:
        if c and (Path(c) / "registry.terraform.io" / provider).is_dir():
            return Path(c)
    return None


def write_mirror_cli_config(path: Path, mirror: Path) -> Path:
    """Write a Terraform CLI config installing every provider from `mirror` only; returns the
    config's absolute path (Terraform runs in another working directory, where a relative
    path would name another file)."""
    path = Path(path).resolve()
    path.write_text('provider_installation {\n  filesystem_mirror {\n'
                    f'    path    = "{Path(mirror).resolve()}"\n    include = ["registry.terraform.io/*/*"]\n'
                    '  }\n  direct {\n    exclude = ["registry.terraform.io/*/*"]\n  }\n}\n')
    return path


# environment variables naming a file, resolved by Terraform from its working directory
PATH_VARIABLES = ("TF_CLI_CONFIG_FILE", "TF_PLUGIN_CACHE_DIR", "TF_DATA_DIR")


def absolute_paths(env: dict[str, str], base: dict[str, str] | None = None) -> dict[str, str]:
    """`env` plus, for each of PATH_VARIABLES set to a relative path in `env` or in `base`
    (default: os.environ), its absolute form (from this process's working directory), so
    that Terraform, which runs in the module's directory, finds the same file. Empty values
    (meaning "none") are kept."""
    base = os.environ if base is None else base
    out = dict(env)
    for key in PATH_VARIABLES:
        value = out.get(key, base.get(key))
        if value and not os.path.isabs(value):
            out[key] = os.path.abspath(value)
    return out


class TerraformRunner:
    """Terraform in one working directory (`workdir`), with extra environment `env`."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None):
        from python_terraform import Terraform  # optional dependency (aws/gcp extras)

        self.workdir = Path(workdir).resolve()
        self.bin = find_terraform()
        self.env = absolute_paths(env or {})
        self.tf = Terraform(working_dir=str(self.workdir), terraform_bin_path=self.bin)

    def _cmd(self, *args: str, **kwargs: Any) -> tuple[int, str, str]:
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            code, out, err = self.tf.cmd(*args, no_color=True_flag(), **kwargs)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        return code, out or "", err or ""

    def _check(self, what: str, code: int, out: str, err: str, ok=(0,)) -> None:
        if code not in ok:
            lines = [ln.strip(" │╷╵") for ln in (err or out).splitlines() if ln.strip(" │╷╵")]
            first = next((ln for ln in lines if ln.startswith("Error")), lines[0] if lines else "")
            raise TargetError(f"terraform {what} failed in {self.workdir}: {first}")

    def fmt_check(self) -> list[str]:
        """Files `terraform fmt -check -recursive` would change (empty = well formatted)."""
        code, out, err = self._cmd("fmt", "-check", "-recursive", "-list=true")
        if code not in (0, 3):
            self._check("fmt", code, out, err)
        return [ln for ln in out.splitlines() if ln.strip()]

    def init(self) -> None:
        code, out, err = self._cmd("init", "-input=false")
        self._check("init", code, out, err)

    def validate(self) -> dict[str, Any]:
        code, out, err = self._cmd("validate", "-json")
        result = json.loads(out) if out.strip().startswith("{") else {"valid": False, "error": err}
        if not result.get("valid"):
            diags = result.get("diagnostics") or [{"summary": result.get("error", "?")}]
            raise TargetError(f"terraform validate failed in {self.workdir}: {diags[0].get('summary')}: "
                              f"{diags[0].get('detail', '')}".strip())
        return result

    def plan(self, out_file: str | None = None) -> PlanSummary:
        args = ["plan", "-input=false", "-detailed-exitcode"]
        if out_file:
            args.append(f"-out={out_file}")
        code, out, err = self._cmd(*args)
        self._check("plan", code, out, err, ok=(0, 2))
        m = _PLAN_RE.search(out)
        return PlanSummary(*(int(x) for x in m.groups())) if m else PlanSummary()

    def apply(self, plan_file: str | None = None) -> None:
        args = ["apply", "-input=false", "-auto-approve"]
        if plan_file:
            args.append(plan_file)
        code, out, err = self._cmd(*args)
        self._check("apply", code, out, err)

    def destroy(self) -> None:
        code, out, err = self._cmd("apply", "-destroy", "-input=false", "-auto-approve")
        self._check("destroy", code, out, err)

    def outputs(self) -> dict[str, Any]:
        code, out, err = self._cmd("output", "-json")
        self._check("output", code, out, err)
        return {k: v.get("value") for k, v in json.loads(out or "{}").items()}


def True_flag():
    """python-terraform's marker for a bare flag (`-no-color`)."""
    from python_terraform import IsFlagged

    return IsFlagged
