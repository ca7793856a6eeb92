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

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.cost.stepfunctions import interpreted_transitions  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402


def transitions(root: Path, value) -> int | None:
    """State transitions of one run in the interpreter (unumctl/cost/stepfunctions.py, shared
    with `unumctl cost`); None for a machine with callback Tasks."""
    r = interpreted_transitions(root, value)
    return None if r is None else r[0]


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
