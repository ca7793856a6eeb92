"""Compile time of a generated 200-step Python workflow (runtime/flow.py, unumctl/python.py)
against loading the same IR written by hand (200 YAML files), in one run.

The workflow: 50 blocks of 4 steps, `a -> b.map -> c (fan-in) -> when(d)`: a chain, a Map,
a Fan-in and a conditional edge per block. Both apps go through unumctl/pipeline.py `load`
(the Python one imports its module and traces the body; the IR one parses 200 files).

    .venv/bin/python bench/python_compile.py [--steps 200] [--runs 5]

Prints one JSON object: median seconds of each load and their ratio (python / ir).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.pipeline import load  # noqa: E402


def python_app(root: Path, steps: int) -> Path:
    """An app of `steps` steps (a multiple of 4) in workflow/flow.py."""
    blocks = steps // 4
    lines = ["from runtime.flow import step, when, workflow", ""]
    for i in range(blocks):
        for kind, ret in (("a", " -> list"), ("b", ""), ("c", ""), ("d", "")):
            lines += ["", "@step", f"def {kind}{i}(event){ret}:", "    return event", ""]
    lines += ["", "@workflow", "def main(doc):", "    v = doc"]
    for i in range(blocks):
        lines += [f"    v = c{i}(a{i}(v).map(b{i}))",
                  f"    v = when(v['n'] > {i}, then=d{i}, otherwise=None)"]
    lines += ["    return v", ""]
    (root / "workflow").mkdir(parents=True)
    (root / "workflow" / "flow.py").write_text("\n".join(lines))
    (root / "unumctl.yaml").write_text("version: 1\napp: bench-py\nworkflow:\n  python: workflow/flow.py:main\n")
    return root


def ir_app(root: Path, compiled) -> Path:
    """The IR of `compiled` (a loaded app) written as an IR app with the same code."""
    (root / "ir").mkdir(parents=True)
    code = "../py/workflow"  # the Python app's directory beside this one
    functions = {}
    for name, fn in compiled.workflow.functions.items():
        doc = fn.to_dict()
        for e in doc["Next"]:
            e.pop("EmptyJoin", None)
        (root / "ir" / f"{name}.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
        spec = compiled.manifest.functions[name]
        functions[name] = {"code": str(code), "handler": spec.handler}
    manifest = {"version": 1, "app": "bench-ir", "workflow": {"ir": "ir"}, "functions": functions,
                "shared_code": [code]}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


def median_load(root: Path, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        load(root)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        py = python_app(Path(tmp) / "py", args.steps)
        compiled = load(py)
        ir = ir_app(Path(tmp) / "ir", compiled)
        t_py, t_ir = median_load(py, args.runs), median_load(ir, args.runs)
    print(json.dumps({"steps": len(compiled.workflow.functions), "python_load_s": round(t_py, 4),
                      "ir_load_s": round(t_ir, 4), "ratio_python_over_ir": round(t_py / t_ir, 3)}))


if __name__ == "__main__":
    main()
