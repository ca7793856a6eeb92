"""Every system `unumctl cost` prices, behind one interface, registered in one place.

A system is one way to run the app's workflow and be billed for it: Unum on the measured
cloud in one of its modes (exactly-once, at-least-once), AWS Step Functions Standard and
Express, Google Cloud Workflows. Each is a `System`; `SYSTEMS` lists them in report order and
report.py is a loop over it:

    for system in SYSTEMS:
        m = measurements[system.mode] (Unum) or the reference measurement (hosted orchestrators)
        section = system.price(m, prices, machine)

- `System.price(m, prices, machine) -> Section`: the billed lines per workflow execution of
  measurement `m` (measurement.py) priced with the table `prices` (prices.py); `machine` is
  stepfunctions.interpreted_transitions() of a Step Functions app, None for an IR app.
  Raises ValueError when the measured cloud lacks the billing rules a system needs
  (CloudBilling.task_lines); every price it reads is one prices.load_prices requires.
- Unum systems price the measurement of their own mode (the app run with that mode);
  the hosted orchestrators (`mode` None) price the same functions' executions of the
  reference measurement (`reference`: the at-least-once run when there is one, its functions
  doing less of Unum's own work, else the exactly-once run).

Sources: the rules of each cloud in unumctl/<cloud>/billing.py; Step Functions in
stepfunctions.py; Cloud Workflows below and in docs/cost.md; prices and their pages in
prices.json `_sources`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from . import billing, stepfunctions
from .billing import Line, for_cloud, line
from .measurement import Measurement

EXACTLY_ONCE = "exactly-once"
AT_LEAST_ONCE = "at-least-once"
MODES = (EXACTLY_ONCE, AT_LEAST_ONCE)


@dataclass
class Section:
    """One priced system: `key` (the report's JSON key), `title`, `lines` (billing.Line per
    workflow execution) and `extra` (JSON fields the system adds, e.g. Standard's
    `transitions`, Cloud Workflows' `steps`)."""

    key: str
    title: str
    lines: list[Line]
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def per_execution(self) -> float:
        """USD per workflow execution (one session)."""
        return billing.total(self.lines)

    def as_dict(self) -> dict[str, Any]:
        """{"title", "lines", "per_execution", "per_million", **extra} (report.py's shape)."""
        usd = self.per_execution
        return {"title": self.title, "lines": [x.as_dict() for x in self.lines],
                "per_execution": usd, "per_million": usd * 1e6, **self.extra}


class System:
    """A way to run and bill the app's workflow. Subclasses set `key`, `title`, `mode` (the
    Unum mode whose measurement they price; None for a hosted orchestrator, which prices the
    reference measurement) and implement `price`."""

    key: str = ""
    title: str = ""
    mode: str | None = None
    hosted: bool = True

    def title_for(self, cloud: str) -> str:
        """The report's title of this system for a run on `cloud`."""
        return self.title

    def price(self, m: Measurement, prices: dict[str, Any], machine: tuple[int, int] | None) -> Section:
        """The lines per workflow execution of `m` on this system (module docstring)."""
        raise NotImplementedError


class Unum(System):
    """Unum on the measured cloud in `mode`: the cloud's billing rules (unumctl/<cloud>/billing.py)
    applied to the run of the app in that mode. `extra`: mode, unpriced (counted operations
    the table does not map: listed, never dropped)."""

    hosted = False

    def __init__(self, mode: str, key: str):
        self.mode, self.key = mode, key
        self.title = f"Unum ({mode})"

    def title_for(self, cloud: str) -> str:
        """"Unum on <cloud>, <mode>"."""
        return f"Unum on {cloud}, {self.mode}"

    def price(self, m, prices, machine):
        lines, unpriced = billing.unum_lines(m, prices)
        return Section(self.key, self.title_for(m.cloud), lines, {"mode": self.mode, "unpriced": unpriced})


class StepFunctionsStandard(System):
    """AWS Step Functions Standard: state transitions + the Lambda Tasks (stepfunctions.standard).
    `extra`: transitions, transitions_source."""

    key, title = "stepfunctions_standard", "Step Functions Standard"

    def price(self, m, prices, machine):
        lines, n, how = stepfunctions.standard(m, prices, machine)
        return Section(self.key, self.title, lines, {"transitions": n, "transitions_source": how})


class StepFunctionsExpress(System):
    """AWS Step Functions Express: requests + measured session duration at 64 MB + the
    Lambda Tasks (stepfunctions.express)."""

    key, title = "stepfunctions_express", "Step Functions Express"

    def price(self, m, prices, machine):
        return Section(self.key, self.title, stepfunctions.express(m, prices, machine))


class CloudWorkflows(System):
    """Google Cloud Workflows: billable steps, internal and external, each at its price per
    1,000 (prices.json gcp.workflows_internal_step_per_thousand /
    workflows_external_step_per_thousand; cloud.google.com/workflows/pricing: every step
    executed is billed, retries included; an assignment, a condition, a call to a Cloud Run
    function or to *.run.app is INTERNAL; a request outside Google Cloud is EXTERNAL; the
    monthly free steps are not applied), plus the functions it calls (the measured cloud's
    functions' lines, `CloudBilling.task_lines`: Lambda on aws, Cloud Functions on gcp).

    Steps counted (`workflow_steps`):
    - Step Functions app: the interpreted state machine on the same input: each state
      entered is one step (a Task state one call step, a Pass an assignment, a Choice a
      condition, a Map/Parallel one `parallel` step; iterations counted by the interpreter),
      plus the final `return`;
    - IR app (lower bound): one call step per function execution (a `call: http.post` with
      `result:` stores its value in the same step) plus the final `return`; the `parallel
      for` steps and assignments a real definition needs add more.
    Call steps are internal on gcp (the functions are Cloud Run functions) and external on
    aws (Lambda is outside Google Cloud: the comparison a user of both clouds would make).
    `extra`: steps {"internal", "external"}, steps_source."""

    key, title = "cloud_workflows", "Google Cloud Workflows"

    def price(self, m, prices, machine):
        g = prices["gcp"]
        calls, other, how = workflow_steps(m, machine)
        external = 0.0 if for_cloud(m.cloud).workflows_calls_internal else calls
        internal = calls + other - external
        task_lines = for_cloud(m.cloud).task_lines
        if task_lines is None:
            raise ValueError(f"Cloud Workflows: no function billing rules for {m.cloud!r} (CloudBilling.task_lines)")
        lines = task_lines(m, prices, calls, billing.transitions(m))
        if external:
            lines.append(line("workflows", f"internal steps ({other:g} assignments, conditions, return)",
                              internal, "step", g["workflows_internal_step_per_thousand"] / 1e3))
            lines.append(line("workflows", f"external steps ({calls:g} calls to the {m.cloud} functions, outside Google Cloud)",
                              external, "step", g["workflows_external_step_per_thousand"] / 1e3))
        else:
            lines.append(line("workflows", f"internal steps ({calls:g} calls to Cloud Run functions + "
                              f"{other:g} assignments, conditions, return)",
                              internal, "step", g["workflows_internal_step_per_thousand"] / 1e3))
        return Section(self.key, self.title, lines,
                       {"steps": {"internal": internal, "external": external}, "steps_source": how})


def workflow_steps(m: Measurement, machine: tuple[int, int] | None) -> tuple[float, float, str]:
    """(call steps, other steps, how counted) of one execution on Cloud Workflows
    (CloudWorkflows' docstring)."""
    if machine is not None:
        n, tasks = machine
        return float(tasks), float(n - tasks) + 1, ("ASL states entered in the interpreter on the same input, "
                                                    "one step each (Task = a call), + the return")
    execs = billing.transitions(m)
    return execs, 1.0, ("IR app: one call step per function execution + the return (lower bound: "
                        "`parallel for` steps and assignments add more)")


# the one registry of priced systems, in report order
SYSTEMS: tuple[System, ...] = (
    Unum(EXACTLY_ONCE, "unum"),
    Unum(AT_LEAST_ONCE, "unum_at_least_once"),
    StepFunctionsStandard(),
    StepFunctionsExpress(),
    CloudWorkflows(),
)


def reference(measurements: dict[str, Measurement]) -> Measurement:
    """The measurement the hosted orchestrators price: at-least-once when measured, else
    exactly-once (module docstring). ValueError when `measurements` is empty."""
    for mode in (AT_LEAST_ONCE, EXACTLY_ONCE):
        if mode in measurements:
            return measurements[mode]
    raise ValueError("no measurement to price")


def price_all(measurements: dict[str, Measurement], prices: dict[str, Any],
              machine: tuple[int, int] | None) -> list[Section]:
    """Every registered system that can be priced from `measurements` (mode -> Measurement),
    in SYSTEMS order: a Unum mode only when it was measured."""
    ref = reference(measurements)
    out = []
    for s in SYSTEMS:
        if s.mode is not None:
            if s.mode in measurements:
                out.append(s.price(measurements[s.mode], prices, machine))
        else:
            out.append(s.price(ref, prices, machine))
    return out


__all__ = ["AT_LEAST_ONCE", "EXACTLY_ONCE", "MODES", "SYSTEMS", "CloudWorkflows", "Section", "System",
           "StepFunctionsExpress", "StepFunctionsStandard", "Unum", "for_cloud", "price_all", "reference",
           "workflow_steps"]
