"""Issue 33 items 7 and 8, the files unumctl reads and writes on the user's machine
(docs/security.md "Files unumctl reads and writes on your machine", unumctl/safefile.py):

- `serve --state DIR` refuses a directory others can write or that is not the user's, and
  never writes through a link planted at `tags.tmp` / `serve.tmp`;
- `emulate --env-file F` does not overwrite an existing F without --force, removes only
  the file it wrote, never follows a planted `F.tmp`, and names a directory or a missing
  folder in one line;
- plan files, saved-plan records, manifests and state machines are read with a size bound,
  a regular-file check and a nesting/alias-bounded parser: an alias bomb, a FIFO, /dev/zero
  or 20,000 levels of nesting are one line, not a hang or a traceback;
- `tune --out .` is one line.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import typer
import pytest

from unumctl_testing.apps import make_app, make_sfn_app, sfn_task
from tests.unumctl.test_cli import cli, one_error
from unumctl import savedplan
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl.safefile import UnsafeFileError, load_yaml
from unumctl.serve.service import NAMES, Service
from unumctl.targets import TargetError
from unumctl.tuning import planfile

ROOT = Path(__file__).resolve().parents[2]
FNS = {"Split", "Mapper", "Reducer"}
ECHO = "def handler(event, context):\n    return event\n"
# "billion laughs": nine levels of nine aliases, 9^9 (387 million) strings once expanded
BOMB = "".join(f"  l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['lol'] * 9)}]\n"
               for i in range(9))


def _victim(tmp_path: Path) -> Path:
    v = tmp_path / "victim.txt"
    v.write_text("the user's file\n")
    return v


# ---------------------------------------------------------------- serve --state

def test_serve_refuses_a_state_directory_others_can_write(tmp_path):
    state = tmp_path / "shared"
    state.mkdir()
    state.chmod(0o777)
    with pytest.raises(UnsafeFileError) as err:
        Service([], state).start()
    msg = str(err.value)
    assert "\n" not in msg and str(state) in msg and "chmod go-w" in msg


def test_serve_refuses_a_state_directory_of_another_user(tmp_path):
    state = tmp_path / "theirs"
    state.mkdir(mode=0o700)
    if os.getuid() == 0:
        os.chown(state, 65534, -1)
    else:
        state = Path("/")  # root's
    with pytest.raises(UnsafeFileError, match="not by you"):
        Service([], state).start()


def test_serve_cli_world_writable_state_is_one_line(tmp_path):
    state = tmp_path / "shared"
    state.mkdir()
    state.chmod(0o1777)  # sticky like /tmp: others still create names in it
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "serve", "--state", str(state), "--port", "0"],
                          capture_output=True, text=True, cwd=ROOT, timeout=20)
    rc, err = proc.returncode, [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert rc == 2 and "others can write it" in one_error(err) and str(state) in one_error(err)


def test_serve_creates_a_missing_state_directory_private(tmp_path):
    state = tmp_path / "a" / "state"
    svc = Service([], state)
    svc.start()
    svc.close()
    assert state.stat().st_mode & 0o777 == 0o700


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A started Service hosting one Step Functions app `fns`."""
    root = tmp_path_factory.mktemp("files")
    app = make_sfn_app(root / "fns", {"StartAt": "Echo", "States": {"Echo": sfn_task("Echo")}},
                       {"Echo": ECHO}, name="fns")
    svc = Service([app], root / "state")
    svc.start()
    try:
        yield svc
    finally:
        svc.close()


def test_serve_tags_never_written_through_a_planted_link(served, tmp_path):
    victim = _victim(tmp_path)
    served.state.mkdir(mode=0o700, exist_ok=True)
    planted = served.state / "tags.tmp"
    planted.symlink_to(victim)
    try:
        served.tag(served.arns.machine("fns"), [{"key": "team", "value": "a"}])
        assert victim.read_text() == "the user's file\n"
        tags = served.state / "tags.json"
        assert not tags.is_symlink() and json.loads(tags.read_text()) == {"fns": {"team": "a"}}
    finally:
        planted.unlink(missing_ok=True)


