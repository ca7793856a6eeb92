"""Where a deployment's state lives, keyed by (cloud, region, stage) (unumctl/deploy/statepath.py),
the stage of the model (manifest `stage:` < `--stage`), and the state from before stages:
moved to the default stage in the region it was deployed in, or refused in one line, never
dropped. Local: two stages of one app keep separate sessions (driven through the CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
from pathlib import Path

import pytest
import yaml

from unumctl.deploy.appgraph import build
from unumctl.deploy.statepath import adopt_unkeyed_local, key_of, local_dir, terraform_dir
from unumctl.pipeline import load as load_app



def _app(root: Path, stage: str | None = None, name: str = "staged") -> Path:
    """A one-function app (`A` returns {"got": input}); `stage`: the manifest's `stage:`."""
    (root / "ir").mkdir(parents=True)
    (root / "ir" / "A.yaml").write_text(yaml.safe_dump({"Name": "A", "Start": True}))
    (root / "fn").mkdir()
    (root / "fn" / "app.py").write_text("def handler(event, context):\n    return {'got': event}\n")
    manifest = {"version": 1, "app": name, "workflow": {"ir": "ir"},
                "functions": {"A": {"code": "fn", "handler": "app.handler"}},
                "clouds": {"aws": {"region": "us-east-1"}}}
    if stage is not None:
        manifest["stage"] = stage
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    return root


def _aws_workdir(app, **options) -> Path:
    from unumctl.aws.target import AwsTarget
    return AwsTarget(app, **options).workdir


