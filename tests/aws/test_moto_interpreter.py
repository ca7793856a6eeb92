"""Which moto_server `unumctl emulate aws` starts (unumctl/aws/emulate/moto_local.py find_moto
and moto_server): when unumctl's own interpreter lacks moto and a `moto_server` is on PATH
(a global Python's), the emulator is run by that script's interpreter, the one that has moto;
when it fails to start, the one-line error names it and shows its own stderr. Each case runs
unumctl in a venv without moto (a copy of the shared venv's site-packages minus moto)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.venv_helpers import venv_without

ROOT = Path(__file__).resolve().parents[2]
FAKE_ERROR = "fake-python: ModuleNotFoundError: No module named 'werkzeug.serving'"


@pytest.fixture(scope="module")
def moto_less_python(tmp_path_factory) -> str:
    """A venv's python that imports unumctl (this checkout, by PYTHONPATH) and its
    dependencies, not moto."""
    base = tmp_path_factory.mktemp("motoless")
    python = venv_without(base, ("moto", "unumctl"))
    probe = subprocess.run([python, "-c", "import importlib.util as u; print(u.find_spec('moto'))"],
                           capture_output=True, text=True, env=_env(base))
    assert probe.stdout.strip() == "None", probe
    return python


def _env(bin_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "VIRTUAL_ENV"))}
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", PYTHONPATH=str(ROOT), **extra)
    return env


def _moto_server_script(bin_dir: Path, interpreter: str) -> Path:
    """A `moto_server` console script (as pip writes one) whose `#!` names `interpreter`."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "moto_server"
    script.write_text(f"#!{interpreter}\nimport sys\nfrom moto.server import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return script


def test_emulate_aws_names_the_moto_server_that_failed_and_shows_its_stderr(moto_less_python, tmp_path):
    fake_python = tmp_path / "fake" / "python3"
    fake_python.parent.mkdir()
    fake_python.write_text(f"#!/bin/sh\necho starting >&2\necho \"{FAKE_ERROR}\" >&2\nexit 3\n")
    fake_python.chmod(0o755)
    script = _moto_server_script(tmp_path / "bin", str(fake_python))
    proc = subprocess.run([moto_less_python, "-m", "unumctl", "emulate", "aws", "--env-file", str(tmp_path / "e.env")],
                          capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path / "bin", UNUMCTL_TERRAFORM="/bin/true"), cwd=tmp_path)
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if "moto_server" in ln]
    assert len(lines) == 1, proc.stderr
    assert str(script) in lines[0] and FAKE_ERROR in lines[0] and "status 3" in lines[0], proc.stderr
    assert str(fake_python) in lines[0]


def test_moto_server_runs_the_interpreter_that_has_moto(moto_less_python, tmp_path):
    script = _moto_server_script(tmp_path / "bin", sys.executable)  # this interpreter has moto
    code = ("import json, urllib.request\n"
            "from unumctl.aws.emulate.moto_local import find_moto, moto_server\n"
            "with moto_server() as url:\n"
            "    ok = urllib.request.urlopen(url + '/moto-api/', timeout=5).status\n"
            "print(json.dumps({'found': find_moto(), 'status': ok}))\n")
    proc = subprocess.run([moto_less_python, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path / "bin"), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"found": [sys.executable, str(script)], "status": 200}
