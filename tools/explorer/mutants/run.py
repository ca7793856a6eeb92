"""Run the engine mutants (issue 22) against the explorer and, optionally, the test suite.

For each mutant (tools/explorer/mutants/<name>.py): explore its WORKFLOWS with the mutation
installed in this process and compare the violation kinds (invariant, class) with those the
unmutated engine shows on the same workflows and bounds (the baseline: the engine on a branch
may still have known defects); a kind that only the mutant shows is a catch. With `tests`,
run each of its TESTS files in a subprocess whose Python processes all carry the mutation
(UNUM_MUTANT, tools/explorer/mutants/site/sitecustomize.py), and say which files fail (a file
that fails without the mutation too is reported as such, not as a catch).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..classify import classify
from ..search import Bounds, explore, run_schedule
from ..workflows import all_workflows
from . import ORDER, MutantNotApplicable, Patcher, load

ROOT = Path(__file__).resolve().parents[3]
SITE = Path(__file__).resolve().parent / "site"


@dataclass
class MutantResult:
    """What one mutant did: `caught` maps workflow -> [(invariant, class, message)] of kinds
    the baseline does not have; `schedules` workflow -> schedules explored under the mutant;
    `tests` file -> 'fails' | 'passes' | 'fails without the mutant too' | 'timeout'."""

    name: str
    about: str
    invisible: str | None
    caught: dict[str, list[tuple[str, str, str]]] = field(default_factory=dict)
    schedules: dict[str, int] = field(default_factory=dict)
    tests: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    baseline: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # the unmutated engine's kinds
    same: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # kinds both show

    @property
    def as_baseline(self) -> bool:
        """Not caught beyond the baseline, but the mutant shows kinds the unmutated engine
        shows too: the engine under test already behaves like the mutation there."""
        return not self.caught and bool(self.same)

    def as_dict(self) -> dict[str, Any]:
        return {"mutant": self.name, "about": self.about, "invisible": self.invisible,
                "caught": {w: [list(k) for k in ks] for w, ks in self.caught.items()},
                "schedules": self.schedules, "tests": self.tests, "error": self.error,
                "baseline": {w: [list(k) for k in ks] for w, ks in self.baseline.items()},
                "same_as_baseline": {w: [list(k) for k in ks] for w, ks in self.same.items()}}


def _kinds(spec, bounds: Bounds) -> tuple[dict[tuple[str, str], str], int]:
    rep = explore(spec, bounds.merged(spec.bounds), classify=classify)
    return {k: f.message for k, f in rep.found.items()}, rep.schedules


def run_tests(files: list[str], mutant: str | None, timeout: float) -> dict[str, str]:
    """Run each test file (pytest -x -q) under `mutant` (None: unmutated); file -> outcome."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SITE), str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    env["UNUM_MUTANT_ROOT"] = str(ROOT)
    if mutant:
        env["UNUM_MUTANT"] = mutant
    else:
        env.pop("UNUM_MUTANT", None)
    out = {}
    for f in files:
        try:
            r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", f],
                               cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
            out[f] = "passes" if r.returncode == 0 else "fails"
        except subprocess.TimeoutExpired:
            out[f] = "timeout"
    return out