def test_serve_record_never_written_through_a_planted_link(served, tmp_path):
    victim = _victim(tmp_path)
    m = served.machines()[0]
    planted = m.runner.state / "serve.tmp"
    planted.symlink_to(victim)
    try:
        served.publish("http://127.0.0.1:8083")
        assert victim.read_text() == "the user's file\n"
        rec = m.runner.state / "serve.json"
        assert not rec.is_symlink() and json.loads(rec.read_text())["url"] == "http://127.0.0.1:8083"
    finally:
        planted.unlink(missing_ok=True)


def test_serve_execution_names_never_appended_through_a_link(served, tmp_path):
    victim = _victim(tmp_path)
    m = served.machines()[0]
    names = m.runner.state / NAMES
    names.unlink(missing_ok=True)
    names.symlink_to(victim)
    try:
        m._names = None
        refused = False
        try:
            m.remember_name("s-1", "order-1", "arn:x")
        except OSError:  # ELOOP: the link is refused
            refused = True
        assert victim.read_text() == "the user's file\n" and refused
    finally:
        names.unlink()
        m._names = None


# ---------------------------------------------------------------- emulate --env-file

@contextmanager
def _fake_emulator(env_file: Path, then=None):
    """Stands in for the emulators (`start(workdir)` of _serve_emulator) so that only the
    --env-file handling runs: once the env file holds the exports, `then()` runs and SIGTERM stops the
    command, as Ctrl-C does."""
    def written() -> bool:
        try:
            return "AWS_ENDPOINT_URL" in env_file.read_text()
        except OSError:
            return False

    def stop_when_written():
        for _ in range(400):
            if written():
                break
            time.sleep(0.05)
        if then is not None:
            then()
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=stop_when_written, daemon=True).start()
    yield {"AWS_ENDPOINT_URL": "http://127.0.0.1:5000"}


def _emulate(env_file: Path, force: bool = False, then=None) -> list[bool]:
    """Run the emulate command's body (unumctl.cli._serve_emulator) with the fake emulator;
    returns [whether the emulator was started]."""
    from unumctl import cli as cli_mod
    started: list[bool] = []

    def start(work: Path):
        started.append(True)
        return _fake_emulator(env_file, then)

    cli_mod._serve_emulator("aws", start, env_file, force) if force else cli_mod._serve_emulator("aws", start, env_file)
    return started


@pytest.mark.timeout(30)
def test_env_file_existing_is_not_overwritten_or_deleted(tmp_path):
    env = tmp_path / "aws.env"
    env.write_text("export MINE=1\n")
    code = None
    try:
        _emulate(env)
    except typer.Exit as exc:
        code = exc.exit_code
    assert env.exists() and env.read_text() == "export MINE=1\n"
    assert code == 2


@pytest.mark.timeout(30)
def test_env_file_force_replaces_and_removes_on_stop(tmp_path):
    env = tmp_path / "aws.env"
    env.write_text("export MINE=1\n")
    seen: list[str] = []
    assert _emulate(env, force=True, then=lambda: seen.append(env.read_text())) == [True]
    assert seen == ["export AWS_ENDPOINT_URL=http://127.0.0.1:5000\n"] and not env.exists()


@pytest.mark.timeout(30)
def test_env_file_planted_tmp_link_is_not_followed(tmp_path):
    victim = _victim(tmp_path)
    env = tmp_path / "aws.env"
    (tmp_path / "aws.env.tmp").symlink_to(victim)
    seen: list[tuple[bool, str]] = []
    _emulate(env, then=lambda: seen.append((env.is_symlink(), env.read_text())))
    assert victim.read_text() == "the user's file\n"
    assert seen == [(False, "export AWS_ENDPOINT_URL=http://127.0.0.1:5000\n")]
    assert (tmp_path / "aws.env.tmp").is_symlink() and not env.exists()


@pytest.mark.timeout(30)
def test_env_file_replaced_by_the_user_meanwhile_is_left_alone(tmp_path):
    env = tmp_path / "aws.env"

    def user_saves_over_it():
        (tmp_path / "new").write_text("export MINE=2\n")
        os.replace(tmp_path / "new", env)

    _emulate(env, then=user_saves_over_it)
    assert env.exists() and env.read_text() == "export MINE=2\n"


