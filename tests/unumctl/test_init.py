"""`unumctl init`: every template makes an app that validates and invokes on local with its
expected output, and whose own test runs the `unumctl` on PATH (or fails saying it is
missing); a non-empty DIR, a bad app name or an unknown template is one line, exit 2, and
nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from unumctl.init import templates

from tests.unumctl.test_cli import cli, one_error
from tests.venv_helpers import venv_without


def test_list_names_every_template_with_a_description():
    code, out, _ = cli("init", "--list")
    assert code == 0
    rows = dict(ln.split(None, 1) for ln in out.splitlines())
    assert rows == templates()
    assert {"chain", "map-fan-in", "stepfunctions"} <= set(rows)
    assert all(d.strip() and "\n" not in d for d in rows.values())


@pytest.mark.parametrize("template", sorted(templates()))
def test_template_validates_and_invokes_with_its_expected_output(template, tmp_path):
    code, out, err = cli("init", f"my-{template}", "--template", template, cwd=tmp_path)
    assert code == 0, err
    app = tmp_path / f"my-{template}"
    made = json.loads(out)
    assert made["app"] == f"my-{template}" and (app / "tests" / "test_app.py").is_file()
    assert "unumctl invoke . --data input.json" in "\n".join(err)  # says what to run next
    assert f"app: my-{template}" in (app / "unumctl.yaml").read_text()
    code, _, err = cli("validate", str(app))
    assert code == 0, err
    code, out, err = cli("invoke", ".", "--data", "input.json", cwd=app)
    assert code == 0, err
    assert json.loads(out) == json.loads((app / "expected_output.json").read_text())


def test_the_apps_own_test_passes(tmp_path):
    assert cli("init", "own-test", cwd=tmp_path)[0] == 0
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=tmp_path / "own-test", capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "1 passed" in run.stdout


@pytest.mark.slow  # runs the local target in a child pytest
def test_the_python_templates_own_test_runs_the_workflow_in_process(tmp_path):
    assert cli("init", "own-py", "--template", "python", cwd=tmp_path)[0] == 0
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=tmp_path / "own-py", capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-2000:]
    assert "2 passed" in run.stdout


def _pytest_python(tmp_path: Path) -> str:
    """A Python with pytest and unumctl's dependencies but not unumctl (as a pipx user's
    global Python running the app's test)."""
    python = venv_without(tmp_path / "py", ("unumctl",))
    probe = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('unumctl'))"],
                           capture_output=True, text=True, cwd=tmp_path, env={"PATH": "/usr/bin:/bin"})
    assert probe.stdout.strip() == "None", probe
    return python


def test_the_apps_own_test_runs_the_unumctl_on_path(tmp_path):
    """unumctl is only a command on PATH (a shim that execs this checkout's, as pipx's
    ~/.local/bin/unumctl execs its own venv's): the app's test passes with a Python that
    cannot import unumctl."""
    assert cli("init", "own-test", cwd=tmp_path)[0] == 0
    python = _pytest_python(tmp_path)
    shim = tmp_path / "bin" / "unumctl"
    shim.parent.mkdir()
    root = Path(__file__).resolve().parents[2]
    shim.write_text(f"#!/bin/sh\nPYTHONPATH={root} exec {sys.executable} -m unumctl \"$@\"\n")
    shim.chmod(0o755)
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=tmp_path / "own-test", capture_output=True, text=True, timeout=300,
                         env={"PATH": f"{shim.parent}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert run.returncode == 0, run.stdout[-2000:]
    assert "1 passed" in run.stdout


def test_the_apps_own_test_fails_saying_unumctl_is_missing(tmp_path):
    assert cli("init", "own-test", cwd=tmp_path)[0] == 0
    python = _pytest_python(tmp_path)
    run = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
                         cwd=tmp_path / "own-test", capture_output=True, text=True, timeout=300,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert run.returncode == 1 and "1 failed" in run.stdout and "skipped" not in run.stdout, run.stdout[-2000:]
    assert "no unumctl: neither an `unumctl` command on PATH nor the unumctl package" in run.stdout


def _tree(d: Path) -> list[str]:
    return sorted(str(p.relative_to(d)) for p in d.rglob("*"))


def test_non_empty_dir_is_refused_and_nothing_written(tmp_path):
    app = tmp_path / "busy-app"
    app.mkdir()
    (app / "notes.txt").write_text("mine")
    before = _tree(tmp_path)
    code, out, err = cli("init", str(app), cwd=tmp_path)
    assert code == 2 and out == ""
    assert "not empty" in one_error(err) and len(err) == 1
    assert _tree(tmp_path) == before


def test_empty_dir_is_used(tmp_path):
    (tmp_path / "empty-app").mkdir()
    code, out, err = cli("init", ".", "--template", "map-fan-in", cwd=tmp_path / "empty-app")
    assert code == 0, err
    assert json.loads(out)["app"] == "empty-app"
    assert (tmp_path / "empty-app" / "ir" / "Square.yaml").is_file()


@pytest.mark.parametrize("args, says", [
    (["Bad_Name"], "app name 'Bad_Name' must be 3-40 characters"),
    (["ok-dir", "--name", "x"], "app name 'x' must be 3-40 characters"),
    (["ok-dir", "--template", "nosuch"], "unknown template 'nosuch' (known: chain"),
])
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, args, says):
    code, out, err = cli("init", *args, cwd=tmp_path)
    assert code == 2 and out == "" and len(err) == 1
    assert says in one_error(err)
    assert _tree(tmp_path) == []


def test_name_option_overrides_the_directory_name(tmp_path):
    code, out, err = cli("init", "Some_Dir", "--name", "orders", cwd=tmp_path)
    assert code == 0, err
    assert "app: orders" in (tmp_path / "Some_Dir" / "unumctl.yaml").read_text()
