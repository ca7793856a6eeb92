"""The import graph of runtime/ and unumctl/, built from the source with `ast`
(docs/architecture.md §1 "Floors" and §2 "Walls"):

- no cycle among runtime's modules: every import counts, a function-local one too (a
  function-local import that closes a loop is still a loop, only a later one);
- no module of runtime imports one of a higher floor, the floors being those of the
  sentence "Inside `runtime/`: ..." of docs/architecture.md §1, read from the page itself (so
  the page and the test cannot drift apart); every runtime module must sit on one;
- runtime never imports unumctl;
- the cycles of unumctl/ are exactly the named, explained ones of KNOWN_UNUMCTL_CYCLES
  (an allowlist that may only shrink: a new cycle fails, and so does a listed one that is gone).

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

# unumctl's import cycles today, each by its modules, with why it is there. Another change
# may remove them (issue 35): then delete the entry (the test fails until it is deleted).
KNOWN_UNUMCTL_CYCLES: dict[frozenset[str], str] = {
    frozenset({"unumctl.manifest", "unumctl.pipeline", "unumctl.asl", "unumctl.asl.compiler",
               "unumctl.asl.graph", "unumctl.build", "unumctl.deploy.appgraph", "unumctl.deploy.windows",
               "unumctl.tuning.asl_fusion", "unumctl.tuning.colocate", "unumctl.tuning.planfile"}):
        "loading an app: manifest.load_app (kept for its ~350 callers) hands over to "
        "unumctl/pipeline.py `load` inside a function, and the pipeline builds on the manifest, the "
        "Step Functions front-end, the builder and the tune plan, all of which read the manifest's "
        "types; inside the front-end, asl/compiler.py imports asl/graph.py's `_where` inside a "
        "function while graph.py builds on the compiler and imports the package face inside a "
        "function. Gone when the callers import pipeline.load instead of manifest.load_app",
    frozenset({"unumctl.deploy.statepath", "unumctl.local"}):
        "the per-stage state directories: local/__init__.py imports statepath.local_dir inside "
        "a function, and statepath.py imports local.runner_alive inside a function (before it "
        "moves a directory a local runner may be using)",
}


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


def runtime_floors(text: str) -> list[list[str]]:
    """The floors of runtime/, top first, from docs/architecture.md §1's sentence
    "Inside `runtime/`: a → b, c → ...": each floor the backticked names of one segment
    (`x.py` a module, `x/` a package with its submodules)."""
    m = re.search(r"Inside `runtime/`:(.*?)\.(?:\s|$)", text, re.S)
    assert m, f"{ARCHITECTURE}: no sentence 'Inside `runtime/`: ...' naming runtime's floors"
    return [re.findall(r"`([^`]+)`", seg) for seg in m.group(1).split("→")]


def floor_of(module: str, floors: list[list[str]]) -> int | None:
    """The floor (0 = top) of a runtime module, None when no floor names it."""
    rel = module.split(".", 1)[1] if "." in module else "__init__"
    for i, names in enumerate(floors):
        for n in names:
            if n.endswith("/") and (rel == n[:-1] or rel.startswith(n[:-1] + ".")):
                return i
            if n.endswith(".py") and rel == n[:-3].replace("/", "."):
                return i
    return None


def layer_violations(graph: dict[str, set[str]], floors: list[list[str]]) -> list[str]:
    """`a (floor i) imports b (floor j)` for every edge of runtime to a higher floor (j < i),
    plus `a: on no floor` for a runtime module the floors do not name."""
    bad = []
    for a, targets in sorted(graph.items()):
        if not a.startswith("runtime"):
            continue
        fa = floor_of(a, floors)
        if fa is None:
            bad.append(f"{a}: on no floor of docs/architecture.md §1 (add it to 'Inside `runtime/`')")
            continue
        for b in sorted(targets):
            fb = floor_of(b, floors) if b.startswith("runtime") else None
            if fb is not None and fb < fa:
                bad.append(f"{a} (floor {fa}: {', '.join(floors[fa])}) imports {b} (higher floor {fb})")
    return bad


def runtime_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    return sorted(sorted(c) for c in cycles({a: {b for b in bs if b.startswith("runtime")}
                                             for a, bs in graph.items() if a.startswith("runtime")}))


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


def test_unumctl_cycles_are_the_known_ones():
    found = set(cycles({a: {b for b in bs if b.startswith("unumctl")}
                        for a, bs in GRAPH.items() if a.startswith("unumctl")}))
    assert sorted(map(sorted, found - set(KNOWN_UNUMCTL_CYCLES))) == [], "a new import cycle in unumctl/"
    assert sorted(map(sorted, set(KNOWN_UNUMCTL_CYCLES) - found)) == [], \
        "a known cycle is gone: delete it from KNOWN_UNUMCTL_CYCLES"


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
