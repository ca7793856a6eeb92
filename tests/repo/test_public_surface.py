"""The public surface of the product packages (`unumctl/`, `runtime/`), checked on the source
with `ast`: tools/ and bench/ use only names some module exports.

A module's surface is its `__all__` (a literal list or tuple of strings at module level).
Every name tools/ or bench/ take from a product module must be in it:

- `from m import a`: `a` is in `m.__all__`, or `a` is a public submodule of package `m`
  (a name without a leading underscore), whose own names are checked where they are used;
- `import m` / `import m as x` / `from p import m`: each `x.a` (or `m.a`, `m.sub.a`) used is
  in the `__all__` of the module it reaches.

A module without `__all__` exports nothing; a private module (`_name`) cannot be reached.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ("unumctl", "runtime")
USERS = ("tools", "bench")


def module_file(root: Path, module: str) -> Path | None:
    """The source file of product module `module` under `root` (a package's __init__.py), or None."""
    base = root.joinpath(*module.split("."))
    for p in (base.with_suffix(".py"), base / "__init__.py"):
        if p.is_file():
            return p
    return None


def exported(path: Path) -> set[str] | None:
    """The names of the module-level `__all__` of the file at `path`; None without one."""
    for node in ast.parse(path.read_text(), str(path)).body:
        if (isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                or isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "__all__"):
            return set(ast.literal_eval(node.value))  # type: ignore[arg-type]
    return None


def _check_name(root: Path, module: str, name: str) -> str | None:
    """Why `name` taken from product module `module` is not public, or None when it is."""
    if any(part.startswith("_") for part in module.split(".")):
        return f"{module} is a private module"
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


def surface_violations(root: Path, users: tuple[str, ...] = USERS, product: tuple[str, ...] = PRODUCT) -> list[str]:
    """`file:line: why` for every name the .py files of `users` (folders under `root`) take
    from a module of `product` that the module does not export (module docstring)."""
    bad: list[str] = []
    for user in users:
        for path in sorted((root / user).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            where = path.relative_to(root)
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
                                head = a.name.rsplit(".", i)[0]
                                if any(p.startswith("_") for p in head.split(".")) or module_file(root, head) is None:
                                    bad.append(f"{where}:{node.lineno}: {head} is not a public module")
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                        and node.module.split(".")[0] in product:
                    for a in node.names:
                        why = _check_name(root, node.module, a.name)
                        if why:
                            bad.append(f"{where}:{node.lineno}: {why}")
                        elif module_file(root, f"{node.module}.{a.name}") is not None:
                            modules[a.asname or a.name] = f"{node.module}.{a.name}"
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
                    why = _check_name(root, module, name)
                    if why:
                        bad.append(f"{where}:{node.lineno}: {why}")
    return sorted(set(bad))


def test_tools_and_bench_use_only_exported_names():
    assert surface_violations(ROOT) == []


def test_every_product_package_has_a_surface():
    """Each package of unumctl/ and runtime/ (its __init__.py) declares `__all__`."""
    missing = [str(p.relative_to(ROOT)) for pkg in PRODUCT for p in sorted((ROOT / pkg).rglob("__init__.py"))
               if "templates" not in p.parts and exported(p) is None]
    assert missing == []


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
