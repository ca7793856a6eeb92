"""Render, plan and apply time of generated aws apps by function count, on moto.

A generated chain (F000 -> ... -> F<n-1>) and an n-wide fan-out (Fan -> B000..B<n-1> ->
fan-in Join), unumctl_testing/apps.py, each at every size given, go through the aws target
as `unumctl plan` / `apply` / `destroy` run them (unumctl/aws/target.py): render (model,
archives, Terraform root), plan (`terraform init` + `plan` against moto_server on a free
127.0.0.1 port, the hashicorp/aws provider from the filesystem mirror), and with `--apply`
apply and destroy (Terraform's own lines go to stderr, the table to stdout). Times are wall-clock seconds; the ratios are of the largest size to the
smallest within this run (the machine's load divides out), with the function ratio beside
them: a ratio near the function ratio is linear in the function count.

    .venv/bin/python bench/scale_aws.py [--sizes 20 200] [--shapes chain fanout] [--apply] 2>/dev/null
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.aws.emulate.moto_local import aws_env, find_moto_server, moto_server  # noqa: E402
from unumctl_testing.apps import chain_app, fanout_app  # noqa: E402

SHAPES = {"chain": chain_app, "fanout": fanout_app}


def measure(shape: str, n: int, tmp: Path, apply: bool) -> dict[str, float]:
    """{"functions", "render", "plan"[, "apply", "destroy"]} (s) of one generated app."""
    from unumctl.aws.target import AwsTarget
    from unumctl.pipeline import load as load_app

    target = AwsTarget(load_app(SHAPES[shape](tmp / f"{shape}{n}", n, f"{shape}{n}")))
    out: dict[str, float] = {"functions": len(target.model.all_functions)}
    t0 = time.monotonic()
    target.render()
    out["render"] = time.monotonic() - t0
    t0 = time.monotonic()
    plan = target.plan()
    out["plan"] = time.monotonic() - t0  # renders again (the digest is unchanged), then plans
    assert plan["add"] > 0 and plan["destroy"] == 0, plan
    if apply:
        t0 = time.monotonic()
        target.apply(yes=True)
        out["apply"] = time.monotonic() - t0
        t0 = time.monotonic()
        target.destroy(yes=True)
        out["destroy"] = time.monotonic() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 200])
    ap.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=sorted(SHAPES))
    ap.add_argument("--apply", action="store_true", help="also apply and destroy each app")
    args = ap.parse_args()
    if find_moto_server() is None:
        print("moto_server not installed (pip install 'moto[server]')", file=sys.stderr)
        return 2
    sizes = sorted(set(args.sizes))
    from unumctl.aws.target import AwsTarget
    from unumctl.pipeline import load as load_app
    with tempfile.TemporaryDirectory() as tmp, moto_server() as url:
        os.environ.update(aws_env(url))
        for k in ("AWS_ENDPOINT_URL_LAMBDA", "AWS_PROFILE"):
            os.environ.pop(k, None)
        # untimed: the first render of a run pays one-time costs (imports, the build cache),
        # which would count in the smallest size only (47 s for chain 20 vs 18 s for fanout 20)
        AwsTarget(load_app(chain_app(Path(tmp) / "warm", 2, "warm"))).render()
        load = os.getloadavg()[0]
        print(f"{'shape':7} {'n':>4} {'fns':>4} {'render s':>9} {'plan s':>8} {'apply s':>8} {'destroy s':>9}")
        for shape in args.shapes:
            rows = {}
            for n in sizes:
                r = rows[n] = measure(shape, n, Path(tmp), args.apply)
                print(f"{shape:7} {n:>4} {r['functions']:>4.0f} {r['render']:>9.1f} {r['plan']:>8.1f} "
                      f"{r.get('apply', float('nan')):>8.1f} {r.get('destroy', float('nan')):>9.1f}", flush=True)
            if len(sizes) > 1:
                lo, hi = rows[sizes[0]], rows[sizes[-1]]
                ratios = "  ".join(f"{k} x{hi[k] / lo[k]:.1f}" for k in ("render", "plan", "apply", "destroy")
                                   if k in lo and lo[k] > 0)
                print(f"{shape:7} {sizes[-1]}/{sizes[0]}: functions x{hi['functions'] / lo['functions']:.1f}  "
                      f"{ratios}")
        print(f"load average (1 min) at start: {load:.1f}, {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
