"""Function invocations per execution of Step Functions apps vs. the state transitions
AWS Step Functions (Standard) would bill for the same execution.

Usage: python tools/sfn_cost.py [APP_DIR ...]   (default: every examples/*-sfn app)

Invocations: the app runs once on the local target with its input.json; the count is the
platform's deliveries (one per function invocation, no faults injected). Transitions: the
same state machine runs in-process in the ASL interpreter (runtime.asl.machine) with the
app's own handlers, counting every state entered, Map/Parallel iterations' states and
retries included (Step Functions pricing: "state transitions"). Prints a table and, as the
last line, a JSON object {app: {"invocations": n, "transitions": m}}.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.asl.errors import AslError  # noqa: E402
from runtime.asl.machine import Machine, lambda_cause  # noqa: E402
from runtime.asl.wrapper import lambda_name  # noqa: E402
from unumctl.asl import load_definition, resolver  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.manifest import load_app, load_manifest  # noqa: E402


class _Ctx:
    def __init__(self, fn):
        self.function = fn
        self.instance = fn
        self.session = "cost"
        self.index = self.size = None
        self.indexes, self.sizes, self.iteration = [], [], 0


def transitions(root: Path, value) -> int | None:
    """State transitions of one run in the interpreter; None for a machine with callback
    Tasks (.waitForTaskToken needs a platform to wait on)."""
    manifest = load_manifest(root)
    definition = load_definition(root / manifest.workflow.stepfunctions)
    if ".waitForTaskToken" in json.dumps(definition):
        return None
    resolve = resolver(manifest.functions)
    handlers = {}
    for name, spec in manifest.functions.items():
        mod_name, _, fn = spec.handler.rpartition(".")
        path = root / spec.code / (mod_name.replace(".", "/") + ".py")
        sp = importlib.util.spec_from_file_location(f"cost_{root.name}_{name}", path)
        mod = importlib.util.module_from_spec(sp)
        sp.loader.exec_module(mod)  # type: ignore[union-attr]
        handlers[name] = getattr(mod, fn)

    def invoke(ref, event):
        name = resolve(lambda_name(ref))
        try:
            return handlers[name](event, _Ctx(name))
        except Exception as exc:
            raise AslError(type(exc).__name__, lambda_cause(type(exc).__name__, str(exc),
                           traceback.format_exception(exc))) from None

    m = Machine(definition, {"Id": "x", "Name": "x", "StartTime": "x", "Input": value},
                clock=lambda: 0.0, sleep=lambda s: None, start_time=0.0)
    try:
        m.run_inline("", definition["StartAt"], value, invoke)
    except AslError:
        pass
    return m.transitions


def invocations(root: Path, value) -> int:
    app = load_app(root)
    with tempfile.TemporaryDirectory() as tmp, LocalRunner(app, state=Path(tmp), quiet=True) as r:
        r.run(value, timeout=120)
        r.platform.wait_idle()
        return r.platform.stats["deliveries"]


def main(argv: list[str]) -> int:
    apps = [Path(a) for a in argv] or sorted(p for p in (ROOT / "examples").glob("*-sfn") if p.is_dir())
    out = {}
    print(f"{'app':24s} {'invocations':>12s} {'transitions':>12s}")
    for root in apps:
        value = json.loads((root / "input.json").read_text())
        out[root.name] = {"invocations": invocations(root, value), "transitions": transitions(root, value)}
        t = out[root.name]["transitions"]
        print(f"{root.name:24s} {out[root.name]['invocations']:12d} {'n/a' if t is None else t:>12}")
    print(json.dumps(out, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
