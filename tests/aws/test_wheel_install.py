"""The built wheel works as an installed product (issue 23 item 5): `pip wheel` of the source,
installed with `pip install --no-deps` into a fresh virtual environment outside the source
tree, then its own `unumctl` console script runs `invoke` on local and `plan --cloud aws`
against moto_server (Terraform from the provider mirror, tests/aws/conftest.py).

Dependencies are not downloaded again: a `.pth` file in the fresh venv appends this test
venv's site-packages to sys.path (after the fresh venv's own site-packages, so `unumctl` and
`runtime` come from the wheel; a path added by a .pth line does not run the editable
install's own .pth hook). A venv made with `--system-site-packages` from inside a venv would
see the base interpreter's packages, not this venv's, hence the .pth. The import path of
`unumctl` and `runtime` is asserted to lie in the fresh venv.

About 30 s (wheel build ~5 s, venv ~5 s, local invoke, Terraform plan on moto; the editable
install ~10 s).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from unumctl_testing.apps import ROOT, copy_example, expected_of, matches_expected
from .conftest import aws_env

# pip builds the wheel in an isolated environment, installing setuptools from the configured
# package index (the egress guard, tests/egress_guard.py, is suspended for these tests)
pytestmark = pytest.mark.allow_egress("pip fetches the build backend from the package index")

# what the wheel is built from: the source tree minus state, venvs and caches
_SKIP = shutil.ignore_patterns(".git", ".venv*", ".unum", "build", "dist", "*.egg-info", "__pycache__",
                               ".pytest_cache", "node_modules", "bench", "explorer-traces")


@pytest.fixture(scope="module")
def wheel_venv(tmp_path_factory) -> Path:
    """A fresh venv with the wheel of this source tree installed (--no-deps), the test venv's
    site-packages appended for the dependencies. Returns the venv's bin directory."""
    d = tmp_path_factory.mktemp("wheel")
    src = d / "src"
    shutil.copytree(ROOT, src, ignore=_SKIP)
    dist = d / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run([*pip, "wheel", "--no-deps", "-w", str(dist), str(src)], check=True, capture_output=True)
    (wheel,) = dist.glob("unumctl-*.whl")
    venv = d / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(py), "install", "--no-deps", str(wheel)], check=True,
                   capture_output=True)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (Path(purelib) / "zz_test_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return venv / "bin"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def test_wheel_ships_no_test_harness(wheel_venv):
    """The product's wheel holds unumctl/ and runtime/ (and the dist-info), never the test
    harnesses of unumctl_testing/ (setup.py)."""
    (wheel,) = (wheel_venv.parent.parent / "dist").glob("unumctl-*.whl")
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    assert any(n.startswith("unumctl/") for n in names) and any(n.startswith("runtime/") for n in names)
    assert [n for n in names if n.startswith("unumctl_testing/")] == []
    assert {n.split("/")[0] for n in names} <= {"unumctl", "runtime", *(n.split("/")[0] for n in names if ".dist-info/" in n)}


def test_wheel_imports_from_the_venv(wheel_venv):
    out = subprocess.run([str(wheel_venv / "python"), "-c",
                          "import unumctl, runtime, unumctl.render as r;"
                          "print(unumctl.__file__); print(runtime.__file__);"
                          "print(r.modules_dir()); print(sorted(r.module_files('aws-unum-function')))"],
                         check=True, capture_output=True, text=True, cwd=wheel_venv, env=_env()).stdout
    unum, rt, modules, files = out.splitlines()
    venv = wheel_venv.parent.resolve()
    for p in (unum, rt, modules):
        assert Path(p).resolve().is_relative_to(venv) and not Path(p).resolve().is_relative_to(ROOT), p
    # the modules of terraform/modules/ ship as package data unumctl/render/modules/ (setup.py)
    assert Path(modules).parts[-3:] == ("unumctl", "render", "modules"), modules
    assert "main.tf" in files and "variables.tf" in files


def test_editable_install_reads_the_checkouts_modules(tmp_path):
    """An editable install (`pip install -e`) of a checkout reads terraform/modules/ of that
    checkout: the package `unumctl.render.modules` that setup.py maps onto the folder is not
    importable through setuptools' editable finder (the folder has no __init__.py), so
    unumctl.render.modules_dir must find the checkout's folder itself."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=_SKIP)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", "-q", "--python", str(py),
                    "install", "--no-deps", "-e", str(src)], check=True, capture_output=True)
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    (Path(purelib) / "zz_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    proc = subprocess.run([str(py), "-c", "import json, unumctl.render as r; print(r.__file__); print(r.modules_dir());"
                           "print(json.dumps(sorted(r.module_files('gcp-unum-function'))))"],
                          capture_output=True, text=True, cwd=tmp_path, env=_env())
    assert proc.returncode == 0, proc.stderr[-2000:]
    render, modules, files = proc.stdout.splitlines()
    assert Path(render).resolve().is_relative_to(src.resolve()), render
    assert Path(modules).resolve() == (src / "terraform" / "modules").resolve(), modules
    assert json.loads(files) == sorted(p.name for p in (ROOT / "terraform" / "modules" / "gcp-unum-function").glob("*.tf"))


def test_wheel_invoke_local(wheel_venv, tmp_path):
    app = copy_example(ROOT / "examples" / "iot-pipeline", tmp_path / "iot")
    proc = subprocess.run([str(wheel_venv / "unumctl"), "invoke", str(app), "--data", str(app / "input.json")],
                          capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert matches_expected(json.loads(proc.stdout), expected_of(ROOT / "examples" / "iot-pipeline"))


def test_wheel_init_every_template(wheel_venv, tmp_path):
    """The templates are package data: `unumctl init` from the installed wheel writes every
    template listed in the source tree with the same files."""
    from unumctl.init import templates
    listed = subprocess.run([str(wheel_venv / "unumctl"), "init", "--list"], capture_output=True, text=True,
                            cwd=tmp_path, env=_env(), timeout=120)
    assert listed.returncode == 0, listed.stderr
    assert [ln.split()[0] for ln in listed.stdout.splitlines()] == list(templates())
    for name in templates():
        proc = subprocess.run([str(wheel_venv / "unumctl"), "init", f"app-{name}", "--template", name],
                              capture_output=True, text=True, cwd=tmp_path, env=_env(), timeout=120)
        assert proc.returncode == 0, proc.stderr
        src = ROOT / "unumctl" / "templates" / name
        want = sorted(str(p.relative_to(src)) for p in src.rglob("*") if p.is_file()
                      and p.name not in ("template.json", "__init__.py") and "__pycache__" not in p.parts)
        assert sorted(json.loads(proc.stdout)["files"]) == want


def test_wheel_plan_aws_on_moto(wheel_venv, tmp_path, moto_url, tf_cli_config):
    app = copy_example(ROOT / "examples" / "iot-pipeline", tmp_path / "iot")
    env = _env(**aws_env(moto_url), TF_CLI_CONFIG_FILE=str(tf_cli_config))
    env.pop("AWS_PROFILE", None)
    proc = subprocess.run([str(wheel_venv / "unumctl"), "plan", str(app), "--cloud", "aws"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads(proc.stdout)
    added = summary["resources"]["add"]
    assert summary["add"] == len(added) > 0
    assert "module.datastore.aws_dynamodb_table.this" in added
    assert any(a.endswith(".aws_lambda_function.this") for a in added), added
    # the modules the root calls were copied from the wheel, not left empty
    mods = next((app / ".unum" / "terraform" / "aws").glob("*/dev/modules"))  # <region>/<stage>
    assert sorted(p.name for p in (mods / "aws-unum-function").glob("*.tf")) == \
        sorted(p.name for p in (ROOT / "terraform" / "modules" / "aws-unum-function").glob("*.tf"))


def test_wheel_plan_gcp_checks_offline(wheel_venv, tmp_path):
    """`plan --cloud gcp` from the wheel runs the offline schema and dependency checks: the
    provider schema snapshot ships as package data (unumctl/gcp/checks/schema); without it plan
    says "no offline schema or dependency check". It cannot plan offline: exit 4."""
    app = copy_example(ROOT / "examples" / "iot-pipeline", tmp_path / "iot")
    env = _env(CLOUDSDK_CONFIG=str(tmp_path / "gcloud"))
    for var in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT", "GOOGLE_APPLICATION_CREDENTIALS"):
        env.pop(var, None)
    proc = subprocess.run([str(wheel_venv / "unumctl"), "plan", str(app), "--cloud", "gcp"],
                          capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 4, proc.stderr[-3000:]
    checked = json.loads(proc.stdout)["checked"]
    assert any(c.startswith("schema-checked offline") for c in checked), checked
    # the modules the checked root calls were copied from the wheel (terraform/modules/ at build)
    mods = next((app / ".unum" / "terraform" / "gcp").glob("*/dev/modules"))  # <region>/<stage>
    for name in ("gcp-unum-datastore", "gcp-unum-function"):
        assert sorted(p.name for p in (mods / name).glob("*.tf")) == \
            sorted(p.name for p in (ROOT / "terraform" / "modules" / name).glob("*.tf")), name
