"""Command line of tools/explore.py (see its docstring)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .classify import classify
from .search import Bounds, explore, run_schedule
from .workflows import all_workflows


def save_trace(path: Path, workflow: str, found) -> None:
    """Write a replay file: {"workflow", "invariant", "class", "message", "schedule"}."""
    path.write_text(json.dumps({"workflow": workflow, "invariant": found.invariant, "class": found.cls,
                                "message": found.message, "schedule": [list(a) for a in found.schedule]},
                               indent=1))


def replay(path: Path) -> int:
    """Re-run a saved schedule exactly and print its trace and violations; 1 if any."""
    doc = json.loads(path.read_text())
    spec = all_workflows()[doc["workflow"]]
    schedule = [tuple(a) for a in doc["schedule"]]
    h = run_schedule(spec, schedule, complete=False)
    print(f"workflow {spec.name}: {spec.about}")
    for i, (a, label) in enumerate(h.world.log):
        print(f"{i:3} {h.describe(a)}  {label}")
    res = h.result()
    print("result:", json.dumps(res)[:300] if res else None)
    for e in h.checker.errors:
        print("engine error:", e)
    for v in h.checker.violations:
        print(f"VIOLATION ({v.invariant}) at step {v.step}: {v.message}  [{classify(spec, v, h)}]")
    return 1 if h.checker.violations else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="systematic interleaving explorer (docs/explorer.md)")
    ap.add_argument("--workflow", default="", help="comma-separated workflow names (default: all)")
    ap.add_argument("--budget", type=int, default=500, help="schedules per workflow")
    ap.add_argument("--seconds", type=float, default=1e9, help="wall-time cap per workflow")
    ap.add_argument("--dups", type=int, default=None)
    ap.add_argument("--crashes", type=int, default=None)
    ap.add_argument("--preemptions", type=int, default=None)
    ap.add_argument("--json", action="store_true", help="print one JSON summary as the last line")
    ap.add_argument("--replay", type=Path, help="re-run a saved trace")
    ap.add_argument("--save-traces", type=Path, default=Path("explorer-traces"),
                    help="directory for replay files of violations (default ./explorer-traces)")
    ap.add_argument("--list", action="store_true", help="list the workflows")
    ap.add_argument("--mutants", nargs="?", const="", default=None, metavar="NAME,...",
                    help="run the engine mutants (all, or the named ones) and print the table "
                         "(tools/explorer/mutants); --budget/--seconds per workflow")
    ap.add_argument("--mutant-tests", action="store_true",
                    help="with --mutants: also run each mutant's test files under it")
    args = ap.parse_args(argv)
    if args.mutants is not None:
        from .mutants.run import main as mutants_main
        return mutants_main(args)
    if args.replay:
        return replay(args.replay)
    wfs = all_workflows()
    if args.list:
        for name, wf in wfs.items():
            print(f"{name:18} gc={wf.gc:5} {wf.about}")
        return 0
    names = [n for n in args.workflow.split(",") if n] or list(wfs)
    unknown = [n for n in names if n not in wfs]
    if unknown:
        print(f"unknown workflow(s) {unknown}; --list shows them", file=sys.stderr)
        return 2
    summary = []
    bad = False
    for name in names:
        spec = wfs[name]
        over = {k: v for k, v in (("dups", args.dups), ("crashes", args.crashes),
                                  ("preemptions", args.preemptions)) if v is not None}
        b = Bounds(budget=args.budget, seconds=args.seconds).merged({**spec.bounds, **over})
        rep = explore(spec, b, classify=classify)
        summary.append(rep.as_dict())
        print(f"{name}: {rep.schedules} schedules ({'exhausted' if rep.exhausted else 'budget reached'}), "
              f"{rep.redundant} pruned by sleep sets, {rep.seconds:.1f} s, "
              f"{len(rep.found)} violation kind(s)", file=sys.stderr)
        for (inv, cls), f in rep.found.items():
            bad = True
            args.save_traces.mkdir(parents=True, exist_ok=True)
            file = args.save_traces / f"{name}-{inv}-{cls.split()[0]}.json"
            save_trace(file, name, f)
            print(f"  ({inv}) class {cls}: {f.count} schedule(s); first: {f.message}", file=sys.stderr)
            print(f"      replay: python tools/explore.py --replay {file}  ({len(f.schedule)} steps)",
                  file=sys.stderr)
    if args.json:
        print(json.dumps({"workflows": summary}))
    return 1 if bad else 0
