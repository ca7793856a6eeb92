"""Shared test helpers: example discovery, result comparison, tiny apps written to disk."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def example_dirs() -> list[Path]:
    return sorted(p for p in EXAMPLES.iterdir() if (p / "unumctl.yaml").exists())


# The Python workflows (`-py`) that run on aws and gcp in the default suite: a chain and a
# loop, the cheapest (4-20 s each). The others compile to their IR twin's IR
# (tests/unumctl/test_python_workflow.py), whose runs are in the default suite; run on moto or
# the emulators they take 10-60 s each (3 minutes per target together), so they carry the
# target's long marker (`make test-aws-all`, `make test-gcp-all`).
CLOUD_DEFAULT_PYTHON = ("iot-pipeline-py", "loop-counter-py")


def cloud_example_params(long_marker: Any) -> list[Any]:
    """example_dirs() as pytest parameters (id: the name), the Python workflows not in
    CLOUD_DEFAULT_PYTHON marked `long_marker` (pytest.mark.aws_long or gcp_long)."""
    import pytest
    return [pytest.param(p, id=p.name, marks=[long_marker] if p.name.endswith("-py")
                         and p.name not in CLOUD_DEFAULT_PYTHON else []) for p in example_dirs()]


def expected_of(example: Path) -> Any:
    return json.loads((example / "expected_output.json").read_text())


def matches_expected(actual: Any, expected: Any) -> bool:
    """Equality, except that a top-level "$ignore" list in `expected` names result fields
    holding nondeterministic values, dropped from both sides (examples/README.md)."""
    if isinstance(expected, dict) and "$ignore" in expected:
        ignore = set(expected["$ignore"]) | {"$ignore"}
        if not isinstance(actual, dict):
            return False
        return ({k: v for k, v in actual.items() if k not in ignore}
                == {k: v for k, v in expected.items() if k not in ignore})
    return actual == expected


def make_app(root: Path, name: str, functions: dict[str, tuple[dict, str]],
             runtime: dict | None = None) -> Path:
    """Write an app: functions maps Name -> (IR mapping without Name, handler source)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "ir").mkdir(exist_ok=True)
    manifest: dict[str, Any] = {"version": 1, "app": name, "workflow": {"ir": "ir"}, "functions": {}}
    if runtime:
        manifest["runtime"] = runtime
    for fn, (ir, code) in functions.items():
        (root / "ir" / f"{fn}.yaml").write_text(yaml.safe_dump({"Name": fn, **ir}, sort_keys=False))
        d = root / "functions" / fn.lower()
        d.mkdir(parents=True, exist_ok=True)
        (d / "app.py").write_text(textwrap.dedent(code))
        manifest["functions"][fn] = {"code": f"functions/{fn.lower()}", "handler": "app.handler"}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


def copy_example(example: Path, dest: Path) -> Path:
    """Copy an example app to `dest`, bringing along code directories that live outside it
    (the Step Functions examples share the IR examples' code) and rewriting their paths."""
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns(".unum", "__pycache__"))
    mpath = dest / "unumctl.yaml"
    manifest = yaml.safe_load(mpath.read_text())
    for name, spec in manifest.get("functions", {}).items():  # a Python workflow has none
        src = (example / spec["code"]).resolve()
        if not src.is_relative_to(example.resolve()):
            code = dest / "_shared_code" / name
            shutil.copytree(src, code, ignore=shutil.ignore_patterns("__pycache__"))
            spec["code"] = str(code.relative_to(dest))
    manifest.pop("shared_code", None)  # the shared code now lives inside the copy
    mpath.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return dest


LAMBDA_ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


def sfn_task(fn: str, nxt: str | None = None, **kw) -> dict:
    """A Task state calling Lambda `fn` (then `nxt`, or the end), with extra fields `kw`."""
    st = {"Type": "Task", "Resource": LAMBDA_ARN + fn, **kw}
    st.update({"Next": nxt} if nxt else {"End": True})
    return st


def make_sfn_app(root: Path, machine: dict, handlers: dict[str, str], name: str = "sfn-test",
                 fmt: str = "json") -> Path:
    """Write a Step Functions app: the state machine (JSON or YAML) and one function per
    entry of `handlers` (Lambda name -> handler source, code in functions/<name lowercased>)."""
    root.mkdir(parents=True, exist_ok=True)
    for fn, source in handlers.items():
        d = root / "functions" / fn.lower()
        d.mkdir(parents=True, exist_ok=True)
        (d / "app.py").write_text(source)
    sm = "statemachine." + fmt
    (root / sm).write_text(json.dumps(machine) if fmt == "json" else yaml.safe_dump(machine))
    (root / "unumctl.yaml").write_text(yaml.safe_dump({
        "version": 1, "app": name, "workflow": {"stepfunctions": sm},
        "functions": {fn: {"code": f"functions/{fn.lower()}"} for fn in handlers}}))
    return root


ECHO = "def handler(e, c):\n    return e\n"


def chain_app(root: Path, n: int, name: str = "chain200") -> Path:
    """A generated chain of `n` echo functions, F000 -> F001 -> ... -> F<n-1> (the scale tests
    and bench/scale_aws.py)."""
    fns = {}
    for i in range(n):
        ir: dict = {"Start": True} if i == 0 else {}
        if i < n - 1:
            ir["Next"] = {"Name": f"F{i + 1:03d}", "Type": "Scalar"}
        fns[f"F{i:03d}"] = (ir, ECHO)
    return make_app(root, name, fns)


def fanout_app(root: Path, n: int, name: str = "fan200") -> Path:
    """A generated `n`-wide fan-out of echo functions: Fan -> B000..B<n-1> -> fan-in Join."""
    values = [f"B{i:03d}-UnumIndex-{i}" for i in range(n)]
    fns = {"Fan": ({"Start": True, "Next": [{"Name": f"B{i:03d}", "Type": "Scalar"} for i in range(n)]}, ECHO)}
    for i in range(n):
        fns[f"B{i:03d}"] = ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": values}}, ECHO)
    fns["Join"] = ({}, ECHO)
    return make_app(root, name, fns)
