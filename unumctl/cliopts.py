"""Command-line conventions shared by the `unumctl` commands (kept out of cli.py).

- `GlobalOptionsGroup`: the global options (`--debug`, `--region`, `--profile`,
  `--architecture`, `--lambda-runtime`, `--version`)
  are accepted after the subcommand too, as SAM and Terraform users type them
  (`unumctl plan APP --region eu-west-1`);
- `deploy_cloud`: the cloud of `plan`/`apply`/`destroy`/`outputs`/`status` when `--cloud`
  is not given, taken from the manifest's `clouds:` section;
- `check_workers`: `--workers` must be at least 1;
- `STAGE`: the `--stage NAME` option of every command that addresses a deployment (checked
  here, one line naming the flag and the fix; unumctl/deploy/stage.py);
- `suggest_commands`: the "Did you mean" of an unknown command, never proposing a destructive
  command for a non-destructive one (`deploy` -> `apply`, not `destroy`);
- usage errors (unknown command, missing option...) are one line on stderr, exit 2.
"""

from __future__ import annotations

import difflib
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from . import registry
from .deploy.settings import Clouds
from .deploy.stage import DEFAULT_STAGE, stage_problem

__all__ = ["GlobalOptionsGroup", "STAGE", "check_workers", "deploy_cloud", "hoist_global_options",
           "suggest_commands"]

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


# Click's exceptions as Typer raises them (recent Typer vendors Click as typer._click)
_EXC = sys.modules[typer.BadParameter.__module__]
UsageError, ClickException = _EXC.UsageError, _EXC.ClickException
NoArgsIsHelpError = getattr(_EXC, "NoArgsIsHelpError", ())

# commands that delete deployed resources: proposed only for a near-certain typo of their name
DESTRUCTIVE = frozenset({"destroy"})
# what users of other tools type -> our command (SAM/Serverless `deploy`, Terraform `show`)
ALIASES = {"deploy": "apply", "up": "apply", "run": "invoke", "start": "invoke", "show": "status"}


def suggest_commands(typed: str, commands: list[str]) -> list[str]:
    """The commands to propose for the unknown command `typed` (difflib close matches, best
    first, plus ALIASES). A DESTRUCTIVE command is proposed only when `typed` is a near-certain
    typo of it (similarity >= 0.8, e.g. `destory`), so `deploy` gets `apply`, never `destroy`."""
    out = [ALIASES[typed]] if ALIASES.get(typed) in commands else []
    for m in difflib.get_close_matches(typed, commands, n=3, cutoff=0.6):
        if m in DESTRUCTIVE and difflib.SequenceMatcher(None, typed, m).ratio() < 0.8:
            continue
        if m not in out:
            out.append(m)
    return out


class GlobalOptionsGroup(TyperGroup):
    """The top-level command group: hoists global options given after the subcommand
    (see hoist_global_options) before Click parses the arguments; suggests commands with
    `suggest_commands`; prints usage errors as one line (exit 2) instead of Rich boxes."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        return super().parse_args(ctx, hoist_global_options(args, set(self.commands)))

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        try:
            return self._click_resolve_command(ctx, args)  # without Typer's own suggestions
        except UsageError as e:
            matches = suggest_commands(args[0], list(self.commands)) if args else []
            if matches:
                e.message = f"{e.message.rstrip('.')}; did you mean {' or '.join(map(repr, matches))}?"
            raise

    def main(self, args: Any = None, prog_name: Any = None, complete_var: Any = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            rv = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except NoArgsIsHelpError as e:  # bare `unumctl`: the help, as before
            typer.echo(e.ctx.get_help() if e.ctx else "", err=True)
            sys.exit(e.exit_code)
        except ClickException as e:
            ctx = getattr(e, "ctx", None)
            sub = ctx.command_path[len(ctx.find_root().command_path):].strip() if ctx else ""
            where = f"{sub}: " if sub else ""
            see = f" (see: {ctx.command_path} --help)" if ctx else ""
            typer.echo(f"unumctl: {where}{e.format_message()}{see}", err=True)
            sys.exit(e.exit_code)
        except typer.Abort:
            typer.echo("unumctl: aborted", err=True)
            sys.exit(1)
        sys.exit(rv if isinstance(rv, int) else 0)


def deploy_cloud(cloud: str | None, clouds: Clouds, command: str) -> str:
    """The cloud for a deployment command (`plan`, `apply`, `destroy`, `outputs`, `status`).

    `cloud`: the --cloud flag or None; `clouds`: the manifest's typed `clouds:` section
    (deploy/settings.py; the deployable clouds are those with a settings section). Without the
    flag, the one deployable cloud the manifest names is used. Raises ValueError (one line,
    naming the fix) when the flag names a target that does not deploy (local), or when the
    manifest names none or several."""
    choices = "|".join(Clouds.deployable())
    if cloud is not None:
        if cloud in registry.names() and cloud not in Clouds.deployable():
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


def _check_stage(value: str | None) -> str | None:
    """The `--stage` callback: the value when it is a stage name (or not given), else a usage
    error (one line, exit 2) saying the rule and an example."""
    problem = None if value is None else stage_problem(value)
    if problem:
        raise typer.BadParameter(f"{problem}; e.g. --stage prod")
    return value


STAGE: Any = typer.Option(
    None, "--stage", metavar="NAME", callback=_check_stage,
    help=f"Deployment stage: a separate deployment of the app, with its own resources and state "
         f"(keyed by cloud, region and stage; 1-10 of a-z 0-9). Default: the manifest's stage:, else "
         f"{DEFAULT_STAGE}.")
"""`--stage NAME` (None = not given: the manifest's `stage:`, else DEFAULT_STAGE), beside the
global `--region`, on every command that addresses a deployment (tests/unumctl/test_cliopts_stage.py)."""
