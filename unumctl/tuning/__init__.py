"""Planning from history (issue 25; seed 004 `004_448a6e1ded51349b.txt`, Serverless
Dataflows: metadata of past runs, prediction, planning before a run).

- `planfile`: the plan file `APP/unumctl.plan.yaml` (TunePlan, load, dump, applied);
- `metrics`: per-function and per-edge measurements from a target's recorded sessions
  (FunctionStats, EdgeStats, collect);
- `memory`: memory per function (Power Tuning's candidates, seed 004 Algorithm 2's
  downgrade of functions off the critical path);
- `colocate`: fusion and batching (which groups, `choose`; the IR they run as, `apply`;
  docs/fusion.md).

`unumctl tune` (unumctl/cli.py) runs them; docs/tune.md describes the plan file.
"""

__all__: list[str] = []  # submodules only
