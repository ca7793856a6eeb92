"""The same workflow on AWS Step Functions, Standard and Express, priced from the table
(prices.json `aws.stepfunctions_*`; Step Functions pricing page, cited there).

Both run the app's functions as Lambda Task states: Lambda requests and GB-seconds are those
of the measured executions (the same durations and manifest memory; they include Unum's own
runtime work in each function, so this slightly overstates Step Functions' Lambda part).

- Standard bills state transitions. For a Step Functions app (`workflow.stepfunctions`), the
  state machine is run once on the example input in the ASL interpreter
  (runtime/asl/machine.py) with the app's own handlers, counting every state entered
  (Map/Parallel iterations and retries included) and the Lambda Tasks called. For an IR app
  there is no state machine: each function execution counts as one Task state entered (the
  Map/Parallel states an equivalent machine would need add at least one each, so this is a
  lower bound of Standard's cost).
- Express bills one request per execution plus its duration (the measured session duration,
  entry invoke to result, rounded up to the billing increment) x its memory, taken at the
  smallest bucket (stepfunctions_express_memory_increment_mb, 64 MB).
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import sys
import traceback
from pathlib import Path
from typing import Any

from .billing import Line, for_cloud, lambda_lines, line, transitions
from .measurement import Measurement

__all__ = ["express", "interpreted_transitions", "standard"]


class _Ctx:
    """The Lambda context the interpreter passes to a handler (names only)."""

    def __init__(self, fn: str):
        self.function = fn
        self.instance = fn
        self.session = "cost"
        self.index = self.size = None
        self.indexes: list[Any] = []
        self.sizes: list[Any] = []
        self.iteration = 0


def interpreted_transitions(root: Path, value: Any) -> tuple[int, int] | None:
    """(state transitions, Lambda Task calls) of one execution of the Step Functions app at
    `root` on input `value`, in the ASL interpreter with the app's handlers (imported from
    their code directories, run in this process). None for an IR app, or a machine with
    callback Tasks (.waitForTaskToken needs a platform to wait on). A failed execution still
    counts the states it entered."""
    from runtime.asl.errors import AslError
    from runtime.asl.machine import Machine, lambda_cause
    from runtime.asl.wrapper import lambda_name

    from ..asl import load_definition, resolver
    from ..manifest import load_manifest

    manifest = load_manifest(root)
    if manifest.workflow.stepfunctions is None:
        return None
    definition = load_definition(root / manifest.workflow.stepfunctions)
    if ".waitForTaskToken" in json.dumps(definition):
        return None
    resolve = resolver(manifest.functions)
    handlers = {}
    for name, spec in manifest.functions.items():
        mod_name, _, fn = spec.handler.rpartition(".")
        path = root / spec.code / (mod_name.replace(".", "/") + ".py")
        sp = importlib.util.spec_from_file_location(f"unum_cost_{root.name}_{name}", path)
        assert sp is not None and sp.loader is not None  # a .py path always has a spec
        mod = importlib.util.module_from_spec(sp)
        with contextlib.redirect_stdout(sys.stderr):
            sp.loader.exec_module(mod)
        handlers[name] = getattr(mod, fn)
    calls = 0

    def invoke(ref, event):
        nonlocal calls
        calls += 1
        name = resolve(lambda_name(ref))
        try:
            return handlers[name](event, _Ctx(name))
        except Exception as exc:  # noqa: BLE001 - the handler's error becomes the Task's error, as on Lambda
            raise AslError(type(exc).__name__, lambda_cause(type(exc).__name__, str(exc),
                           traceback.format_exception(exc))) from None

    m = Machine(definition, {"Id": "x", "Name": "x", "StartTime": "x", "Input": value},
                clock=lambda: 0.0, sleep=lambda s: None, start_time=0.0)
    with contextlib.redirect_stdout(sys.stderr):  # the handlers' prints stay off the report
        try:
            m.run_inline("", definition["StartAt"], value, invoke)
        except AslError:
            pass
    return m.transitions, calls


def standard(m: Measurement, prices: dict[str, Any], machine: tuple[int, int] | None) -> tuple[list[Line], float, str]:
    """(cost lines per execution, state transitions, how they were counted) on Step Functions
    Standard. `machine`: interpreted_transitions() of the app, or None for an IR app."""
    a = prices["aws"]
    execs = transitions(m)
    n: float
    tasks: float
    if machine is not None:
        n, tasks = machine
        how = "ASL states entered in the interpreter on the same input (Map/Parallel iterations included)"
    else:
        n, tasks = execs, execs
        how = ("IR app: one Task state per function execution (lower bound: an equivalent machine's "
               "Map/Parallel states add more)")
    lines = _task_lambda(m, prices, tasks, execs)
    lines.append(line("stepfunctions", "Standard state transitions", n, "transition",
                       a["stepfunctions_standard_per_thousand_transitions"] / 1e3))
    return lines, float(n), how


def express(m: Measurement, prices: dict[str, Any], machine: tuple[int, int] | None) -> list[Line]:
    """Cost lines per execution on Step Functions Express (module docstring)."""
    a = prices["aws"]
    execs = transitions(m)
    tasks = machine[1] if machine is not None else execs
    lines = _task_lambda(m, prices, tasks, execs)
    inc = a["stepfunctions_express_billing_increment_ms"] or 1
    mem = a["stepfunctions_express_memory_increment_mb"]
    billed_s = sum(math.ceil(ms / inc) * inc / 1000 for ms in m.session_ms) / len(m.session_ms)
    lines.append(line("stepfunctions", "Express requests", 1, "request",
                       a["stepfunctions_express_per_million_requests"] / 1e6))
    lines.append(line("stepfunctions", f"Express duration (measured session {billed_s:g} s billed, at {mem} MB)",
                       billed_s * mem / 1024, "GB-second", a["stepfunctions_express_gb_second"]))
    return lines


def _task_lambda(m: Measurement, prices: dict[str, Any], tasks: float, execs: float) -> list[Line]:
    """Lambda lines of `tasks` Task calls per execution, GB-seconds scaled from the measured
    executions of the workflow's functions, plus the functions' own log lines (Lambda writes
    them whoever orchestrates; the history's lines are Unum's and left out)."""
    lines = lambda_lines(m, prices, requests=tasks, scale=tasks / execs if execs else 0.0)
    return lines + for_cloud(m.cloud).function_log_lines(m, prices)
