"""Fault-injection campaign over the example apps on the local target.

    python tools/fault_campaign.py [--runs 200] [--examples wordcount,text-processing] [--json]
                                   [--plans tools/campaign_plans]

`--plans DIR`: each app with a DIR/<app>.yaml runs with that plan file (docs/tune.md: memory,
fuse, batch) applied, as `unumctl apply` applies it; the invariants are the same (issue 25:
a plan never changes what a workflow computes).

The apps are the examples (examples/*) and the campaign workloads (tools/campaign_apps/*:
blob-sized nondeterministic values, `Checkpoint: false`, `runtime.gc: eager`, flaky user
code with `Retry`, empty Maps, a Step Functions app whose Map/Parallel read `$$`; see
tools/campaign_apps/README.md). For every app, `runs` sessions run with seeded faults
(runtime.faults): crashes (exceptions) at the engine's crash points (CRASH_POINTS); the faults a FaaS has that
no exception models, each a real SIGKILL of the instance process: `kill` at a random point of
an execution (a seeded delay after delivery), `timeout` (the platform's timeout path,
`Unum.Timeout`), `oom` (the OOM killer, `Runtime.OutOfMemory`), and `kill_before_commit` (the
instance killed after its egress, before its transaction commits); duplicate and
delayed/reordered deliveries, each re-send of a message drawn independently. The report counts
the faults drawn and landed per app and in all (a platform kill whose execution ended first
missed); a campaign in which a kill kind with a non-zero rate was never drawn or never landed
fails, whatever its results. Each app is copied to a temporary
directory and every function's handler is wrapped by a probe that appends
(session, invocation, sha256(input), sha256(output), function) to a log: the user code is instrumented,
the runtime is not. Invariants checked per session:

1. the session SUCCEEDED with the fault-free result (examples/README.md comparison rule);
2. every execution of the same invocation saw the same input, i.e. every consumer of a
   (possibly nondeterministic) function saw the one committed value. Excluded: the
   invocations of a function that an edge of a `Checkpoint: false` function (or any
   function under `runtime.checkpoint: false`) targets. Such a producer has no commit point
   (at-least-once, docs/protocol.md), so its consumers may see different values by design;
   the report counts those invocations (`at_least_once_inputs`) instead of failing them.
   Likewise the later members of a fused group (issue 25, docs/fusion.md): their input is
   the previous member's output in the same execution, never a committed value, so a group
   re-run before its one commit (a crash, a concurrent duplicate) gives them a different
   input when an earlier member is nondeterministic (text-processing's ShortenUrl before
   CreatePost in the whole-region plan); the group's output is still committed once;
3. once the platform is idle, the datastore holds only the session's result item;
4. and the blob store holds only the blob the result names, if any (blob-sized values:
   tools/campaign_apps/blob-random).

Prints one line per example and, as the last line, a JSON summary.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CAMPAIGN_APPS = ROOT / "tools" / "campaign_apps"
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from runtime.faults import FaultSpec  # noqa: E402
from runtime.storage import item_blobs  # noqa: E402
from unumctl import pipeline  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402
from unumctl.tuning import planfile  # noqa: E402

DEFAULT_FAULTS = ("crash=0.08,duplicate=0.15,delay=0.25,max_delay_ms=25,"
                  "kill=0.03,timeout=0.02,oom=0.02,max_kill_ms=5,kill_before_commit=0.03")
# the kill kinds (runtime.faults): spec key -> (the platform's counter of draws, of landed
# kills; unumctl/local/platform.py stats). An instance draws kill_before_commit itself and
# always lands it. A campaign (main) that drew none of a kind with a non-zero rate, or
# landed none, fails (`missing_kinds`).
KILL_KINDS = {"kill": ("kill_drawn", "kills"), "timeout": ("timeout_drawn", "timeouts"),
              "oom": ("oom_drawn", "out_of_memory"),
              "kill_before_commit": ("kill_before_commit", "kill_before_commit")}
FAULT_STATS = ("duplicated", "delayed", "crashes", "redeliveries", "kills", "timeouts", "out_of_memory",
               "kill_before_commit", "kill_drawn", "timeout_drawn", "oom_drawn", "kill_missed",
               "timeout_missed", "oom_missed")

_PROBE = '''"""Campaign probe: logs a digest of every execution's input and output, then returns the
real handler's result unchanged."""
import hashlib, importlib, json, os