def test_terraform_state_of_each_region_and_stage_is_its_own(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    dirs = {(r, s): _aws_workdir(a, region=r, stage=s)
            for r, s in (("us-east-1", "dev"), ("us-west-2", "dev"), ("us-east-1", "prod"))}
    assert len(set(dirs.values())) == 3
    for (r, s), d in dirs.items():
        assert d == a.root / ".unum" / "terraform" / "aws" / r / s
        assert key_of(d) == ("aws", r, s)
    assert _aws_workdir(a) == dirs[("us-east-1", "dev")]  # the manifest's region, the default stage


def test_a_region_or_stage_that_is_a_path_is_refused(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    for region, stage in (("../x", "dev"), ("us-east-1", "../dev"), ("us-east-1", "Prod")):
        with pytest.raises(ValueError) as e:
            terraform_dir(a, "aws", region, stage)
        assert "\n" not in str(e.value) and ("--region" in str(e.value) or "--stage" in str(e.value))


def _unkeyed_aws(app_root: Path, region: str | None = "us-east-1") -> Path:
    old = app_root / ".unum" / "terraform" / "aws"
    old.mkdir(parents=True)
    (old / "main.tf").write_text("# rendered\n")
    (old / "terraform.tfstate").write_text('{"serial": 7}')
    if region:
        (old / "terraform.tfvars.json").write_text(json.dumps({"region": region}))
    return old


def test_unkeyed_state_moves_to_the_default_stage_of_its_region_and_another_region_starts_fresh(tmp_path, capsys):
    a = load_app(_app(tmp_path / "app"))
    old = _unkeyed_aws(a.root, "us-east-1")
    west = _aws_workdir(a, region="us-west-2")  # a later --region us-west-2
    assert west == old / "us-west-2" / "dev" and not west.exists()  # a fresh deployment: no state
    moved = old / "us-east-1" / "dev"
    assert (moved / "terraform.tfstate").read_text() == '{"serial": 7}'
    assert not (old / "terraform.tfstate").exists() and not (old / "main.tf").exists()
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(old) in err[0] and str(moved) in err[0], err
    assert _aws_workdir(a, region="us-east-1") == moved  # the first region's state, as it was
    assert capsys.readouterr().err == ""  # said once


def test_unkeyed_state_whose_region_cannot_be_read_is_refused_and_kept(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    old = _unkeyed_aws(a.root, None)
    with pytest.raises(ValueError) as e:
        _aws_workdir(a, region="us-east-1")
    msg = str(e.value)
    assert "\n" not in msg and "before stages" in msg and f"{old}/REGION/dev/" in msg, msg
    assert (old / "terraform.tfstate").read_text() == '{"serial": 7}'


def test_unkeyed_state_beside_a_keyed_one_is_refused_and_both_kept(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    old = _unkeyed_aws(a.root, "us-east-1")
    (old / "us-east-1" / "dev").mkdir(parents=True)
    (old / "us-east-1" / "dev" / "terraform.tfstate").write_text('{"serial": 9}')
    with pytest.raises(ValueError) as e:
        _aws_workdir(a, region="us-east-1")
    assert "exists too" in str(e.value) and "\n" not in str(e.value)
    assert (old / "terraform.tfstate").read_text() == '{"serial": 7}'
    assert (old / "us-east-1" / "dev" / "terraform.tfstate").read_text() == '{"serial": 9}'


def test_an_interrupted_move_is_finished_by_the_next_command(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    old = _unkeyed_aws(a.root, "us-east-1")
    os.rename(old, old.with_name("aws.unkeyed"))  # killed after the first rename
    assert (_aws_workdir(a) / "terraform.tfstate").read_text() == '{"serial": 7}'
    assert not old.with_name("aws.unkeyed").exists()


def test_unkeyed_gcp_state_moves_to_the_region_of_its_main_tf(tmp_path):
    a = load_app(_app(tmp_path / "app"))
    old = a.root / ".unum" / "terraform" / "gcp"
    old.mkdir(parents=True)
    (old / "main.tf").write_text('variable "region" {\n  type    = string\n  default = "europe-west1"\n}\n')
    (old / "terraform.tfstate").write_text("{}")
    d = terraform_dir(a, "gcp", "us-central1", "prod", say=lambda line: None)
    assert d == old / "us-central1" / "prod"
    assert (old / "europe-west1" / "dev" / "terraform.tfstate").exists()


def test_the_model_carries_the_stage_cli_over_manifest_over_default(tmp_path):
    plain = load_app(_app(tmp_path / "plain"))
    staged = load_app(_app(tmp_path / "staged", stage="prod"))
    assert build(plain, "local").stage == "dev"
    assert build(staged, "local").stage == "prod"
    assert build(staged, "local", stage="qa").stage == "qa"
    assert build(staged, "aws", stage="qa").stage == "qa"
    assert _aws_workdir(staged).parts[-1] == "prod" and _aws_workdir(staged, stage="qa").parts[-1] == "qa"
    with pytest.raises(ValueError):
        build(plain, "local", stage="Bad")


def test_unkeyed_local_state_moves_to_the_default_stage_but_not_while_in_use(tmp_path):
    from unumctl.deploy.statepath import hold_runner_lock

    a = load_app(_app(tmp_path / "app"))
    old = a.root / ".unum" / "local"
    old.mkdir(parents=True)
    (old / "unum.db").write_bytes(b"db")
    (old / "blobs").mkdir()
    lock = hold_runner_lock(old)  # a running invoke or serve on the old directory
    try:
        with pytest.raises(ValueError) as e:
            adopt_unkeyed_local(a)
        assert "running unumctl" in str(e.value) and "\n" not in str(e.value)
        assert (old / "unum.db").read_bytes() == b"db"
    finally:
        os.close(lock)
    lines: list[str] = []
    assert local_dir(a, "prod", say=lines.append) == old / "prod"
    assert (old / "dev" / "unum.db").read_bytes() == b"db" and (old / "dev" / "blobs").is_dir()
    assert len(lines) == 1 and str(old / "dev") in lines[0]


def _cli(*args: str) -> subprocess.CompletedProcess:
    """The CLI in this process (typer.testing.CliRunner: its parsing, commands and exit
    status; a local invoke still runs its functions in worker processes)."""
    from typer.testing import CliRunner

    from unumctl.cli import app as cli

    r = CliRunner().invoke(cli, list(args))
    return subprocess.CompletedProcess(list(args), r.exit_code, r.stdout, r.stderr)


def test_two_stages_of_one_app_on_local_keep_separate_sessions(tmp_path):
    app = _app(tmp_path / "app", stage="blue")
    data = tmp_path / "in.json"
    data.write_text('{"x": 1}')
    r = _cli("invoke", str(app), "--data", str(data), "--session", "s-blue")  # the manifest's stage
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"x": 1}}, r.stderr
    r = _cli("invoke", str(app), "--data", str(data), "--session", "s-green", "--stage", "green")
    assert r.returncode == 0, r.stderr
    assert (app / ".unum" / "local" / "blue" / "unum.db").is_file()
    assert (app / ".unum" / "local" / "green" / "unum.db").is_file()
    blue = _cli("sessions", str(app), "--json")
    green = _cli("sessions", str(app), "--json", "--stage", "green")
    assert [s["session"] for s in json.loads(blue.stdout)] == ["s-blue"], blue.stderr
    assert [s["session"] for s in json.loads(green.stdout)] == ["s-green"], green.stderr
    r = _cli("result", str(app), "s-blue", "--stage", "green")
    assert r.returncode == 2 and "no session s-blue" in r.stderr, r.stderr
    r = _cli("result", str(app), "s-blue")
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"x": 1}}, r.stderr
    # the same session id in another stage is another session (not "reused with a different input")
    data.write_text('{"x": 2}')
    r = _cli("invoke", str(app), "--data", str(data), "--session", "s-blue", "--stage", "green")
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"x": 2}}, r.stderr


