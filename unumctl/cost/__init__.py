"""`unumctl cost`: what one execution of a workflow costs on a cloud, beside Step Functions.

    prices.py       the price table (prices.json beside it; --prices / UNUMCTL_PRICES)
    measurement.py  what a measured run did (executions, durations, counted operations)
    measure.py      the measured run on the emulated cloud (python -m unumctl.cost.measure)
    emulated.py     runs measure.py as a child process and reads its measurement
    billing.py      billed lines and totals; each cloud's rules are in unumctl/<cloud>/billing.py
    stepfunctions.py the same workflow on Step Functions Standard and Express
    systems.py      every priced system (Unum per mode, Standard, Express, Cloud Workflows)
                    behind one interface, System.price(measurement, prices, machine) -> Section
    report.py       the report (dict for --json, text): a loop over systems.SYSTEMS

The bench scripts (bench/aws_calls.py, bench/aws_cost.py, bench/gcp_calls.py) measure with the
same measured run (measure.py, in-process) and price with these modules.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

from .. import registry
from .emulated import EmulationError, run_emulated
from .measurement import Measurement
from .prices import PriceTableError, load_prices

__all__ = ["MODE_CHOICES", "EmulationError", "Measurement", "PriceTableError", "cost_plan_report", "cost_report",
           "load_prices"]


MODE_CHOICES = ("exactly-once", "at-least-once", "both")


def cost_report(app_dir: Path, cloud: str, sessions: int = 1, prices_path: Path | None = None,
                input_path: Path | None = None, mode: str = "exactly-once",
                use_plan: bool = True) -> dict[str, Any]:
    """Measure the app's example input (`input_path`, default APP/input.json) `sessions` times
    on the emulated `cloud` in `mode` (MODE_CHOICES: "exactly-once" as the manifest says,
    "at-least-once" with `runtime.checkpoint: false`, or "both": one run each) and price it
    (report.build). `use_plan` False passes `--no-plan` to the measured run (the plan file
    APP/unumctl.plan.yaml ignored). Raises ValueError (one line) for a bad cloud, session
    count, mode or input, PriceTableError, EmulationError, AppError (the manifest)."""
    from . import report, stepfunctions, systems

    prices, app_root, inp, value = _prepare(app_dir, cloud, sessions, prices_path, input_path, mode)
    machine = stepfunctions.interpreted_transitions(app_root, value)
    modes = systems.MODES if mode == "both" else (mode,)
    ms = {md: run_emulated(app_root, cloud, sessions, inp, at_least_once=(md == systems.AT_LEAST_ONCE),
                           use_plan=use_plan) for md in modes}
    return report.build(ms, prices, machine, _plan_state(app_root, use_plan))


def _plan_state(root: Path, use_plan: bool) -> dict[str, Any]:
    """report.plan_state of the app at `root`: its plan file (unumctl.tuning.planfile), and
    whether the measured run applied it (`use_plan`, as measure.py does)."""
    from .report import plan_state
    if importlib.util.find_spec("unumctl.tuning") is None:
        return plan_state(None, False)
    from ..pipeline import load as load_app
    from ..tuning import planfile
    plan = planfile.load(root, load_app(root).workflow.functions)
    return plan_state(str(planfile.plan_path(root)) if plan is not None else None, use_plan, plan)


def cost_plan_report(app_dir: Path, cloud: str, sessions: int = 1, prices_path: Path | None = None,
                     input_path: Path | None = None, mode: str = "exactly-once") -> dict[str, Any]:
    """`unumctl cost --plan`: cost_report with the plan file ignored (before) and applied
    (after), side by side (report.compare). ValueError (one line) when the app has no plan
    file (APP/unumctl.plan.yaml; `unumctl tune` writes it) or the plan loader
    (unumctl.tuning.planfile) is not installed; the errors of cost_report."""
    from . import report
    from ..pipeline import load as load_app

    _prepare(app_dir, cloud, sessions, prices_path, input_path, mode)  # bad flags fail before any run
    try:
        has_plan_module = importlib.util.find_spec("unumctl.tuning.planfile") is not None
    except ModuleNotFoundError:  # no unumctl.tuning package at all
        has_plan_module = False
    if not has_plan_module:
        raise ValueError("--plan: this unumctl has no plan files (unumctl.tuning.planfile is missing)")
    from ..tuning import planfile

    app = load_app(app_dir)
    root = app.root
    if planfile.load(root, app.workflow.functions) is None:
        raise ValueError(f"--plan: no plan file {root / 'unumctl.plan.yaml'} (write one with: unumctl tune {app_dir})")
    before = cost_report(app_dir, cloud, sessions, prices_path, input_path, mode, use_plan=False)
    after = cost_report(app_dir, cloud, sessions, prices_path, input_path, mode, use_plan=True)
    return report.compare(before, after)


def _prepare(app_dir: Path, cloud: str, sessions: int, prices_path: Path | None, input_path: Path | None,
             mode: str) -> tuple[dict[str, Any], Path, Path, Any]:
    """Check the flags, read the price table, the app and its input: (prices, app root, input
    path, input value). ValueError, PriceTableError, AppError."""
    from ..pipeline import load as load_app

    if cloud not in registry.priced():  # the targets with billing rules (TargetSpec `billing`)
        raise ValueError(f"--cloud: {cloud!r} is not one of {', '.join(registry.priced())} (cost runs on an emulated cloud)")
    if sessions < 1:
        raise ValueError(f"--sessions: must be >= 1, not {sessions}")
    if mode not in MODE_CHOICES:
        raise ValueError(f"--mode: {mode!r} is not one of {', '.join(MODE_CHOICES)}")
    prices = load_prices(prices_path)  # first: a bad table fails before the emulators start
    app = load_app(app_dir)
    inp = Path(input_path) if input_path is not None else app.root / "input.json"
    if not inp.is_file():
        raise ValueError(f"--input: {inp} not found (the app's example input is APP/input.json; pass --input FILE)")
    try:
        value = json.loads(inp.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--input: {inp}: not JSON ({exc})") from None
    return prices, app.root, inp, value