_real = getattr(importlib.import_module({module!r}), {func!r})
_LOG = {log!r}


def _digest(v):
    return hashlib.sha256(json.dumps(v, sort_keys=True).encode()).hexdigest()[:16]


def handler(event, context):
    out = _real(event, context)
    line = json.dumps([context.session, context.instance, _digest(event), _digest(out),
                       context.function]) + "\\n"
    fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)
    return out
'''


@dataclass
class ExampleReport:
    """Outcome of one example's campaign."""

    example: str
    runs: int
    passed: int = 0
    failures: list[str] = field(default_factory=list)
    stats: Counter = field(default_factory=Counter)
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"runs": self.runs, "passed": self.passed, "failures": self.failures[:10],
                "faults": {k: self.stats.get(k, 0) for k in FAULT_STATS},
                "deliveries": self.stats.get("deliveries", 0),
                "dropped_stale": self.stats.get("outcome_dropped", 0),
                "adopted": self.stats.get("outcome_adopted", 0),
                "at_least_once_inputs": self.stats.get("at_least_once_inputs", 0),
                "seconds": round(self.seconds, 1)}


def matches_expected(actual: Any, expected: Any) -> bool:
    """examples/README.md: exact equality except top-level keys listed in "$ignore"."""
    if isinstance(expected, dict) and "$ignore" in expected:
        ignore = set(expected["$ignore"]) | {"$ignore"}
        return isinstance(actual, dict) and (
            {k: v for k, v in actual.items() if k not in ignore}
            == {k: v for k, v in expected.items() if k not in ignore})
    return actual == expected


def at_least_once_consumers(app: Any) -> set[str]:
    """Functions whose input may differ between executions by design: the targets (including
    a Map edge's EmptyJoin target) of every edge leaving a function without a commit point
    (`Checkpoint: false`, or every function when the manifest says `runtime.checkpoint: false`),
    and the later members of fused groups (IR `Fused.Steps[1:]`: run on an uncommitted value)."""
    all_off = not app.manifest.runtime.checkpoint
    out: set[str] = set()
    for fn in app.workflow.functions.values():
        if fn.checkpoint and not all_off:
            continue
        for edge in fn.next:
            out.add(edge.target)
            if edge.empty_join is not None:
                out.add(edge.empty_join[0])
    for fn in app.workflow.functions.values():  # a fused group's later members (module docstring)
        out.update(step["Function"] for step in (fn.fused or {}).get("Steps", [])[1:])
    return out


def app_dirs(names: list[str] | None = None) -> list[Path]:
    """The examples and the campaign workloads that have an expected_output.json, optionally
    restricted to `names`; examples first, each group sorted by name."""
    found = []
    for parent in (ROOT / "examples", CAMPAIGN_APPS):
        found += sorted(p for p in parent.iterdir() if (p / "unumctl.yaml").exists()
                        and (p / "expected_output.json").exists() and (not names or p.name in names))
    return found


def blob_leftovers(ds: Any, blob_root: Path) -> dict[str, list[str]]:
    """Invariant 4: per session directory of the local blob store (`blob_root/<session>/`),
    the files (keys, sorted) that the session's `result` item in `ds` does not name; sessions
    with none are left out."""
    out: dict[str, list[str]] = {}
    for sdir in sorted(blob_root.iterdir()) if blob_root.exists() else []:
        keep = {sdir.joinpath(*k.split("/")) for k in item_blobs(ds.get(sdir.name, "result"))}
        extra = sorted(str(f.relative_to(sdir)) for f in sdir.rglob("*") if f.is_file() and f not in keep)
        if extra:
            out[sdir.name] = extra
    return out


def as_ir_app(app: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """A Python workflow's manifest (`workflow.python`, no `functions:`) turned into the
    IR app it compiles to (docs/python.md): its IR files written to `app/_campaign_ir`,
    `functions:` from its steps (code, handler, memory, timeout, requirements), so the probe
    can wrap each step's handler like any other; other manifests are returned unchanged."""
    if "python" not in manifest.get("workflow", {}):
        return manifest
    loaded = load_app(app)
    ir_dir = app / "_campaign_ir"
    ir_dir.mkdir()
    for name, fn in loaded.workflow.functions.items():
        (ir_dir / f"{name}.yaml").write_text(yaml.safe_dump(fn.to_dict(), sort_keys=False))
    manifest["workflow"] = {"ir": ir_dir.name}
    manifest["functions"] = {name: {"code": f.code, "handler": f.handler, "memory": f.memory,
                                    "timeout": f.timeout, "requirements": list(f.requirements)}
                             for name, f in loaded.manifest.functions.items()}
    return manifest


def instrumented_copy(example: Path, dest: Path, log: Path) -> Path:
    """Copy an example app and wrap every handler with the probe (a Python workflow's
    steps through the IR app it compiles to, `as_ir_app`); returns the copy's root."""
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns(".unum", "__pycache__"))
    mpath = dest / "unumctl.yaml"
    manifest = as_ir_app(dest, yaml.safe_load(mpath.read_text()))
    for name, spec in manifest["functions"].items():
        # code may live outside the app (the Step Functions examples share code directories)
        code = dest / "_campaign_code" / name
        shutil.copytree((example / spec["code"]).resolve(), code,
                        ignore=shutil.ignore_patterns("__pycache__"))
        spec["code"] = str(code.relative_to(dest))
        module, _, func = spec.get("handler", "app.handler").rpartition(".")
        (code / "unum_probe.py").write_text(_PROBE.format(module=module, func=func, log=str(log)))
        spec["handler"] = "unum_probe.handler"
    mpath.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return dest


def run_example(example: Path, runs: int, faults: str = DEFAULT_FAULTS, seed: int = 0,
                batch: int = 8, timeout: float = 120.0, plan: Path | None = None) -> ExampleReport:
    """Run `runs` seeded sessions of one example (in concurrent batches) and check the
    invariants; returns the report (failures hold one line per violated invariant). `plan`: a
    plan file (docs/tune.md) to run the example with, applied by unumctl.pipeline.load_planned."""
    report = ExampleReport(example.name, runs)
    expected = json.loads((example / "expected_output.json").read_text())
    value = json.loads((example / "input.json").read_text())
    spec = FaultSpec.parse(f"seed={seed},{faults}")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"campaign-{example.name}-") as tmp:
        tmpd = Path(tmp)
        log = tmpd / "probe.jsonl"
        copy = instrumented_copy(example, tmpd / "app", log)
        if plan is not None:
            shutil.copyfile(plan, planfile.plan_path(copy))
        app = pipeline.load_planned(copy, "local").app if plan is not None else load_app(copy)
        unchecked = at_least_once_consumers(app)
        with LocalRunner(app, faults=spec, state=tmpd / "state", quiet=True) as runner:
            platform = runner.platform
            assert platform is not None
            for start in range(0, runs, batch):
                sessions = [runner.start(value, f"campaign-{example.name}-{seed}-{i}")
                            for i in range(start, min(runs, start + batch))]
                for s in sessions:
                    try:
                        item = platform.wait_result(s, timeout)
                    except TimeoutError as exc:
                        report.failures.append(f"{s}: {exc}")
                        continue
                    if item.get("status") != "SUCCEEDED":
                        report.failures.append(f"{s}: {item.get('status')} {item.get('error')}: {item.get('cause')}")
                    elif not matches_expected(item.get("v"), expected):
                        report.failures.append(f"{s}: result differs from expected_output.json")
                platform.wait_idle(timeout)
            # a window's store outlives the producer sessions by design (docs/ir.md "Windows
            # across sessions": its items expire by TTL); its exactness is checked by the window
            # tests and the explorer (tools/explorer/workflows/window.py)
            leftovers = {s: names for s, names in platform.ds.dump().items()
                         if names != ["result"] and not s.startswith("winstore-")}
            for session, extra in blob_leftovers(platform.ds, platform.blob_dir).items():
                report.failures.append(f"{session}: blob store still holds {extra[:5]}")
            report.stats.update(platform.stats)
        seen: dict[tuple[str, str], set[str]] = defaultdict(set)
        function_of: dict[str, str] = {}
        for line in log.read_text().splitlines() if log.exists() else []:
            session, instance, din, _, function = json.loads(line)
            seen[(session, instance)].add(din)
            function_of[instance] = function
    for (session, instance), inputs in sorted(seen.items()):
        if len(inputs) > 1:
            if function_of[instance] in unchecked:
                report.stats["at_least_once_inputs"] += 1
            else:
                report.failures.append(f"{session}: {instance} ran with {len(inputs)} different inputs")
    for session, names in leftovers.items():
        report.failures.append(f"{session}: datastore still holds {sorted(names)[:5]}")
    bad = {f.split(":")[0] for f in report.failures}
    report.passed = runs - len(bad)
    report.seconds = time.monotonic() - t0
    return report


def missing_kinds(stats: Counter, faults: str) -> list[str]:
    """The kill kinds of the spec string `faults` (rate > 0) that `stats` (a report's, or the
    sum over a campaign's apps) shows never drawn or never landed, as "drew no X" / "landed no
    X" phrases; [] when every kind was drawn and landed."""
    spec = FaultSpec.parse(faults)
    out = []
    for kind, (drawn, landed) in KILL_KINDS.items():
        if spec is None or not spec.rates.get(kind):
            continue
        if not stats.get(drawn):
            out.append(f"drew no {kind}")
        elif not stats.get(landed):
            out.append(f"landed no {kind}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="seeded sessions per example")
    ap.add_argument("--examples", default="",
                    help="comma-separated app names, examples or campaign workloads (default: all)")
    ap.add_argument("--faults", default=DEFAULT_FAULTS, help="fault spec without seed")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--plans", type=Path, help="run each app with DIR/<app>.yaml as its plan file, when present")
    args = ap.parse_args(argv)
    names = [n for n in args.examples.split(",") if n]
    examples = app_dirs(names)
    summary = {}
    ok = True
    totals: Counter = Counter()
    for ex in examples:
        plan = args.plans / f"{ex.name}.yaml" if args.plans else None
        rep = run_example(ex, args.runs, args.faults, args.seed,
                          plan=plan if plan is not None and plan.is_file() else None)
        summary[ex.name] = rep.as_dict()
        ok &= not rep.failures
        totals.update({k: rep.stats.get(k, 0) for k in FAULT_STATS})
        totals["sessions"] += rep.runs
        totals["failed_sessions"] += rep.runs - rep.passed
        print(f"{ex.name}: {rep.passed}/{rep.runs} sessions passed, faults {rep.as_dict()['faults']}, "
              f"{rep.seconds:.1f} s", file=sys.stderr)
        for f in rep.failures[:5]:
            print(f"  {f}", file=sys.stderr)
    missing = missing_kinds(totals, args.faults)
    if missing:
        ok = False
        print(f"campaign: {', '.join(missing)} in {totals['sessions']} sessions (raise the rate or --runs)",
              file=sys.stderr)
    print(f"campaign: {totals['sessions']} sessions, {totals['failed_sessions']} failed; landed: "
          f"{totals['kills']} kills, {totals['out_of_memory']} OOM kills, {totals['timeouts']} timeouts, "
          f"{totals['kill_before_commit']} kills before commit, {totals['crashes']} failed attempts in all "
          f"(drawn: {totals['kill_drawn']} kills, {totals['oom_drawn']} OOM, {totals['timeout_drawn']} "
          f"timeouts)", file=sys.stderr)
    print(json.dumps({"runs_per_example": args.runs, "faults": args.faults, "totals": dict(totals),
                      "examples": summary}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