def run(names: list[str] | None = None, budget: int = 300, seconds: float = 30.0, tests: bool = False,
        test_timeout: float = 600.0, log=print) -> list[MutantResult]:
    """Run the mutants `names` (default: all, in ORDER); see the module docstring."""
    wfs = all_workflows()
    bounds = Bounds(budget=budget, seconds=seconds)
    baseline: dict[tuple[str, str], dict[tuple[str, str], str]] = {}
    base_tests: dict[str, str] = {}
    results = []
    for name in names or ORDER:
        mod = load(name)
        res = MutantResult(mod.NAME, mod.ABOUT, mod.INVISIBLE)
        mb = bounds.merged(getattr(mod, "BOUNDS", {}))
        for w in mod.WORKFLOWS:
            if (w, str(mb)) not in baseline:
                baseline[(w, str(mb))], _ = _kinds(wfs[w], mb)
        p = Patcher()
        t0 = time.monotonic()
        try:
            mod.apply(p)
            for w in mod.WORKFLOWS:
                kinds, n = _kinds(all_workflows()[w], mb)
                res.schedules[w] = n
                if baseline[(w, str(mb))]:
                    res.baseline[w] = sorted(baseline[(w, str(mb))])
                both = sorted(k for k in kinds if k in baseline[(w, str(mb))])
                if both:
                    res.same[w] = both
                new = [(inv, cls, msg) for (inv, cls), msg in kinds.items()
                       if (inv, cls) not in baseline[(w, str(mb))]]
                if new:
                    res.caught[w] = new
            witness = getattr(mod, "WITNESS", None)
            if witness is not None and not res.caught:
                w, schedule = witness
                try:
                    h = run_schedule(all_workflows()[w], [tuple(a) for a in schedule])
                    kinds = {(v.invariant, classify(wfs[w], v, h)): v.message for v in h.checker.violations}
                except ValueError as exc:  # the engine changed: the witness no longer replays
                    kinds = {}
                    res.error = f"witness schedule no longer replays ({exc})"
                if kinds:
                    res.caught[f"{w} (witness schedule)"] = [(i, c, m) for (i, c), m in kinds.items()]
        except MutantNotApplicable as exc:
            res.error = f"not applicable: {exc}"
        finally:
            p.undo()
        log(f"{mod.NAME}: explorer {'caught' if res.caught else 'did not catch'} it "
            f"({time.monotonic() - t0:.0f} s)")
        if tests and res.error is None:
            todo = [f for f in mod.TESTS if f not in base_tests]
            base_tests.update(run_tests(todo, None, test_timeout))
            for f, outcome in run_tests(mod.TESTS, name, test_timeout).items():
                res.tests[f] = ("fails without the mutant too" if outcome == "fails" and base_tests[f] != "passes"
                                else outcome)
            log(f"{mod.NAME}: tests {res.tests}")
        results.append(res)
    return results


def table(results: list[MutantResult]) -> str:
    """The markdown table of the closing note."""
    rows = ["| mutation | caught by the explorer (invariant, class: workflow) | caught by the tests "
            "(failing files) | schedules per workflow |", "|---|---|---|---|"]
    for r in results:
        if r.error:
            ex = r.error
        elif r.caught:
            ex = "; ".join(f"({inv}) {cls}: {w}" for w, ks in r.caught.items() for inv, cls, _ in ks)
        elif r.as_baseline:
            ex = ("found, but the unmutated engine shows the same: " + "; ".join(
                f"({inv}) {cls}: {w}" for w, ks in r.same.items() for inv, cls in ks)
                  + " (the engine under test already has this defect)")
        else:
            ex = "no" + (f" (cannot change what a user sees: {r.invisible})" if r.invisible else
                         " — MISSED (user-visible)")
        fails = [f.split("/")[-1] for f, o in r.tests.items() if o == "fails"]
        ts = (", ".join(fails) if fails else "no") if r.tests else "not run"
        sc = ", ".join(f"{w} {n}" for w, n in r.schedules.items())
        rows.append(f"| {r.name} | {ex} | {ts} | {sc} |")
    return "\n".join(rows)


def main(args) -> int:
    """`tools/explore.py --mutants [names]`: print the table; exit 1 when a user-visible
    mutant was not caught by the explorer."""
    names = [n for n in args.mutants.split(",") if n] or None
    results = run(names, budget=args.budget, seconds=min(args.seconds, 1e6), tests=args.mutant_tests,
                  log=lambda m: print(m, file=sys.stderr))
    print(table(results))
    if args.json:
        print(json.dumps({"mutants": [r.as_dict() for r in results]}))
    missed = [r.name for r in results if not r.caught and not r.invisible and not r.as_baseline]
    return 1 if missed else 0
