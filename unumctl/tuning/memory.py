"""Memory per function (issue 25 item 2): AWS Lambda Power Tuning's idea (run, or here
predict, each candidate size and show its cost and speed;
https://github.com/alexcasalboni/aws-lambda-power-tuning) with seed 004's Algorithm 2
(Resource Downgrading: downgrade the workers off the critical path while the critical path
does not grow), on measured sessions (unumctl.tuning.metrics).

**Candidates** come from the target's Sizing (unumctl/tuning/sizing.py; its TargetSpec's
`sizing`): aws (and local, which stands for it: unumctl/local/stands_for.py; unumctl/aws/sizing.py): 128, 256, 512, 1024,
1536, 3008 MB (Power Tuning's default power values), 1769 (one full vCPU) and 5120, 10240
(Lambda's range is 128 to 10,240 MB,
https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). gcp
(unumctl/gcp/sizing.py): the gen2 memory settings 128 to 8192 MB with the default vCPU of
their tier (unumctl/cost/prices.json `functions_vcpu_by_memory_mb`).

**CPU share.** Lambda allocates CPU in proportion to memory, 1,769 MB = one vCPU (the
page above); gen2, the tier's vCPU. A Python handler runs on one thread, so the usable share
is capped at 1 vCPU: above 1,769 MB Lambda is not predicted faster.

**Duration model.** An execution measured at size m0 took d = io + cpu, where `io` is its
wait on datastore and invoke calls (`datastore_ms + invoke_ms` of its history event), which
does not scale with the CPU share, and `cpu` the rest (user code and the runtime's own
work), treated as CPU-bound: at size m it takes io + cpu x share(m0) / share(m). With one
measured size this is conservative for a smaller size (user code that waits on its own I/O
slows less than predicted) and optimistic for a larger one, so a larger size is chosen only
when the objective asks for speed or when it is predicted faster AND cheaper.

**Cost per execution** at size m: the billed duration (rounded up to the target's increment:
Lambda 1 ms, gen2 100 ms) x memory (GB-s; gen2 also vCPU-s of the tier) + the request
charge, with the price table's unit prices (prices.json), averaged over the executions.

**Critical path.** The workflow graph (each function's IR Next targets) weighted by each
function's mean over sessions of its longest execution in the session (a Map's slowest
branch); back edges of cycles are ignored. Its length with the measured durations is
`measured_cp_ms`; a plan is accepted only if its predicted length stays within
`latency_bound` x that.

**Choice** (`plan_memory`): start from the measured sizes; (1) Algorithm 2: for each function
off the critical path, in topological order, try smaller candidates from the largest down
and keep each one that is cheaper while the predicted critical path stays within the bound;
stop at the first one that breaks it (the seed reverts and moves on to the next worker);
(2) the same for the functions on the critical path, within the bound's slack (the seed
keeps them, which is bound 1.0); (3) objective `cost` (default): raise a function's memory
only if predicted faster and cheaper; `speed`: each function on the critical path takes its
fastest candidate (ties: the cheaper); `balanced`: the candidate with the least
cost/cheapest + duration/fastest (Power Tuning's balanced strategy with weight 0.5).
A candidate below 1.25 x the function's measured peak memory is never chosen.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from .metrics import Metrics, billed
from .sizing import for_cloud

__all__ = ["candidates_for", "graph_of", "plan_memory", "table"]

MEMORY_HEADROOM = 1.25  # x measured peak memory: smaller candidates are not chosen
OBJECTIVES = ("cost", "speed", "balanced")


@dataclass
class Candidate:
    """One size of one function: `memory_mb`, predicted mean `duration_ms`, predicted `usd`
    per execution, `fits` (not below the measured peak memory's headroom)."""

    memory_mb: int
    duration_ms: float
    usd: float
    fits: bool = True


@dataclass
class FunctionChoice:
    """A function's candidates (ascending memory), its `measured_mb`, the `chosen_mb`,
    whether it is `on_critical_path` (measured), and `reason`."""

    name: str
    measured_mb: int
    candidates: list[Candidate]
    chosen_mb: int
    on_critical_path: bool
    reason: str = ""

    def candidate(self, mb: int) -> Candidate:
        return next(c for c in self.candidates if c.memory_mb == mb)


@dataclass
class MemoryPlan:
    """What `plan_memory` returns: per function choices, the critical path (function names)
    and its measured and predicted length (ms), the bound and objective used, and the
    predicted USD per session before and after."""

    functions: dict[str, FunctionChoice]
    critical_path: list[str]
    measured_cp_ms: float
    predicted_cp_ms: float
    latency_bound: float
    objective: str
    usd_before: float = 0.0
    usd_after: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def memory(self) -> dict[str, int]:
        """function -> chosen MB (every function)."""
        return {n: c.chosen_mb for n, c in self.functions.items()}


def candidates_for(cloud: str) -> tuple[int, ...]:
    """Candidate sizes of `cloud` (MB, ascending): its Sizing's (unumctl.tuning.sizing)."""
    return for_cloud(cloud).candidates_mb


def cpu_share(cloud: str, memory_mb: int, prices: dict[str, Any]) -> float:
    """The usable vCPU share of one Python thread at `memory_mb` on `cloud`: its Sizing's
    vCPU (Lambda memory / 1,769 MB; gen2 the tier's), capped at 1."""
    return min(1.0, for_cloud(cloud).vcpu(memory_mb, prices))


def predict_ms(duration_ms: float, io_ms: float, share0: float, share: float) -> float:
    """The duration model: `io_ms` unchanged, the rest x share0 / share."""
    io = min(io_ms, duration_ms)
    return io + (duration_ms - io) * share0 / share


def execution_usd(cloud: str, memory_mb: int, duration_ms: float, increment_ms: float,
                  prices: dict[str, Any]) -> float:
    """The compute and request price of one execution of `duration_ms` at `memory_mb`
    (prices.json; Lambda: GB-s + request; gen2: GiB-s + vCPU-s of the tier + invocation),
    the duration billed per `increment_ms`: the target's Sizing.usd."""
    return for_cloud(cloud).usd(memory_mb, billed(duration_ms, increment_ms) / 1000, prices)


def topological(graph: dict[str, list[str]]) -> list[str]:
    """The functions of `graph` (function -> successors) in topological order, back edges of
    cycles ignored (depth-first from the functions nobody calls, then any left)."""
    order: list[str] = []
    state: dict[str, int] = {}

    def visit(n: str) -> None:
        state[n] = 1
        for m in graph.get(n, []):
            if m in graph and state.get(m) is None:
                visit(m)
        state[n] = 2
        order.append(n)

    called = {m for succ in graph.values() for m in succ}
    for n in sorted(graph, key=lambda n: (n in called, n)):
        if state.get(n) is None:
            visit(n)
    return order[::-1]


def critical_path(graph: dict[str, list[str]], weight: dict[str, float]) -> tuple[float, list[str]]:
    """The longest path of `graph` with node weights `weight` (ms; missing = 0), back edges
    ignored: (length ms, the functions on it in order)."""
    order = topological(graph)
    pos = {n: i for i, n in enumerate(order)}
    best: dict[str, tuple[float, list[str]]] = {}
    for n in reversed(order):
        tail = max((best[m] for m in graph.get(n, []) if m in best and pos[m] > pos[n]),
                   key=lambda t: t[0], default=(0.0, []))
        best[n] = (weight.get(n, 0.0) + tail[0], [n] + tail[1])
    return max(best.values(), key=lambda t: t[0], default=(0.0, []))


def plan_memory(graph: dict[str, list[str]], metrics: Metrics, measured_mb: dict[str, int],
                prices: dict[str, Any], latency_bound: float = 1.10, objective: str = "cost",
                candidates: tuple[int, ...] | None = None) -> MemoryPlan:
    """Choose a memory size per function (see the module docstring).

    `graph`: function -> successor functions (IR Next targets); `metrics`: measured sessions
    (unumctl.tuning.metrics.collect); `measured_mb`: the size each function ran at; `prices`:
    the price table; `latency_bound` >= 1.0; `objective` one of OBJECTIVES; `candidates`:
    sizes to consider (default `candidates_for(metrics.cloud)`). Functions without
    measurements keep their size. Raises ValueError for a bound below 1 or an unknown
    objective."""
    if not latency_bound >= 1.0:
        raise ValueError(f"--latency-bound: {latency_bound} must be at least 1.0 (1.10 = the critical path "
                         "may grow by 10%)")
    if objective not in OBJECTIVES:
        raise ValueError(f"--objective: {objective!r} must be one of {', '.join(OBJECTIVES)}")
    cloud, inc = metrics.cloud, metrics.increment_ms
    sizes = tuple(sorted(set(candidates or candidates_for(cloud))))
    w0: dict[str, float] = {}
    for fn in graph:
        per = [s[fn] for s in metrics.session_ms.values() if fn in s]
        if per:
            w0[fn] = statistics.fmean(per)
    cp0, path = critical_path(graph, w0)
    bound_ms = latency_bound * cp0
    choices: dict[str, FunctionChoice] = {}
    ratio: dict[str, dict[int, float]] = {}  # fn -> size -> predicted / measured duration
    for fn in graph:
        m0 = measured_mb[fn]
        st = metrics.functions.get(fn)
        if st is None or not st.duration_ms:
            choices[fn] = FunctionChoice(fn, m0, [], m0, fn in path, "not measured: kept")
            continue
        s0 = cpu_share(cloud, m0, prices)
        io = st.io_ms if len(st.io_ms) == len(st.duration_ms) else [0.0] * len(st.duration_ms)
        peak = max(st.peak_memory_mb, default=0.0)
        cands, ratio[fn] = [], {}
        mean0 = statistics.fmean(st.duration_ms)
        for mb in sorted(set(sizes) | {m0}):
            s = cpu_share(cloud, mb, prices)
            pred = [predict_ms(d, i, s0, s) for d, i in zip(st.duration_ms, io)]
            usd = statistics.fmean(execution_usd(cloud, mb, d, inc, prices) for d in pred)
            mean = statistics.fmean(pred)
            ratio[fn][mb] = mean / mean0 if mean0 > 0 else 1.0
            cands.append(Candidate(mb, mean, usd, fits=mb >= MEMORY_HEADROOM * peak or mb == m0))
        choices[fn] = FunctionChoice(fn, m0, cands, m0, fn in path)

    def cp_of(sizes_now: dict[str, int]) -> float:
        return critical_path(graph, {f: w * ratio[f].get(sizes_now[f], 1.0) if f in ratio else w
                                     for f, w in w0.items()})[0]

    now = {fn: c.chosen_mb for fn, c in choices.items()}
    order = topological(graph)
    for on_path in (False, True):  # (1) Algorithm 2 off the critical path, (2) on it
        for fn in order:
            ch = choices[fn]
            if ch.on_critical_path != on_path or not ch.candidates:
                continue
            for cand in sorted((c for c in ch.candidates if c.memory_mb < now[fn] and c.fits),
                               key=lambda c: -c.memory_mb):
                trial = {**now, fn: cand.memory_mb}
                if cp_of(trial) > bound_ms + 1e-9:
                    break  # this downgrade breaks the bound: keep the last good size
                if cand.usd < ch.candidate(now[fn]).usd:
                    now = trial
    for fn in order:  # (3) raising memory
        ch = choices[fn]
        if not ch.candidates:
            continue
        cur = ch.candidate(now[fn])
        ok = [c for c in ch.candidates if c.fits and cp_of({**now, fn: c.memory_mb}) <= bound_ms + 1e-9]
        if not ok:
            pick = None
        elif objective == "cost":
            better = [c for c in ok if c.memory_mb > now[fn] and c.duration_ms < cur.duration_ms
                      and c.usd < cur.usd]
            pick = min(better, key=lambda c: (c.usd, c.duration_ms), default=None)
        elif ch.on_critical_path and objective == "speed":
            pick = min(ok, key=lambda c: (round(c.duration_ms, 3), c.usd), default=None)
        elif ch.on_critical_path:  # balanced
            cheapest = min(c.usd for c in ok) or 1e-30
            fastest = min(c.duration_ms for c in ok) or 1e-9
            pick = min(ok, key=lambda c: (c.usd / cheapest + c.duration_ms / fastest, c.usd), default=None)
        else:
            pick = None
        if pick is not None:
            now[fn] = pick.memory_mb
    usd0 = usd1 = 0.0
    for fn, ch in choices.items():
        ch.chosen_mb = now[fn]
        if not ch.candidates:
            continue
        per_session = metrics.functions[fn].executions / max(1, len(metrics.sessions))
        before, after = ch.candidate(ch.measured_mb), ch.candidate(ch.chosen_mb)
        usd0 += before.usd * per_session
        usd1 += after.usd * per_session
        if ch.chosen_mb == ch.measured_mb:
            ch.reason = (f"kept {ch.measured_mb} MB: no candidate is cheaper within the bound"
                         f"{' (on the critical path)' if ch.on_critical_path else ''}")
        else:
            ch.reason = (f"{ch.measured_mb} -> {ch.chosen_mb} MB: predicted {before.duration_ms:.1f} -> "
                         f"{after.duration_ms:.1f} ms, ${before.usd * 1e6:.2f} -> ${after.usd * 1e6:.2f} "
                         f"per million executions")
    return MemoryPlan(choices, path, cp0, cp_of(now), latency_bound, objective, usd0, usd1)


def graph_of(app: Any) -> dict[str, list[str]]:
    """function -> successor functions (IR Next targets, fan-in targets included) of `app`
    (unumctl.manifest.App)."""
    return {fn: sorted({e.target for e in ir.next}) for fn, ir in app.workflow.functions.items()}


def table(plan: MemoryPlan) -> list[str]:
    """Lines to print, per function: each candidate's memory, predicted ms and $ per million
    executions, `*` on the chosen one (as Power Tuning's report shows), `(measured)` on the
    size it ran at; then the critical path before and after."""
    out: list[str] = ["per function: memory, predicted duration per execution, $ per million executions "
                      "of that function (compute and request)"]
    for fn in sorted(plan.functions):
        ch = plan.functions[fn]
        cp = " [critical path]" if ch.on_critical_path else ""
        out.append(f"{fn}{cp}: {ch.reason}")
        for c in ch.candidates:
            mark = "*" if c.memory_mb == ch.chosen_mb else " "
            note = " (measured)" if c.memory_mb == ch.measured_mb else ""
            note += "" if c.fits else " (below peak memory x1.25)"
            out.append(f"  {mark} {c.memory_mb:>6} MB {c.duration_ms:>10.1f} ms  ${c.usd * 1e6:>9.3f}/M{note}")
    out.append(f"critical path {' -> '.join(plan.critical_path)}: measured {plan.measured_cp_ms:.1f} ms, "
               f"predicted {plan.predicted_cp_ms:.1f} ms (bound {plan.latency_bound:g} x = "
               f"{plan.latency_bound * plan.measured_cp_ms:.1f} ms); objective {plan.objective}")
    out.append(f"the functions' compute and requests, all executions of a session: ${plan.usd_before * 1e6:.3f} -> "
               f"${plan.usd_after * 1e6:.3f} per million sessions (the memory sizes of the plan file; not its fusion)")
    return out
