"""Driving Terraform through python-terraform, shared by the aws and gcp targets.

Works around python-terraform 0.10.1's quirks on current Terraform (docs/architecture.md §8):
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
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Mapping

from .targets import TargetError

__all__ = ["NO_PLAN", "PLAN_FILE", "PlanSummary", "TerraformFailed", "TerraformRunner", "absolute_paths",
           "find_provider_mirror", "find_terraform", "plan_lines", "write_mirror_cli_config"]


class TerraformFailed(TargetError):
    """A terraform command that exited with an error: the one-line message of TargetError,
    plus `output`, everything the command printed (stderr, then stdout), for a caller that
    decides on the error's text (e.g. unumctl/gcp/propagation.py: retry a propagation delay)."""

    def __init__(self, message: str, output: str = ""):
        super().__init__(message)
        self.output = output


@dataclass
class PlanSummary:
    """What `terraform plan` would do: counts as Terraform prints them ("Plan: 3 to add, 0 to
    change, 1 to destroy": a replaced resource counts in add and destroy) and the resource
    addresses behind each count, from `terraform show -json PLANFILE` (`resource_changes[]`:
    `address`, `mode`, `change.actions`; https://developer.hashicorp.com/terraform/internals/json-format#change-representation).
    Data sources (mode "data") are not listed; `replace` repeats the addresses that are in both
    `add` and `destroy`."""

    add: int = 0
    change: int = 0
    destroy: int = 0
    resources: dict[str, list[str]] = field(default_factory=lambda: {k: [] for k in PLAN_LISTS})

    @property
    def changes(self) -> bool:
        return bool(self.add or self.change or self.destroy)

    def as_dict(self) -> dict[str, Any]:
        """{"add", "change", "destroy" (counts), "changes" (bool), "resources": {"add",
        "change", "destroy", "replace": [address]}}: the plan keys every target returns."""
        return {"add": self.add, "change": self.change, "destroy": self.destroy, "changes": self.changes,
                "resources": {k: list(v) for k, v in self.resources.items()}}

    @classmethod
    def from_plan_json(cls, doc: dict[str, Any]) -> "PlanSummary":
        """The summary of a `terraform show -json PLANFILE` document."""
        lists: dict[str, list[str]] = {k: [] for k in PLAN_LISTS}
        for rc in doc.get("resource_changes") or []:
            if rc.get("mode") == "data":
                continue
            actions = list((rc.get("change") or {}).get("actions") or [])
            addr = str(rc.get("address"))
            if "create" in actions and "delete" in actions:
                lists["replace"].append(addr)
                lists["add"].append(addr)
                lists["destroy"].append(addr)
            elif actions == ["create"]:
                lists["add"].append(addr)
            elif actions == ["update"]:
                lists["change"].append(addr)
            elif actions == ["delete"]:
                lists["destroy"].append(addr)
        for v in lists.values():
            v.sort()
        return cls(len(lists["add"]), len(lists["change"]), len(lists["destroy"]), lists)


PLAN_LISTS: tuple[str, ...] = ("add", "change", "destroy", "replace")
PLAN_FILE = "unumctl.tfplan"  # the saved plan, in the Terraform working directory
NO_PLAN: dict[str, Any] = {"add": None, "change": None, "destroy": None, "changes": None, "resources": None}
"""The plan keys when no plan could be made (a target says why in `not_done`)."""


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """Readable lines of a plan dict (PlanSummary.as_dict): `  + ADDRESS` to add, `  ~` to
    change, `  -` to destroy, `-/+` to replace, then Terraform's count line."""
    res = plan.get("resources")
    if not res:
        return []
    replaced = set(res.get("replace") or [])
    out = [f"  + {a}" for a in res["add"] if a not in replaced]
    out += [f"  ~ {a}" for a in res["change"]]
    out += [f"  - {a}" for a in res["destroy"] if a not in replaced]
    out += [f"-/+ {a}" for a in sorted(replaced)]
    out.append(f"Plan: {plan['add']} to add, {plan['change']} to change, {plan['destroy']} to destroy.")
    return out


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


