"""The import graph of runtime/ and unumctl/, built from the source with `ast`
(docs/architecture.md §1 "Floors" and §2 "Walls"):

- no cycle among the modules of runtime/ nor among those of unumctl/: every import counts, a
  function-local one too (a function-local import that closes a loop is still a loop, only a
  later one);
- no module of runtime/ (unumctl/) imports one of a higher floor, the floors being those of the
  sentence "Inside `runtime/`: ..." ("Inside `unumctl/`: ...") of docs/architecture.md §1, read
  from the page itself (so the page and the test cannot drift apart); every module must sit on
  one (unumctl's app templates, user code, excepted);
- runtime never imports unumctl.

An edge `a -> b` is an import in module `a` of module `b` (the longest prefix of the imported
name that is a module of the tree); `from p import n` is an edge to `p.n` when that is a
module, else to `p`; relative imports are resolved against `a`'s package. The implicit import
of a module's parent packages is not an edge (it would tie every package to its `__init__`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ARCHITECTURE = ROOT / "docs" / "architecture.md"

TEMPLATES = "unumctl.templates"  # the app templates of `unumctl init`: user code, on no floor


def module_names(root: Path, packages: tuple[str, ...]) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of `packages` under `root` (a package
    is named by its `__init__.py`)."""
    out: dict[str, Path] = {}
    for pkg in packages:
        for path in sorted((root / pkg).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def import_graph(root: Path, packages: tuple[str, ...] = ("runtime", "unumctl")) -> dict[str, set[str]]:
    """The edges (module docstring) among the modules of `packages` under `root`; imports of
    anything outside the tree (the standard library, third-party packages) are dropped."""
    modules = module_names(root, packages)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                targets.update(filter(None, (resolve(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[:len(package) - (node.level - 1)]
                    mod = ".".join(base + ([node.module] if node.module else []))
                else:
                    mod = node.module or ""
                for a in node.names:
                    sub = f"{mod}.{a.name}"
                    hit = sub if sub in modules else resolve(mod)
                    if hit:
                        targets.add(hit)
        targets.discard(name)
        graph[name] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in graph:
                    continue
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = set()
                while True:
                    x = stack.pop()
                    on.discard(x)
                    comp.add(x)
                    if x == v:
                        break
                if len(comp) > 1:
                    found.append(frozenset(comp))
    return found


def floors_of(text: str, package: str = "runtime") -> list[list[str]]:
    """The floors of `package` (runtime or unumctl), top first, from docs/architecture.md §1's
    sentence "Inside `package/`: a → b, c → ...": each floor the backticked names of one segment
    (`x.py` a module, `x/` a package with its submodules)."""
    m = re.search(rf"Inside\s+`{package}/`:(.*?)\.(?:\s|$)", text, re.S)
    assert m, f"{ARCHITECTURE}: no sentence 'Inside `{package}/`: ...' naming {package}'s floors"
    return [re.findall(r"`([^`]+)`", seg) for seg in m.group(1).split("→")]


def runtime_floors(text: str) -> list[list[str]]:
    """The floors of runtime/ (floors_of)."""
    return floors_of(text, "runtime")


def floor_of(module: str, floors: list[list[str]]) -> int | None:
    """The floor (0 = top) of a module of runtime/ or unumctl/, None when no floor names it."""
    rel = module.split(".", 1)[1] if "." in module else "__init__"
    for i, names in enumerate(floors):
        for n in names:
            if n.endswith("/") and (rel == n[:-1] or rel.startswith(n[:-1] + ".")):
                return i
            if n.endswith(".py") and rel == n[:-3].replace("/", "."):
                return i
    return None


def layer_violations(graph: dict[str, set[str]], floors: list[list[str]], package: str = "runtime") -> list[str]:
    """`a (floor i) imports b (floor j)` for every edge of `package` to a higher floor of it
    (j < i), plus `a: on no floor` for a module of `package` the floors do not name."""
    bad = []
    for a, targets in sorted(graph.items()):
        if a.split(".")[0] != package or a == TEMPLATES or a.startswith(TEMPLATES + "."):
            continue
        fa = floor_of(a, floors)
        if fa is None:
            bad.append(f"{a}: on no floor of docs/architecture.md §1 (add it to 'Inside `{package}/`')")
            continue
        for b in sorted(targets):
            fb = floor_of(b, floors) if b.split(".")[0] == package else None
            if fb is not None and fb < fa:
                bad.append(f"{a} (floor {fa}: {', '.join(floors[fa])}) imports {b} (higher floor {fb})")
    return bad


def package_cycles(graph: dict[str, set[str]], package: str) -> list[list[str]]:
    """The import cycles among the modules of `package` (runtime or unumctl), each sorted."""
    inside = {a for a in graph if a.split(".")[0] == package}
    return sorted(sorted(c) for c in cycles({a: graph[a] & inside for a in inside}))


def runtime_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return package_cycles(graph, "runtime")


GRAPH = import_graph(ROOT)


def test_runtime_has_no_import_cycle():
    assert runtime_cycles(GRAPH) == []


def test_runtime_imports_only_its_own_floor_or_below():
    floors = runtime_floors(ARCHITECTURE.read_text())
    assert len(floors) >= 5, floors
    assert layer_violations(GRAPH, floors) == []


def test_runtime_never_imports_unumctl():
    assert [f"{a} imports {b}" for a, bs in sorted(GRAPH.items()) if a.startswith("runtime")
            for b in sorted(bs) if b.startswith("unumctl")] == []


def test_unumctl_has_no_import_cycle():
    assert package_cycles(GRAPH, "unumctl") == []


def test_unumctl_imports_only_its_own_floor_or_below():
    floors = floors_of(ARCHITECTURE.read_text(), "unumctl")
    assert len(floors) >= 5, floors
    assert layer_violations(GRAPH, floors, "unumctl") == []


def test_checker_catches_an_injected_cycle_and_an_upward_import():
    """A fake module pair added to the real graph: a loop closed by a function-local import
    is reported as one cycle, and an import of the engine from payload (up two floors) as a
    layer violation; the real graph stays clean."""
    graph = {a: set(bs) for a, bs in GRAPH.items()}
    graph["runtime.fake_a"] = {"runtime.fake_b"}
    graph["runtime.fake_b"] = {"runtime.fake_a"}
    assert ["runtime.fake_a", "runtime.fake_b"] in runtime_cycles(graph)
    floors = runtime_floors(ARCHITECTURE.read_text()) + [["fake_a.py", "fake_b.py"]]
    graph["runtime.payload"].add("runtime.engine")
    bad = layer_violations(graph, floors)
    assert any(v.startswith("runtime.payload (") and "imports runtime.engine" in v for v in bad), bad
    graph["runtime.orphan"] = set()
    assert any(v.startswith("runtime.orphan: on no floor") for v in layer_violations(graph, floors))


def test_checker_catches_an_injected_unumctl_cycle_and_an_upward_import():
    """On the real graph of unumctl/: the loop the manifest once closed (the manifest handing
    `load_app` over to the pipeline inside a function) is reported as a cycle, and an import
    of the CLI from the manifest as a layer violation; a template module is on no floor and
    not reported."""
    graph = {a: set(bs) for a, bs in GRAPH.items()}
    assert "unumctl.manifest" in graph["unumctl.pipeline"]
    graph["unumctl.manifest"].add("unumctl.pipeline")
    assert any({"unumctl.manifest", "unumctl.pipeline"} <= set(c) for c in package_cycles(graph, "unumctl"))
    floors = floors_of(ARCHITECTURE.read_text(), "unumctl")
    graph["unumctl.manifest"].add("unumctl.cli")
    bad = layer_violations(graph, floors, "unumctl")
    assert any(v.startswith("unumctl.manifest (") and "imports unumctl.cli" in v for v in bad), bad
    assert not any(v.startswith(TEMPLATES) for v in bad), bad


def test_graph_counts_function_local_and_relative_imports(tmp_path):
    """On a tree written here: a function-local import is an edge, `from . import m` is an
    edge to the submodule m (not to the package), `from ..x import name` to module x."""
    pkg = tmp_path / "runtime" / "sub"
    pkg.mkdir(parents=True)
    (tmp_path / "runtime" / "__init__.py").write_text("")
    (tmp_path / "runtime" / "x.py").write_text("def f():\n    from .sub import b\n")
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\nfrom ..x import f\n")
    (pkg / "b.py").write_text("import json\n")
    g = import_graph(tmp_path, ("runtime",))
    assert g["runtime.sub.a"] == {"runtime.sub.b", "runtime.x"}
    assert g["runtime.x"] == {"runtime.sub.b"}
    (pkg / "b.py").write_text("def g():\n    import runtime.sub.a\n")
    # b -> a -> x -> b: one cycle of three, closed by two function-local imports
    assert runtime_cycles(import_graph(tmp_path, ("runtime",))) == [["runtime.sub.a", "runtime.sub.b", "runtime.x"]]