@pytest.mark.parametrize("where, words", [("dir", "is a directory"), ("missing/aws.env", "does not exist")])
def test_env_file_directory_or_missing_folder_is_one_line(tmp_path, where, words):
    (tmp_path / "dir").mkdir()
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "emulate", "aws", "--env-file",
                           str(tmp_path / where)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and words in one_error(lines) and "--env-file" in one_error(lines), lines


# ---------------------------------------------------------------- plan files

def _plan(tmp_path: Path, body: str) -> Path:
    path = tmp_path / planfile.PLAN_FILE
    path.write_text("version: 1\nderived: {cloud: aws}\n" + body)
    return path


def _plan_error(tmp_path: Path) -> str:
    with pytest.raises(planfile.PlanFileError) as err:
        planfile.load(tmp_path, functions=FNS)
    msg = str(err.value)
    assert "\n" not in msg and str(tmp_path / planfile.PLAN_FILE) in msg
    return msg


@pytest.mark.timeout(20)
def test_plan_file_alias_bomb_under_reasons_is_refused(tmp_path):
    _plan(tmp_path, "reasons:\n" + BOMB)
    assert "alias" in _plan_error(tmp_path)


def test_plan_file_nested_20000_deep_is_one_line(tmp_path):
    _plan(tmp_path, "reasons: " + "[" * 20000 + "]" * 20000 + "\n")
    assert "nested deeper than" in _plan_error(tmp_path)


@pytest.mark.timeout(20)
def test_plan_file_fifo_is_refused_without_blocking(tmp_path):
    os.mkfifo(tmp_path / planfile.PLAN_FILE)
    assert "named pipe" in _plan_error(tmp_path)


@pytest.mark.timeout(20)
def test_plan_file_dev_zero_is_refused(tmp_path):
    (tmp_path / planfile.PLAN_FILE).symlink_to("/dev/zero")
    assert "character device" in _plan_error(tmp_path)


def test_plan_file_too_large_is_refused(tmp_path):
    _plan(tmp_path, "reasons: {Split: '" + "x" * (1024 * 1024 + 1) + "'}\n")
    assert "larger than" in _plan_error(tmp_path)


def test_plan_file_anchors_within_the_bound_still_load(tmp_path):
    _plan(tmp_path, "memory: {Split: &m 512, Mapper: *m}\n")
    assert planfile.load(tmp_path, functions=FNS).memory == {"Split": 512, "Mapper": 512}


def test_plan_dump_replaces_a_planted_link(tmp_path):
    victim = _victim(tmp_path)
    path = tmp_path / planfile.PLAN_FILE
    path.symlink_to(victim)
    planfile.dump(planfile.TunePlan(derived={"cloud": "aws"}, memory={"Split": 256}), path)
    assert victim.read_text() == "the user's file\n" and not path.is_symlink()
    assert planfile.load(tmp_path, functions=FNS).memory == {"Split": 256}


def test_build_with_an_alias_bomb_plan_is_one_line(tmp_path):
    app = make_app(tmp_path / "app", "bomb-app", {"Split": ({"Start": True}, ECHO)})
    (app / planfile.PLAN_FILE).write_text("version: 1\nderived: {cloud: local}\nreasons:\n" + BOMB)
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "build", str(app)], capture_output=True,
                          text=True, cwd=ROOT, timeout=60)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and "alias" in one_error(lines), lines


# ---------------------------------------------------------------- manifests and state machines

@pytest.mark.timeout(20)
def test_manifest_alias_bomb_and_deep_nesting_are_one_line(tmp_path):
    app = make_app(tmp_path / "app", "m-app", {"Split": ({"Start": True}, ECHO)})
    manifest = (app / "unumctl.yaml").read_text()
    (app / "unumctl.yaml").write_text(manifest + "x-bomb:\n" + BOMB)
    with pytest.raises(AppError, match="alias"):
        load_app(app)
    (app / "unumctl.yaml").write_text(manifest + "x-deep: " + "[" * 20000 + "]" * 20000 + "\n")
    with pytest.raises(AppError, match="nested deeper than"):
        load_app(app)


