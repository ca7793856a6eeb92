"""The lint and type gates of `make lint` (part of `make test`) catch what they are set to
catch: ruff and mypy run with the project's own configuration (pyproject.toml [tool.ruff],
[tool.mypy]) on a module with errors injected on purpose, and pass the same module without
them. Both tools come with the `test` extra."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "pyproject.toml"
BIN = Path(sys.executable).parent

CLEAN = '''"""A module as the gates accept it."""


def total(values: list[int]) -> int:
    return sum(values)


def untyped(values):
    out = []
    for v in values:
        out.append(v)
    return out
'''


def _tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        found = shutil.which(name)
        if found is None:
            pytest.fail(f"{name} is not installed: it comes with the test extra "
                        "(pip install -e '.[test]'; `make test` does)")
        return found
    return str(path)


def _ruff(module: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("ruff"), "check", "--config", str(CONFIG), "--no-cache",
                           "--output-format", "concise", str(module)],
                          capture_output=True, text=True, timeout=60)


def _mypy(module: Path, cache: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_tool("mypy"), "--config-file", str(CONFIG), "--cache-dir", str(cache),
                           str(module)], capture_output=True, text=True, timeout=120, cwd=module.parent)


@pytest.mark.parametrize("injected,code", [
    ("import os\n", "F401"),                                     # an unused import
    ("def f(x=[]):\n    return x\n", "B006"),                    # a mutable default
    ("def f():\n    try:\n        pass\n    except Exception:\n        pass\n", "BLE001"),
    ("def f():\n    a, b = divmod(7, 2)\n    return a\n", "RUF059"),  # an unused unpacked value
])
def test_ruff_gate_catches_an_injected_error(tmp_path, injected, code):
    module = tmp_path / "mod.py"
    module.write_text(CLEAN)
    assert _ruff(module).returncode == 0, _ruff(module).stdout
    module.write_text(CLEAN + "\n\n" + injected)
    r = _ruff(module)
    assert r.returncode == 1 and f" {code} " in r.stdout, r.stdout + r.stderr


def test_mypy_gate_catches_injected_type_errors(tmp_path):
    module = tmp_path / "mod.py"
    module.write_text(CLEAN)
    ok = _mypy(module, tmp_path / "cache")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    module.write_text(CLEAN + '''

def wrong() -> int:
    return "one"  # a wrong type in an annotated function


def unannotated():
    n: int = "two"  # in an unannotated body: check_untyped_defs
    return n


def dead(x: int) -> int:
    if isinstance(x, int):
        return x
    return x + 1  # unreachable: warn_unreachable
''')
    r = _mypy(module, tmp_path / "cache")
    assert r.returncode == 1, r.stdout + r.stderr
    for line, code in ((4, "return-value"), (8, "assignment"), (15, "unreachable")):
        assert any(ln.startswith(f"mod.py:{len(CLEAN.splitlines()) + line}:") and f"[{code}]" in ln
                   for ln in r.stdout.splitlines()), (code, r.stdout)
