"""Price an app with and without a fuse/batch plan on an emulated cloud (issue 25).

Usage: python tools/fusion_cost.py APP_DIR --cloud aws|gcp [--sessions N] --plan JSON
  e.g. python tools/fusion_cost.py examples/wordcount --cloud aws \
         --plan '{"fuse": [["Split", "Mapper", "Partition", "Reducer", "Summary"]]}'

Runs `unumctl.cost.measure` (the measured run of `unumctl cost`: moto + the emulated Lambda,
or the GCP emulators) twice, on the app as loaded and on the app with the plan applied
(`unumctl.tuning.colocate.apply`), prices both with unumctl/cost/report.py, and prints Unum's
$ per million sessions, Step Functions Standard's and Express's for the UNPLANNED workflow
(the plan changes Unum's invocations, not what a state machine would run), the ratios and the
session wall times. Times are the emulator's (indicative). Takes a minute or two: not in CI.
Until `unumctl cost --plan` lands (issue 25, h28), this is the before/after measurement.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import unumctl.pipeline as pipeline  # noqa: E402
from unumctl.cost import report  # noqa: E402
from unumctl.cost.measurement import Measurement  # noqa: E402
from unumctl.cost.prices import load_prices  # noqa: E402
from unumctl.tuning import colocate  # noqa: E402
from unumctl import registry  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python tools/fusion_cost.py", description=__doc__.splitlines()[0])
    ap.add_argument("app", type=Path)
    ap.add_argument("--cloud", choices=("aws", "gcp"), required=True)
    ap.add_argument("--sessions", type=int, default=3)
    ap.add_argument("--plan", required=True, help='JSON {"fuse": [[...]], "batch": {"T": k}}')
    args = ap.parse_args(argv)
    plan = json.loads(args.plan)
    app_dir = args.app.resolve()
    value = json.loads((app_dir / "input.json").read_text())
    load = pipeline.load
    run = registry.part(args.cloud, "measure")
    out = {}
    try:
        for label, fuse, batch in (("plain", [], {}), ("planned", plan.get("fuse", []), plan.get("batch", {}))):
            # the measured run loads the app itself (pipeline.load_planned): hand it the planned one
            pipeline.load = lambda p, f=fuse, b=batch: colocate.apply(load(p), f, b)
            out[label] = report.build(Measurement.from_json(run(app_dir, value, args.sessions)), load_prices(), None)
    finally:
        pipeline.load = load
    plain = out["plain"]
    std, exp = plain["stepfunctions_standard"]["per_million"], plain["stepfunctions_express"]["per_million"]
    rows = [("", "Unum $/M sessions", "Standard / Unum", "Express / Unum", "session ms")]
    for label, r in out.items():
        u = r["unum"]["per_million"]
        rows.append((label, f"{u:.2f}", f"{std / u:.2f}x", f"{exp / u:.2f}x",
                     " ".join(f"{x:.0f}" for x in r["assumptions"]["session_ms"])))
    print(f"{app_dir.name} on {args.cloud}, plan {json.dumps(plan)}; Standard ${std:.2f}/M, Express ${exp:.2f}/M "
          "(the unplanned workflow)")
    for row in rows:
        print(" | ".join(f"{c:>18}" for c in row))
    print(json.dumps({k: {"unum_per_million": v["unum"]["per_million"], "session_ms": v["assumptions"]["session_ms"]}
                      for k, v in out.items()} | {"standard_per_million": std, "express_per_million": exp}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
