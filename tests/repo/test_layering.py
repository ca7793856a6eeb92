"""The package layering, checked on the source with `ast` (issue 11, "Done when"):

- no module of the product (`unumctl/`, `runtime/`) imports the test harnesses
  (`unumctl_testing`), at module level or inside a function, nor names them in a string (a
  docstring aside): the product never runs the harness (`python -m unumctl_testing.x` in a
  child process, `importlib.import_module` / `find_spec` by name);
- `runtime/` never imports `unumctl` (the runtime ships in every bundle without it);
- the fault model (runtime/faults.py) loads only the standard library and runtime core modules.

Relative imports are resolved against the importing module's package, so `from ..x import y`
in runtime/gcp/entry.py counts as `runtime.x`.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HARNESS = "unumctl_testing"


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in the file at `path` (a module of the
    package tree under `root`); `from m import a` yields `m` and `m.a` (a may be a module)."""
    rel = path.relative_to(root).with_suffix("")
    package = list(rel.parts[:-1])  # a module's (or __init__'s) package
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)] if node.level > 1 else package
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            out.append((node.lineno, mod))
            out += [(node.lineno, f"{mod}.{a.name}") for a in node.names if a.name != "*"]
    return out


def violations(root: Path, packages: tuple[str, ...], forbidden: str) -> list[str]:
    """`file:line imports module` for every import of `forbidden` (or a submodule) in the
    .py files of `packages` under `root`."""
    bad = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            for line, mod in imported_modules(path, root):
                if mod == forbidden or mod.startswith(forbidden + "."):
                    bad.append(f"{path.relative_to(root)}:{line} imports {mod}")
    return sorted(set(bad))


def harness_strings(root: Path, packages: tuple[str, ...], harness: str = HARNESS) -> list[str]:
    """`file:line names ...` for every string constant (f-string parts included) in the .py
    files of `packages` under `root` that contains the name `harness`, except docstrings
    (the first statement of a module, class or function), where prose may cite it: a module
    run by name (`[sys.executable, "-m", "unumctl_testing.measure"]`), imported by name or
    looked up (`find_spec("unumctl_testing")`) is a string."""
    bad = []
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            docs = {id(n.body[0].value) for n in ast.walk(tree)
                    if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
            for node in ast.walk(tree):
                if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                        and harness in node.value):
                    bad.append(f"{path.relative_to(root)}:{node.lineno} names {node.value[:80]!r}")
    return sorted(set(bad))


def test_product_imports_no_test_harness():
    assert violations(ROOT, ("unumctl", "runtime"), HARNESS) == []


def test_product_runs_no_test_harness():
    """`unumctl cost` and `tune --emulated` run the product's measured run
    (`python -m unumctl.cost.measure`), not a module of the harness."""
    assert harness_strings(ROOT, ("unumctl", "runtime")) == []


def test_checker_finds_harness_runs(tmp_path):
    """The string check catches a harness run as `unumctl cost` once made it (a module name
    for `python -m`, in a list or an f-string, and a lookup by name), and lets docstrings cite
    the harness."""
    pkg = tmp_path / "unumctl" / "cost"
    pkg.mkdir(parents=True)
    (pkg / "ok.py").write_text('"""Unlike unumctl_testing, this is product code."""\n'
                               'MEASURE = "unumctl.cost.measure"\n'
                               'def f():\n    """Not unumctl_testing.measure."""\n    return [MEASURE]\n')
    (pkg / "bad.py").write_text(
        'import importlib.util, subprocess, sys\n'
        'HARNESS = "unumctl_testing.measure"\n'
        'def run(app):\n'
        '    if importlib.util.find_spec("unumctl_testing") is None:\n        return None\n'
        '    return subprocess.run(f"{sys.executable} -m unumctl_testing.measure {app}", shell=True)\n')
    found = harness_strings(tmp_path, ("unumctl",))
    assert [f.split(" names ")[0] for f in found] == [
        "unumctl/cost/bad.py:2", "unumctl/cost/bad.py:4", "unumctl/cost/bad.py:6"], found


def test_runtime_never_imports_unumctl():
    assert violations(ROOT, ("runtime",), "unumctl") == []


def test_fault_model_is_stdlib_and_runtime_core_only():
    """Importing runtime/faults.py (in a fresh interpreter) loads only the standard library
    and runtime core modules: it runs in every bundle, whatever the target installs."""
    import subprocess

    code = ("import sys\nbefore = set(sys.modules)\nimport runtime.faults\n"
            "print('\\n'.join(sorted(set(sys.modules) - before)))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    core = {p.stem for p in (ROOT / "runtime").glob("*.py")}
    for mod in out.stdout.split():
        top, _, rest = mod.partition(".")
        if top == "runtime":
            assert rest == "" or rest in core, f"runtime.faults loads {mod}, outside the runtime core"
        else:
            assert top in sys.stdlib_module_names, f"runtime.faults loads {mod}, not the standard library"


def test_checker_finds_harness_imports(tmp_path):
    """The checker itself catches every spelling of a harness import (absolute, from-import,
    inside a function, and through a relative import that climbs to the top level)."""
    pkg = tmp_path / "unumctl" / "aws"
    pkg.mkdir(parents=True)
    (tmp_path / "unumctl" / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "ok.py").write_text("import json\nfrom ..manifest import App\nfrom . import model\n")
    (pkg / "bad.py").write_text(
        "import unumctl_testing.aws.local_lambda\n"
        "from unumctl_testing.gcp import platform\n"
        "def f():\n    from unumctl_testing import asl_conformance\n")
    found = violations(tmp_path, ("unumctl",), HARNESS)
    assert sorted({f.split(" imports ")[0] for f in found}) == [
        "unumctl/aws/bad.py:1", "unumctl/aws/bad.py:2", "unumctl/aws/bad.py:4"], found
    rel = imported_modules(pkg / "ok.py", tmp_path)
    assert (2, "unumctl.manifest") in rel and (3, "unumctl.aws.model") in rel


def test_cli_and_targets_load_no_test_harness():
    """At run time too (imports by name included): loading the CLI and every target leaves
    no module of the harness package in sys.modules."""
    import subprocess

    code = ("import sys, unumctl.cli, unumctl.local, unumctl.aws, unumctl.gcp, unumctl.aws.history, "
            "unumctl.gcp.history\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'unumctl_testing'))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