def test_state_machine_nested_deep_is_one_line(tmp_path):
    from runtime.errors import IRError
    from unumctl.asl import load_definition
    path = tmp_path / "sm.json"
    path.write_text('{"Comment": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(IRError, match="nested deeper than"):
        load_definition(path)


def test_load_yaml_refuses_a_recursive_alias():
    import yaml
    with pytest.raises(yaml.YAMLError, match="recursive"):
        load_yaml("a: &a [*a]\n")


# ---------------------------------------------------------------- saved-plan records

def _saved_plan(tmp_path: Path) -> tuple[Path, Path]:
    plan = tmp_path / "app.tfplan"
    plan.write_bytes(b"terraform plan bytes")
    work = tmp_path / "work"
    work.mkdir()
    return plan, work


def test_saved_plan_record_nested_100000_deep_is_one_line(tmp_path):
    plan, work = _saved_plan(tmp_path)
    savedplan.record_path(plan).write_text('{"format": 1, "plan": ' + "[" * 100000 + "]" * 100000 + "}")
    with pytest.raises(TargetError) as err:
        savedplan.read_record(plan, "app", "aws", work)
    assert "\n" not in str(err.value) and savedplan.record_path(plan).name in str(err.value)


@pytest.mark.timeout(20)
def test_saved_plan_record_fifo_is_refused_without_blocking(tmp_path):
    plan, work = _saved_plan(tmp_path)
    os.mkfifo(savedplan.record_path(plan))
    with pytest.raises(TargetError, match="no readable"):
        savedplan.read_record(plan, "app", "aws", work)


def test_saved_plan_record_never_written_through_a_planted_link(tmp_path):
    victim = _victim(tmp_path)
    plan, work = _saved_plan(tmp_path)
    Path(str(savedplan.record_path(plan)) + ".tmp").symlink_to(victim)
    savedplan.write_record(plan, app="app", cloud="aws", workdir=work, digest={}, summary={},
                           variables={}, targets=[])
    assert victim.read_text() == "the user's file\n"
    assert savedplan.read_record(plan, "app", "aws", work)["app"] == "app"


# ---------------------------------------------------------------- tune --out

@pytest.mark.parametrize("out, words", [(".", "is a directory"), ("missing/plan.yaml", "does not exist")])
def test_tune_out_directory_or_missing_folder_is_one_line(tmp_path, out, words):
    app = make_app(tmp_path / "app", "tune-app", {"Split": ({"Start": True}, ECHO)})
    (app / "input.json").write_text("1")
    rc, _, err = cli("tune", str(app), "--sessions", "1", "--out", out, cwd=tmp_path)
    assert rc == 2 and words in one_error(err) and "--out" in one_error(err), err


# ---------------------------------------------------------------- build and render outputs

def test_build_never_writes_through_a_planted_tmp_link(tmp_path):
    from unumctl.build import build_function
    victim = _victim(tmp_path)
    app = make_app(tmp_path / "app", "b-app", {"Split": ({"Start": True}, ECHO)})
    out = tmp_path / "out"
    out.mkdir()
    (out / "Split.index.tmp").symlink_to(victim)
    art = build_function(load_app(app), "Split", "local", out)
    assert victim.read_text() == "the user's file\n"
    assert json.loads((out / "Split.index.json").read_text())["sha256"] == art.sha256


def test_terraform_render_never_writes_through_a_planted_tmp_link(tmp_path):
    from unumctl.pipeline import deployment
    from unumctl.aws.render import render
    victim = _victim(tmp_path)
    app = make_app(tmp_path / "app", "r-app", {"Split": ({"Start": True}, ECHO)})
    out = tmp_path / "tf"
    out.mkdir()
    (out / "main.tf.tmp").symlink_to(victim)
    render(deployment(load_app(app), "aws"), out, {"region": "us-east-1"})
    assert victim.read_text() == "the user's file\n"
    assert "module" in (out / "main.tf").read_text()
