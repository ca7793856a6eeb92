"""The README's set-up, followed as written on a fresh clone: its "Install" lines (the wheel
built with `pip wheel` in the clone, installed into a fresh venv), its "A first app on local"
lines run with that venv's `unumctl`, and then the tests that scan the source tree (the
session contract, the layering, the docs' references), run in the clone with the wheel build's
`build/` and `dist/` still there: a fresh clone's `make test` once failed exactly there.

What stands in for what: `pipx install SPEC` is pipx's own venv plus `pip install SPEC`; here
the fresh venv gets `pip install --no-deps SPEC` (the SPEC as the README's shell expands it,
extras included) and a `.pth` line to this test venv's site-packages for the dependencies,
as tests/aws/test_wheel_install.py does, so nothing but the build backend is downloaded. The
extras the README names are checked against the wheel's metadata. The whole suite is not run
inside the suite: the tree-scanning tests are the ones a build in the clone can break.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from email.parser import Parser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.slow, pytest.mark.allow_egress("pip fetches the build backend from the package index")]

# the tests that read the source tree, run in the clone after the set-up steps
TREE_SCANS = ["tests/runtime/test_session.py", "tests/repo/test_doc_references.py", "tests/repo/test_layering.py",
              "tests/repo/test_public_surface.py", "tests/repo/test_test_layout.py"]


def section_commands(readme: str, heading: str) -> list[str]:
    """The command lines of the fenced blocks of README section `## heading`, in order, each
    without its trailing `# comment`. AssertionError when the section has none."""
    body = ("\n" + readme).split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [ln for block in re.findall(r"^```[^\n]*\n(.*?)^```", body, re.M | re.S) for ln in block.splitlines()]
    cmds = [re.sub(r"\s+#.*$", "", ln).strip() for ln in lines]
    cmds = [c for c in cmds if c and not c.startswith("#")]
    assert cmds, f"README: no commands under ## {heading}"
    return cmds


def _env(bin_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def _run(cmd: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    proc = subprocess.run(["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{cmd!r} in {cwd}: exit {proc.returncode}\n{proc.stderr[-3000:]}"
    return proc.stdout


@pytest.fixture(scope="module")
def fresh(tmp_path_factory):
    """(clone, venv bin) after the README's Install lines ran in a fresh clone of HEAD."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.fail("git and a git checkout are needed to make a fresh clone")
    base = tmp_path_factory.mktemp("readme")
    clone = base / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, capture_output=True)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, capture_output=True)
    py = venv / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    deps = sorted({sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    (Path(purelib) / "zz_test_deps.pth").write_text("\n".join(deps) + "\n")
    env = _env(venv / "bin")
    installs = section_commands((clone / "README.md").read_text(), "Install")
    pip = f"{shlex.quote(sys.executable)} -m pip --disable-pip-version-check -q"
    for cmd in installs:
        if cmd.startswith("pipx install ") and "dist/" not in cmd:
            continue  # the from-the-clone alternative of the same install; the wheel is the one tested
        if cmd.startswith("pip "):
            _run(f"{pip} {cmd[4:]}", clone, env)
        elif cmd.startswith("pipx install "):
            spec = _run(f"printf %s {cmd[len('pipx install '):]}", clone, env)
            _run(f"{pip} --python {shlex.quote(str(py))} install --no-deps {shlex.quote(spec)}", clone, env)
        else:
            pytest.fail(f"README Install: {cmd!r} is neither a pip nor a pipx line; teach this test")
    return clone, venv / "bin", installs


def test_install_lines_give_the_wheels_unumctl_with_the_extras_they_name(fresh):
    clone, bin_dir, installs = fresh
    version = _run("unumctl --version", clone, _env(bin_dir))
    assert re.search(r"\d+\.\d+\.\d+", version), version
    where = _run("python -c 'import unumctl; print(unumctl.__file__)'", bin_dir, _env(bin_dir)).strip()
    assert Path(where).resolve().is_relative_to(bin_dir.parent.resolve()), where
    named = {x for cmd in installs for m in re.findall(r"\[([\w,]+)\]", cmd) for x in m.split(",")}
    assert {"aws", "gcp", "emulate"} <= named, installs
    (meta,) = bin_dir.parent.glob("lib/python*/site-packages/unumctl-*.dist-info/METADATA")
    msg = Parser().parsestr(meta.read_text())
    assert named <= set(msg.get_all("Provides-Extra") or []), named
    emulate = [r for r in msg.get_all("Requires-Dist") or [] if 'extra == "emulate"' in r]
    assert any(r.lower().startswith("moto") for r in emulate), emulate  # the rehearsal's moto_server


def test_first_app_lines_run_with_the_installed_unumctl(fresh, tmp_path):
    """Each line of "A first app on local" in order; `invoke` prints the app's expected output."""
    clone, bin_dir, _ = fresh
    cmds = section_commands((clone / "README.md").read_text(), "A first app on local")
    results = [json.loads(out) for cmd in cmds
               for out in [_run(cmd, tmp_path, _env(bin_dir), timeout=300)] if cmd.startswith("unumctl invoke")]
    (app,) = [p for p in tmp_path.iterdir() if (p / "expected_output.json").exists()]
    assert results == [json.loads((app / "expected_output.json").read_text())]


def test_tree_scans_pass_in_the_clone_after_the_set_up(fresh):
    """The wheel build left build/ and dist/ in the clone; the tests that scan the tree still
    pass there (they read tracked sources only)."""
    clone, _, _ = fresh
    assert (clone / "build").is_dir() and any((clone / "dist").glob("unumctl-*.whl"))
    env = {**{k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}, "PYTHONPATH": str(clone)}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *TREE_SCANS],
                          cwd=clone, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert re.search(r"\d+ passed", proc.stdout) and "skipped" not in proc.stdout, proc.stdout[-500:]


def test_section_commands_reads_the_blocks_in_order():
    readme = ("# x\n\n## Install\n\ntext\n\n```\npip wheel -w dist .   # build\n# a comment\n```\n\n"
              "```\npipx install x\n```\n\n## Next\n\n```\nmake demo\n```\n")
    assert section_commands(readme, "Install") == ["pip wheel -w dist .", "pipx install x"]
    with pytest.raises(AssertionError):
        section_commands("## Install\n\nno block\n## B\n", "Install")