def absolute_paths(env: dict[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
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

    def __init__(self, workdir: Path, env: dict[str, str] | None = None, stream: bool = True,
                 progress: Callable[[str], None] | None = None):
        """`stream`: echo the output of init/plan/apply/destroy line by line to `progress`
        (default: write the line to sys.stderr)."""
        from python_terraform import Terraform  # optional dependency (aws/gcp extras)

        self.stream = stream
        self.progress = progress or _to_stderr

        self.workdir = Path(workdir).resolve()
        self.bin = find_terraform()
        self.env = absolute_paths(env or {})
        self.tf = Terraform(working_dir=str(self.workdir), terraform_bin_path=self.bin)

    def _cmd(self, *args: str, **kwargs: Any) -> tuple[int, str, str]:
        """Run `terraform ARGS -no-color`; returns (exit code, stdout, stderr). With `stream`
        (the default for init/plan/apply/destroy), each output line is also written to
        `self.progress` as Terraform prints it (a long apply is not silent)."""
        if self.stream:
            return self._streamed(*args)
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

    def _streamed(self, *args: str) -> tuple[int, str, str]:
        """The command line python-terraform builds, run with both pipes read line by line
        (stderr in a thread) and every line echoed to `self.progress` as it arrives."""
        argv = self.tf.generate_cmd_string(args[0], *args[1:], no_color=True_flag())
        proc = subprocess.Popen(argv, cwd=self.workdir, env={**os.environ, **self.env}, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                                bufsize=1, errors="replace")
        err_lines: list[str] = []

        def pump(pipe: IO[str], into: list[str]) -> None:
            for ln in pipe:
                into.append(ln)
                self.progress(ln.rstrip("\n"))

        t = threading.Thread(target=pump, args=(proc.stderr, err_lines), daemon=True)
        t.start()
        out_lines: list[str] = []
        assert proc.stdout is not None
        pump(proc.stdout, out_lines)
        code = proc.wait()
        t.join()
        return code, "".join(out_lines), "".join(err_lines)

    def _quiet(self, *args: str) -> tuple[int, str, str]:
        """`_cmd` without streaming (for machine-read output: show -json, output -json)."""
        stream, self.stream = self.stream, False
        try:
            return self._cmd(*args)
        finally:
            self.stream = stream

    def _check(self, what: str, code: int, out: str, err: str, ok=(0,)) -> None:
        if code not in ok:
            lines = [ln.strip(" │╷╵") for ln in (err or out).splitlines() if ln.strip(" │╷╵")]
            first = next((ln for ln in lines if ln.startswith("Error")), lines[0] if lines else "")
            raise TerraformFailed(f"terraform {what} failed in {self.workdir}: {first}", f"{err}\n{out}")

    def fmt_check(self) -> list[str]:
        """Files `terraform fmt -check -recursive` would change (empty = well formatted)."""
        code, out, err = self._quiet("fmt", "-check", "-recursive", "-list=true")
        if code not in (0, 3):
            self._check("fmt", code, out, err)
        return [ln for ln in out.splitlines() if ln.strip()]

    def init(self) -> None:
        code, out, err = self._cmd("init", "-input=false")
        self._check("init", code, out, err)

    def validate_json(self) -> dict[str, Any]:
        """`terraform validate -json` as Terraform prints it ({"valid", "diagnostics": [{
        "severity", "summary", "detail", "range": {"filename", ...}}]}), every diagnostic of
        the run; {"valid": False, "error": stderr} when Terraform printed no JSON."""
        _, out, err = self._quiet("validate", "-json")
        return json.loads(out) if out.strip().startswith("{") else {"valid": False, "error": err}

    def validate(self) -> dict[str, Any]:
        """`validate_json()`; TargetError naming the first diagnostic when it is not valid."""
        result = self.validate_json()
        if not result.get("valid"):
            diags = result.get("diagnostics") or [{"summary": result.get("error", "?")}]
            raise TargetError(f"terraform validate failed in {self.workdir}: {diags[0].get('summary')}: "
                              f"{diags[0].get('detail', '')}".strip())
        return result

    def plan(self, out_file: str | None = None, variables: dict[str, str] | None = None,
             targets: list[str] | None = None) -> PlanSummary:
        """`terraform plan` saved to `out_file` (default PLAN_FILE, in the working directory),
        then read back with `terraform show -json` for the addresses. `variables` become
        `-var=KEY=VALUE`, `targets` `-target=ADDRESS` (checked by the caller:
        unumctl.savedplan.check_vars / check_targets). TargetError when either fails, or when
        Terraform's count line disagrees with the saved plan."""
        out_file = out_file or PLAN_FILE
        args = ["plan", "-input=false", "-detailed-exitcode", f"-out={out_file}"]
        args += [f"-var={k}={v}" for k, v in (variables or {}).items()]
        args += [f"-target={a}" for a in (targets or [])]
        code, out, err = self._cmd(*args)
        self._check("plan", code, out, err, ok=(0, 2))
        code, shown, err = self._quiet("show", "-json", out_file)
        self._check("show", code, shown, err)
        summary = PlanSummary.from_plan_json(json.loads(shown))
        m = _PLAN_RE.search(out)
        if m and tuple(int(x) for x in m.groups()) != (summary.add, summary.change, summary.destroy):
            raise TargetError(f"terraform plan in {self.workdir}: its summary ({m.group(0)}) does not match "
                              f"the saved plan's resource_changes ({summary.as_dict()}); please report it")
        return summary

    def apply(self, plan_file: str | None = None, variables: dict[str, str] | None = None,
              targets: list[str] | None = None) -> None:
        """`terraform apply` of the saved plan `plan_file` (exactly its changes; Terraform
        refuses with "Saved plan is stale" when the state changed since), else a new plan
        applied without asking, with `variables` (`-var=KEY=VALUE`) and `targets`
        (`-target=ADDRESS`; a saved plan carries its own). TerraformFailed (a TargetError)
        when it fails."""
        args = ["apply", "-input=false", "-auto-approve"]
        if plan_file:
            args.append(plan_file)
        else:
            args += [f"-var={k}={v}" for k, v in (variables or {}).items()]
            args += [f"-target={a}" for a in (targets or [])]
        code, out, err = self._cmd(*args)
        self._check("apply", code, out, err)

    def state_list(self) -> list[str]:
        """Addresses of the managed resources in the state (`terraform state list`, data
        sources left out); [] when there is no state."""
        code, out, _ = self._quiet("state list")  # python-terraform puts flags after the first word
        if code != 0:
            return []
        return sorted(a for a in (ln.strip() for ln in out.splitlines())
                      if a and not a.startswith("data.") and ".data." not in a)

    def destroy(self, variables: dict[str, str] | None = None) -> list[str]:
        """`terraform apply -destroy` (with `variables` as `-var=KEY=VALUE`); returns the
        addresses destroyed (in the state before, gone after). TargetError when it fails."""
        before = self.state_list()
        code, out, err = self._cmd("apply", "-destroy", "-input=false", "-auto-approve",
                                   *[f"-var={k}={v}" for k, v in (variables or {}).items()])
        self._check("destroy", code, out, err)
        left = set(self.state_list())
        return [a for a in before if a not in left]

    def outputs(self) -> dict[str, Any]:
        code, out, err = self._quiet("output", "-json")
        self._check("output", code, out, err)
        return {k: v.get("value") for k, v in json.loads(out or "{}").items()}


def _to_stderr(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def True_flag():
    """python-terraform's marker for a bare flag (`-no-color`)."""
    from python_terraform import IsFlagged

    return IsFlagged
