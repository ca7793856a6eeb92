"""`--stage NAME` on every command that addresses a deployment (unumctl/cliopts.py STAGE,
unumctl/deploy/stage.py): the commands are found by walking the Typer app (every command
with `--cloud`, plus `serve`), so a new deployment command without `--stage` fails here; a
bad name is refused in one line naming the flag (or the manifest field) and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import typer
import yaml
from typer.main import get_command

from unumctl.cli import app as unumctl_app

ROOT = Path(__file__).resolve().parents[2]

# commands with --cloud that address no deployment, and why
NOT_A_DEPLOYMENT = {
    "build": "builds bundles into APP/.unum/build/<cloud>/, for any stage",
    "cost": "runs on a fresh emulated deployment of its own (docs/cost.md), not a deployed stage",
}
ALSO_A_DEPLOYMENT = {"serve"}  # no --cloud: it hosts the apps' local stage


def _options(cmd) -> set[str]:
    return {o for p in cmd.params for o in getattr(p, "opts", [])}


def commands_lacking_stage(typer_app: typer.Typer) -> list[str]:
    """The commands of `typer_app` that address a deployment (they take --cloud, or are in
    ALSO_A_DEPLOYMENT; not NOT_A_DEPLOYMENT) and have no --stage option."""
    group = get_command(typer_app)
    out = []
    for name, cmd in sorted(group.commands.items()):  # type: ignore[attr-defined]
        opts = _options(cmd)
        addresses = ("--cloud" in opts or name in ALSO_A_DEPLOYMENT) and name not in NOT_A_DEPLOYMENT
        if addresses and "--stage" not in opts:
            out.append(name)
    return out


def test_every_command_that_addresses_a_deployment_has_stage():
    assert commands_lacking_stage(unumctl_app) == []


def test_the_walk_finds_the_deployment_commands_of_the_issue():
    group = get_command(unumctl_app)
    with_stage = {n for n, c in group.commands.items() if "--stage" in _options(c)}  # type: ignore[attr-defined]
    assert with_stage >= {"plan", "apply", "destroy", "outputs", "status", "invoke", "result", "resume",
                          "sessions", "describe", "history", "logs", "trace", "send-task-success",
                          "send-task-failure", "send-task-heartbeat", "tune", "serve"}


def test_the_walk_catches_a_deployment_command_without_stage():
    toy = typer.Typer()

    @toy.command()
    def plan(app_dir: Path, cloud: str = typer.Option("aws", "--cloud")) -> None:
        """A deployment command that forgot --stage."""

    @toy.command()
    def graph(app_dir: Path) -> None:
        """Addresses no deployment."""

    assert commands_lacking_stage(toy) == ["plan"]


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unumctl.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


KINDS = (["plan", "examples/wordcount", "--cloud", "aws"], ["sessions", "examples/wordcount"],
         ["invoke", "examples/wordcount", "--data", "examples/wordcount/input.json"])
BAD_NAMES = ("Prod", "my-stage", "my_stage", "1st", "elevenchars")


def _assert_refused(code: int, stderr: str, args: list[str], bad: str) -> None:
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, (args, bad, stderr)
    assert "--stage" in lines[0] and f"'{bad}' is not a stage name" in lines[0], lines[0]
    assert "e.g. --stage prod" in lines[0], lines[0]


def test_a_bad_stage_name_is_refused_in_one_line_on_each_kind_of_command(monkeypatch):
    """Every bad name on each kind of command, in this process (the CLI's own parsing and
    error path, typer.testing.CliRunner), and one in a real `python -m unumctl.cli` process:
    its stderr and exit status as a user sees them."""
    from typer.testing import CliRunner

    monkeypatch.chdir(ROOT)
    for args in KINDS:
        for bad in BAD_NAMES:
            r = CliRunner().invoke(unumctl_app, [*args, "--stage", bad])
            _assert_refused(r.exit_code, r.stderr, args, bad)
    r = _cli(*KINDS[0], "--stage", BAD_NAMES[0])
    _assert_refused(r.returncode, r.stderr, KINDS[0], BAD_NAMES[0])


def test_a_bad_manifest_stage_is_refused_in_one_line_naming_the_field(tmp_path):
    from unumctl.manifest import AppError, load_manifest

    for bad in ("Prod", "a-b", 7):
        (tmp_path / "unumctl.yaml").write_text(yaml.safe_dump(
            {"app": "staged", "workflow": {"ir": "ir"}, "functions": {}, "stage": bad}))
        try:
            load_manifest(tmp_path)
        except AppError as exc:
            msg = str(exc)
        else:
            raise AssertionError(f"stage {bad!r} was accepted")
        assert "\n" not in msg and msg.startswith(f"{tmp_path / 'unumctl.yaml'}: stage: "), msg
        assert "is not a stage name" in msg and "e.g. stage: prod" in msg, msg
