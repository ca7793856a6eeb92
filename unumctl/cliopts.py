"""Command-line conventions shared by the `unumctl` commands (kept out of cli.py).

- `GlobalOptionsGroup`: the global options (`--debug`, `--region`, `--profile`,
  `--architecture`, `--lambda-runtime`, `--version`)
  are accepted after the subcommand too, as SAM and Terraform users type them
  (`unumctl plan APP --region eu-west-1`);
- `deploy_cloud`: the cloud of `plan`/`apply`/`destroy`/`outputs`/`status` when `--cloud`
  is not given, taken from the manifest's `clouds:` section;
- `check_workers`: `--workers` must be at least 1.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperGroup

from .deploy.settings import Clouds
from .targets import TARGET_MODULES

# global option -> takes a value
GLOBAL_OPTIONS: dict[str, bool] = {"--debug": False, "--region": True, "--profile": True,
                                   "--architecture": True, "--lambda-runtime": True, "--version": False}


def hoist_global_options(args: list[str], commands: set[str]) -> list[str]:
    """Move the global options that follow the subcommand to before it.

    `args` is the argument list after the program name; `commands` the subcommand names.
    Arguments after a `--` are left alone, as is the value of another option that happens to
    look like a global option only when it is a global option's own value. Returns a new list;
    `args` is not changed. Example:
    ["plan", "app", "--region", "eu-west-1"] -> ["--region", "eu-west-1", "plan", "app"].
    """
    pos = next((i for i, a in enumerate(args) if a in commands), None)
    if pos is None:
        return list(args)
    head, rest = list(args[:pos + 1]), args[pos + 1:]
    moved: list[str] = []
    kept: list[str] = []
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--":
            kept.extend(rest[i:])
            break
        name = a.split("=", 1)[0]
        if name in GLOBAL_OPTIONS:
            moved.append(a)
            if GLOBAL_OPTIONS[name] and "=" not in a and i + 1 < len(rest):
                moved.append(rest[i + 1])
                i += 1
        else:
            kept.append(a)
        i += 1
    return head[:pos] + moved + head[pos:] + kept if moved else list(args)


class GlobalOptionsGroup(TyperGroup):
    """The top-level command group: hoists global options given after the subcommand
    (see hoist_global_options) before Click parses the arguments."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args, set(self.commands)))


def deploy_cloud(cloud: str | None, clouds: Clouds, command: str) -> str:
    """The cloud for a deployment command (`plan`, `apply`, `destroy`, `outputs`, `status`).

    `cloud`: the --cloud flag or None; `clouds`: the manifest's typed `clouds:` section
    (deploy/settings.py; the deployable clouds are those with a settings section). Without the
    flag, the one deployable cloud the manifest names is used. Raises ValueError (one line,
    naming the fix) when the flag names a target that does not deploy (local), or when the
    manifest names none or several."""
    choices = "|".join(Clouds.deployable())
    if cloud is not None:
        if cloud in TARGET_MODULES and cloud not in Clouds.deployable():
            raise ValueError(f"'{command}' deploys to a cloud and is not available for --cloud {cloud}; "
                             f"pass --cloud {choices}")
        return cloud
    named = clouds.named()
    if len(named) == 1:
        return named[0]
    if not named:
        raise ValueError(f"'{command}' needs a cloud: pass --cloud {choices} "
                         "(or name one under clouds: in unumctl.yaml)")
    raise ValueError(f"'{command}': unumctl.yaml names clouds {' and '.join(named)}; "
                     f"pass --cloud {choices}")


def check_workers(workers: int) -> int:
    """`--workers` must be >= 1; raises ValueError naming the flag and the fix."""
    if workers < 1:
        raise ValueError(f"--workers: {workers} must be at least 1 (processes per function, e.g. --workers 2)")
    return workers
