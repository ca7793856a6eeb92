"""The deployment pipeline is assembled once, in unumctl/pipeline.py: no other module of the
product, the test harness, the tools or the benchmarks calls the steps' own functions
(the Step Functions compiler, the model builder, the packager, the plan applier); they call
the pipeline. The checker is shown to catch a second assembly injected on purpose."""

from __future__ import annotations

import ast
from pathlib import Path

from unumctl_testing.apps import ROOT

# (module the function is defined in, function): the steps the pipeline wires together
STEPS = {("unumctl.asl", "compile_app"), ("unumctl.python", "compile_workflow"), ("unumctl.deploy.appgraph", "build"),
         ("unumctl.deploy.appgraph", "package"), ("unumctl.tuning.planfile", "applied"),
         ("unumctl.build", "build_app"), ("unumctl.deploy.appgraph", "deployment"),
         ("unumctl.tuning.planfile", "load_planned")}
# the pipeline itself, and each step's own module (a step's implementation calls its parts)
ALLOWED = {"unumctl/pipeline.py", "unumctl/deploy/appgraph.py", "unumctl/build.py",
           "unumctl/asl/__init__.py", "unumctl/python.py", "unumctl/tuning/planfile.py"}
SCANNED = ("unumctl", "unumctl_testing", "tools", "bench")


def _absolute(module: str | None, level: int, path: str) -> str:
    """The absolute name of an `from <module> import` in the file at `path` (relative to ROOT)."""
    if not level:
        return module or ""
    package = Path(path).with_suffix("").parts[:-1] if not path.endswith("__init__.py") else Path(path).parts[:-1]
    base = list(package[:len(package) - (level - 1)])
    return ".".join(base + ([module] if module else []))


def second_assemblies(path: str, source: str) -> list[str]:
    """Where the file at `path` (relative to ROOT) uses a step of STEPS itself: imported by
    name (`from ..deploy.appgraph import build`) and called or passed on (`_run(build_app,
    ...)`), or as an attribute of its module (`appgraph.build(...)`, `planfile.applied`).
    One "path:line name" each."""
    tree = ast.parse(source)
    by_name: dict[str, str] = {}
    modules: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = _absolute(node.module, node.level, path)
            for alias in node.names:
                if (mod, alias.name) in STEPS:
                    by_name[alias.asname or alias.name] = alias.name
                if any(m == f"{mod}.{alias.name}" for m, _ in STEPS):
                    modules[alias.asname or alias.name] = f"{mod}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if any(m == alias.name for m, _ in STEPS):
                    modules[alias.asname or alias.name] = alias.name
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in by_name:
            found.append((node.lineno, node.col_offset, by_name[node.id]))
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in modules \
                and (modules[node.value.id], node.attr) in STEPS:
            found.append((node.lineno, node.col_offset, node.attr))
    return [f"{path}:{line} {name}" for line, _, name in sorted(found)]


def test_the_pipeline_is_assembled_only_in_unumctl_pipeline():
    found = []
    for top in SCANNED:
        for p in sorted((ROOT / top).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel not in ALLOWED:
                found += second_assemblies(rel, p.read_text())
    assert found == [], "call unumctl.pipeline instead:\n" + "\n".join(found)


def test_the_checker_catches_a_second_assembly():
    injected = ("from ..deploy.appgraph import build, package\nfrom ..tuning import planfile\n"
                "from .. import asl\n\n"
                "def render(app, plan):\n"
                "    app = planfile.applied(app, plan)\n"
                "    asl.compile_app(app.root, app.manifest, app.root)\n"
                "    return package(app, build(app, 'aws'))\n")
    assert second_assemblies("unumctl/aws/target.py", injected) == [
        "unumctl/aws/target.py:6 applied", "unumctl/aws/target.py:7 compile_app",
        "unumctl/aws/target.py:8 package", "unumctl/aws/target.py:8 build"]
    # the same calls in the pipeline's own words are not a second assembly
    assert second_assemblies("unumctl/aws/target.py", "from .. import pipeline\n\ndef render(app):\n"
                             "    return pipeline.deployment(app, 'aws')\n") == []


def test_the_commands_and_targets_call_the_pipeline():
    for rel in ("unumctl/cli.py", "unumctl/aws/target.py", "unumctl/gcp/target.py", "unumctl/local/__init__.py",
                "unumctl/tuning/command.py", "unumctl/cost/measure.py"):
        assert "pipeline." in (ROOT / rel).read_text() or "from unumctl.pipeline import" in (ROOT / rel).read_text(), rel