def test_a_saved_plan_of_another_stage_is_refused_naming_its_region_and_stage(tmp_path):
    from unumctl import savedplan
    from unumctl.targets import TargetError

    a = load_app(_app(tmp_path / "app"))
    plan = tmp_path / "p.tfplan"
    plan.write_bytes(b"plan")
    prod = terraform_dir(a, "aws", "us-east-1", "prod")
    savedplan.write_record(plan, app=a.name, cloud="aws", workdir=prod, digest={}, summary={},
                           variables={}, targets=[])
    assert savedplan.read_record(plan, a.name, "aws", prod)["workdir"] == str(prod)
    with pytest.raises(TargetError) as e:
        savedplan.read_record(plan, a.name, "aws", terraform_dir(a, "aws", "us-east-1", "dev"))
    assert "made for region us-east-1 stage prod, not region us-east-1 stage dev" in str(e.value)
    assert "--stage prod" in str(e.value)


def test_failure_paths_into_a_stages_bundles_are_mapped_to_the_users_source(tmp_path):
    from unumctl.failure import _BUNDLE_RE, _user_frame

    p = "/x/app/.unum/local/prod/bundles/A-0123456789abcdef/app.py"
    m = _BUNDLE_RE.search(textwrap.dedent(f'File "{p}", line 3'))
    assert m and m.group("root") == "/x/app" and m.group("fn") == "A" and m.group("rel") == "app.py"
    assert not _user_frame(p) and not _user_frame("/x/app/.unum/local/bundles/A-0123456789abcdef/app.py")
    v = "/x/app/.unum/local/prod/versions/00112233445566ff/A-0123456789abcdef/app.py"  # a version's copy
    m = _BUNDLE_RE.search(f'File "{v}", line 3')
    assert m and m.group("root") == "/x/app" and m.group("fn") == "A" and m.group("rel") == "app.py"
    assert not _user_frame(v)


def test_every_model_builder_gets_the_stage_as_a_str(tmp_path, monkeypatch):
    from unumctl import registry
    from unumctl.deploy import appgraph

    seen = []
    real = registry.part

    def spy(name, field):
        got = real(name, field)
        if field != "model":
            return got
        return lambda app, flags: (seen.append(flags["stage"]), got(app, flags))[1]

    monkeypatch.setattr(appgraph.registry, "part", spy)
    staged = load_app(_app(tmp_path / "app", stage="blue"))
    appgraph.build(staged, "local")
    appgraph.build(staged, "local", stage=None)
    appgraph.build(staged, "local", stage="qa")
    assert seen == ["blue", "blue", "qa"]
