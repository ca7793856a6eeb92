"""The public surface of the product packages (`unumctl/`, `runtime/`), checked on the source
with `ast`: every module declares what it exports, and code outside a package uses only that.

A module's surface is its `__all__` (a literal list or tuple of strings at module level). Every
module of runtime/ and unumctl/ has one, or is private (a name part with a leading underscore;
unumctl's app templates, user code, excepted). Every name taken from a product module across
a package boundary (by tools/, bench/, unumctl_testing/, and by unumctl/ from runtime/) must
be in it:

- `from m import a`: `a` is in `m.__all__`, or `a` is a public submodule of package `m`
  (a name without a leading underscore), whose own names are checked where they are used;
- `import m` / `import m as x` / `from p import m`: each `x.a` (or `m.a`, `m.sub.a`) used is
  in the `__all__` of the module it reaches.

A module without `__all__` exports nothing; a private module (`_name`) cannot be reached.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("unumctl", "runtime")
USERS = ("tools", "bench")
# the packages outside the product that may use only its surface (unumctl/ -> runtime/ too)
CROSS = ("tools", "bench", "unumctl_testing")
TEMPLATES = Path("unumctl", "templates")  # the app templates of `unumctl init`: user code


def module_file(root: Path, module: str) -> Path | None:
    """The source file of product module `module` under `root` (a package's __init__.py), or None."""
    base = root.joinpath(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def exported(path: Path) -> set[str] | None:
    """The names of the module-level `__all__` of the file at `path`; None without one."""
    return _exported(path.read_text(), str(path))


@lru_cache(maxsize=None)
def _exported(text: str, where: str) -> set[str] | None:
    for node in ast.parse(text, where).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                or isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__"):
            return set(ast.literal_eval(node.value))  # type: ignore[arg-type]
    return None


def _check_name(root: Path, module: str, name: str) -> str | None:
    """Why `name` taken from product module `module` is not public, or None when it is."""
    if any(part.startswith("_") for part in module.split(".")):
        return f"{module} is a private module"
    if name.startswith("__") and name.endswith("__"):
        return None  # a module attribute every module has (`__file__`, `__name__`), not an export
    path = module_file(root, module)
    if path is None:
        return f"{module} is not a module of the product"
    if not name.startswith("_") and module_file(root, f"{module}.{name}") is not None:
        return None  # a public submodule
    names = exported(path)
    if names is None:
        return f"{module} has no __all__ ({name} is not exported)"
    if name not in names:
        return f"{name} is not in {module}.__all__"
    return None


def _submodule_path(root: Path, module: str, attrs: list[str]) -> tuple[str, str | None]:
    """Walk `attrs` down the submodules of `module`: (the module reached, the first attribute
    that is not a submodule, or None)."""
    for i, a in enumerate(attrs):
        if a.startswith("_") or module_file(root, f"{module}.{a}") is None:
            return module, a
        module = f"{module}.{a}"
    return module, None


def module_of(root: Path, path: Path) -> str | None:
    """The dotted name of the product module at `path` (a package by its __init__.py), or None
    for a file outside the product."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[0] not in PRODUCT:
        return None
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def uses(root: Path, path: Path, product: tuple[str, ...] = PRODUCT) -> list[tuple[int, str, str | None]]:
    """(line, module, name) for every name the file at `path` takes from a module of `product`
    (module docstring): `name` is the attribute taken, or None for a module only imported
    (`import m`, whose packages on the way are checked as modules). Relative imports are
    resolved against the file's own package."""
    tree = ast.parse(path.read_text(), str(path))
    own = module_of(root, path)
    package = (own.split(".") if path.name == "__init__.py" else own.split(".")[:-1]) if own else []
    found: list[tuple[int, str, str | None]] = []
    modules: dict[str, str] = {}  # local name -> product module it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] in product:
                    if a.asname:
                        modules[a.asname] = a.name
                    else:
                        modules[a.name.split(".")[0]] = a.name.split(".")[0]
                    for i in range(1, a.name.count(".") + 1):  # the packages on the way
                        found.append((node.lineno, a.name.rsplit(".", i)[0], None))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if not package:
                    continue
                mod = ".".join(package[:len(package) - (node.level - 1)] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.split(".")[0] not in product:
                continue
            for a in node.names:
                found.append((node.lineno, mod, a.name))
                if not a.name.startswith("_") and module_file(root, f"{mod}.{a.name}") is not None:
                    modules[a.asname or a.name] = f"{mod}.{a.name}"
    inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:
            continue
        chain: list[str] = []
        cur: ast.expr = node
        while isinstance(cur, ast.Attribute):
            chain.insert(0, cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in modules:
            continue
        module, name = _submodule_path(root, modules[cur.id], chain)
        if name is not None:
            found.append((node.lineno, module, name))
    return found


def _violations(root: Path, path: Path, product: tuple[str, ...]) -> list[str]:
    where = path.relative_to(root)
    bad = []
    for line, module, name in uses(root, path, product):
        if name is None:
            if any(p.startswith("_") for p in module.split(".")) or module_file(root, module) is None:
                bad.append(f"{where}:{line}: {module} is not a public module")
            continue
        why = _check_name(root, module, name)
        if why:
            bad.append(f"{where}:{line}: {why}")
    return bad


def surface_violations(root: Path, users: tuple[str, ...] = USERS, product: tuple[str, ...] = PRODUCT) -> list[str]:
    """`file:line: why` for every name the .py files of `users` (folders under `root`) take
    from a module of `product` that the module does not export (module docstring)."""
    bad: list[str] = []
    for user in users:
        for path in sorted((root / user).rglob("*.py")):
            bad += _violations(root, path, product)
    return sorted(set(bad))


def cross_package_violations(root: Path) -> list[str]:
    """surface_violations of tools/, bench/ and unumctl_testing/ on the product, and of
    unumctl/ on runtime/ (its app templates excepted)."""
    bad = surface_violations(root, tuple(u for u in CROSS if (root / u).is_dir()))
    for path in sorted((root / "unumctl").rglob("*.py")):
        if not path.relative_to(root).is_relative_to(TEMPLATES):
            bad += _violations(root, path, ("runtime",))
    return sorted(set(bad))


def modules_without_surface(root: Path) -> list[str]:
    """The product modules (files under runtime/ and unumctl/, app templates excepted) that
    are public (no name part with a leading underscore, `__init__` and `__main__` aside) and
    declare no `__all__`."""
    out = []
    for pkg in PRODUCT:
        for path in sorted((root / pkg).rglob("*.py")):
            rel = path.relative_to(root)
            if rel.is_relative_to(TEMPLATES):
                continue
            parts = [p for p in rel.with_suffix("").parts if p not in ("__init__", "__main__")]
            if not any(p.startswith("_") for p in parts) and exported(path) is None:
                out.append(str(rel))
    return out


def test_tools_and_bench_use_only_exported_names():
    assert surface_violations(ROOT) == []


def test_every_product_module_has_a_surface():
    """Each module of unumctl/ and runtime/ declares `__all__` or is private."""
    assert modules_without_surface(ROOT) == []


def test_cross_package_imports_use_only_exported_names():
    """tools/, bench/ and unumctl_testing/ take from the product, and unumctl/ from runtime/,
    only the names the module exports."""
    assert cross_package_violations(ROOT) == []


def test_surface_check_catches_private_and_unexported_names(tmp_path):
    """The checker catches a private name, a name outside `__all__`, a module without one, a
    private module, and the same through `import ... as` and a submodule's attribute; it
    accepts exported names and public submodules."""
    pkg = tmp_path / "runtime" / "local"
    pkg.mkdir(parents=True)
    (tmp_path / "runtime" / "__init__.py").write_text("__all__ = []\n")
    (pkg / "__init__.py").write_text("__all__ = ['Runner']\nclass Runner: ...\n")
    (pkg / "datastore.py").write_text("__all__ = ['SqliteDatastore']\n_SCHEMA = ''\nclass SqliteDatastore: ...\n"
                                      "def helper(): ...\n")
    (pkg / "queue.py").write_text("class DurableQueue: ...\n")
    (pkg / "_private.py").write_text("__all__ = ['x']\nx = 1\n")
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "ok.py").write_text(
        "import runtime.local.datastore as ds\nfrom runtime import local\nfrom runtime.local import datastore\n"
        "from runtime.local.datastore import SqliteDatastore\nds.SqliteDatastore()\nlocal.Runner()\n"
        "local.datastore.SqliteDatastore()\ndatastore.SqliteDatastore()\n")
    assert surface_violations(tmp_path, ("tools",)) == []
    (tools / "bad.py").write_text(
        "import runtime.local.datastore as ds\nfrom runtime import local\n"
        "from runtime.local.datastore import _SCHEMA\n"      # 3: private
        "from runtime.local.datastore import helper\n"       # 4: not in __all__
        "from runtime.local.queue import DurableQueue\n"     # 5: no __all__
        "from runtime.local._private import x\n"             # 6: private module
        "ds._SCHEMA\n"                                       # 7: through import ... as
        "local.datastore.helper()\n")                        # 8: through a submodule
    found = surface_violations(tmp_path, ("tools",))
    assert found == [
        "tools/bad.py:3: _SCHEMA is not in runtime.local.datastore.__all__",
        "tools/bad.py:4: helper is not in runtime.local.datastore.__all__",
        "tools/bad.py:5: runtime.local.queue has no __all__ (DurableQueue is not exported)",
        "tools/bad.py:6: runtime.local._private is a private module",
        "tools/bad.py:7: _SCHEMA is not in runtime.local.datastore.__all__",
        "tools/bad.py:8: helper is not in runtime.local.datastore.__all__",
    ], found


def test_surface_checks_catch_a_module_without_all_and_cross_package_imports(tmp_path):
    """On a tree written here: a public module without `__all__` is reported, a private one and
    an app template are not; an unexported name unumctl/ takes from runtime/ (absolute import or
    through a module) and one unumctl_testing/ takes from unumctl/ are reported, while unumctl's
    own relative imports, exported names and a module's `__file__` pass."""
    for d in ("runtime", "unumctl", "unumctl/templates/app", "unumctl_testing"):
        (tmp_path / d).mkdir(parents=True, exist_ok=True)
    (tmp_path / "runtime" / "__init__.py").write_text("__all__ = []\n")
    (tmp_path / "runtime" / "ir.py").write_text("__all__ = ['Workflow']\nclass Workflow: ...\ndef helper(): ...\n")
    (tmp_path / "runtime" / "_cache.py").write_text("x = 1\n")                 # private: needs no __all__
    (tmp_path / "unumctl" / "__init__.py").write_text("__all__ = []\n")
    (tmp_path / "unumctl" / "templates" / "app" / "app.py").write_text("x = 1\n")  # user code
    (tmp_path / "unumctl" / "cli.py").write_text(
        "__all__ = ['main']\nimport runtime\nimport runtime.ir as ir\nfrom runtime.ir import Workflow\n"
        "from .model import build\nruntime.__file__\nir.Workflow\ndef main(): build()\n")
    (tmp_path / "unumctl" / "model.py").write_text("def build(): ...\n")  # 1: no __all__
    assert modules_without_surface(tmp_path) == ["unumctl/model.py"]
    assert cross_package_violations(tmp_path) == []
    (tmp_path / "unumctl" / "model.py").write_text(
        "__all__ = ['build']\nfrom runtime.ir import helper\nimport runtime.ir\ndef build(): runtime.ir.helper()\n")
    (tmp_path / "unumctl_testing" / "apps.py").write_text("from unumctl.cli import build\n")
    assert modules_without_surface(tmp_path) == []
    assert cross_package_violations(tmp_path) == [
        "unumctl/model.py:2: helper is not in runtime.ir.__all__",
        "unumctl/model.py:4: helper is not in runtime.ir.__all__",
        "unumctl_testing/apps.py:1: build is not in unumctl.cli.__all__",
    ]
