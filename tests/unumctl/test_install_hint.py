"""unumctl/install_hint.py: the hint for a missing extra fits how unumctl was installed
(pipx: `pipx inject unumctl <the extra's requirements>`; a venv or pip: that interpreter's
`-m pip install 'unumctl[extra]'`; a checkout: `make .venv/.installed`). Each installation
is made for real: the module copied outside the checkout, run by a venv under
`.../pipx/venvs/unumctl` (pipx's layout) and by this interpreter."""

from __future__ import annotations

import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CODE = "from unumctl.install_hint import install_hint, install_kind; print(install_kind()); print(install_hint('emulate'))"


def _installed_copy(tmp_path: Path) -> Path:
    """unumctl/install_hint.py alone in a package folder outside any checkout."""
    pkg = tmp_path / "inst" / "unumctl"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    shutil.copy(ROOT / "unumctl" / "install_hint.py", pkg / "install_hint.py")
    return pkg.parent


def _run(python: str, path: Path) -> list[str]:
    out = subprocess.run([python, "-c", CODE], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(path), "PATH": "/usr/bin:/bin"}, cwd=path)
    return out.stdout.splitlines()


def test_install_hint_in_a_checkout_is_the_makefile_target():
    from unumctl.install_hint import install_hint, install_kind
    assert install_kind() == "clone"
    assert install_hint("emulate").startswith("make .venv/.installed")


def test_install_hint_for_pip_names_the_interpreter_unumctl_runs_on(tmp_path):
    kind, hint = _run(sys.executable, _installed_copy(tmp_path))
    assert kind == "pip"
    assert hint == f"{sys.executable} -m pip install 'unumctl[emulate]'"


def test_install_hint_for_pipx_injects_the_extras_requirements(tmp_path):
    venv = tmp_path / "home" / ".local" / "pipx" / "venvs" / "unumctl"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          check=True, capture_output=True, text=True).stdout.strip()
    # unumctl's installed metadata (its extras' requirements), as pipx's venv has it
    dist = next(Path(sysconfig.get_paths()["purelib"]).glob("unumctl-*.dist-info"))
    (Path(site) / dist.name).symlink_to(dist)
    kind, hint = _run(python, _installed_copy(tmp_path))
    assert kind == "pipx"
    assert hint.startswith("pipx inject unumctl ") and "'moto[server]>=5.0'" in hint, hint
    assert "pip install" not in hint
