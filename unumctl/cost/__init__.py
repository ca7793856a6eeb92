"""`unumctl cost`: what one execution of a workflow costs on a cloud, beside Step Functions.

    prices.py       the price table (prices.json beside it; --prices / UNUMCTL_PRICES)
    measurement.py  what a measured run did (executions, durations, counted operations)
    emulated.py     runs the app on the emulated cloud (the harness, as a child process)
    billing.py      billed lines and totals; each cloud's rules are in unumctl/<cloud>/billing.py
    stepfunctions.py the same workflow on Step Functions Standard and Express
    report.py       the report (dict for --json, text)

The bench scripts (bench/aws_calls.py, bench/aws_cost.py, bench/gcp_calls.py) measure with the
same harness and price with these modules.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .. import registry
from .emulated import EmulationError, run_emulated
from .measurement import Measurement
from .prices import PriceTableError, load_prices

__all__ = ["EmulationError", "Measurement", "PriceTableError", "cost_report", "load_prices"]


def cost_report(app_dir: Path, cloud: str, sessions: int = 1, prices_path: Path | None = None,
                input_path: Path | None = None) -> dict[str, Any]:
    """Measure the app's example input (`input_path`, default APP/input.json) `sessions` times
    on the emulated `cloud` and price it (report.build). Raises ValueError (one line) for a bad
    cloud, session count or input, PriceTableError, EmulationError, AppError (the manifest)."""
    from ..manifest import load_app
    from . import report, stepfunctions

    if cloud not in registry.priced():  # the targets with billing rules (TargetSpec `billing`)
        raise ValueError(f"--cloud: {cloud!r} is not one of {', '.join(registry.priced())} (cost runs on an emulated cloud)")
    if sessions < 1:
        raise ValueError(f"--sessions: must be >= 1, not {sessions}")
    prices = load_prices(prices_path)  # first: a bad table fails before the emulators start
    app = load_app(app_dir)
    inp = Path(input_path) if input_path is not None else app.root / "input.json"
    if not inp.is_file():
        raise ValueError(f"--input: {inp} not found (the app's example input is APP/input.json; pass --input FILE)")
    try:
        value = json.loads(inp.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"--input: {inp}: not JSON ({exc})") from None
    machine = stepfunctions.interpreted_transitions(app.root, value)
    m = run_emulated(app.root, cloud, sessions, inp)
    return report.build(m, prices, machine)
