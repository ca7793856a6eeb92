"""`unumctl tune` (docs/tune.md): measure sessions (or read recorded ones), plan memory per
function (unumctl.tuning.memory), fill fusion and batching when unumctl.tuning.colocate is
present, print the candidates per function and write the plan file (planfile).

The command line is in unumctl/cli.py; this module does the work so that it can be called
(and tested) without Typer.
"""

from __future__ import annotations

import datetime as _dt
import json
import shlex
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any, Callable

from ..cost.measurement import Measurement, MeasurementError
from . import colocate, memory, planfile
from .metrics import billing_increment_ms, collect, from_events

__all__ = ["DEFAULT_SESSIONS", "check_out", "cold_start_rate", "command_line", "emulated_history", "emulated_run",
           "measured_bill", "run_sessions", "tune", "write"]

DEFAULT_SESSIONS = 3


def measured_sizes(app: Any, cloud: str) -> dict[str, int]:
    """The memory (MB) each function of `app` (the plan in force already applied) runs at on
    `cloud`: its deployment model's (unumctl.pipeline.model; gen2 at least 128 MB)."""
    from .. import pipeline
    return {f.unum_name: f.memory for f in pipeline.model(app, cloud).functions}


def run_sessions(target: Any, value: Any, sessions: int, timeout: float,
                 say: Callable[[str], None]) -> list[str]:
    """Run `value` `sessions` times, one after the other, on `target` (unumctl.targets.Target,
    as `unumctl invoke` does); returns the session ids. Raises ValueError when one fails."""
    ids = []
    for i in range(sessions):
        sid = f"tune-{uuid.uuid4().hex[:12]}"
        sid, item = target.invoke(value, True, timeout, sid, None)
        status = (item or {}).get("status")
        if status != "SUCCEEDED":
            raise ValueError(f"tune: session {sid} ended {status or 'without a result'}: "
                             f"{(item or {}).get('error')}: {(item or {}).get('cause')} (fix the app or its input first)")
        say(f"tune: session {i + 1}/{sessions} {sid} SUCCEEDED")
        ids.append(sid)
    return ids


def emulated_history(app_dir: Path, cloud: str, sessions: int, input_path: Path, use_plan: bool,
                     timeout_per_session: float = 150.0) -> dict[str, list[dict[str, Any]]]:
    """The sessions' histories {session: events} of `emulated_run`."""
    return emulated_run(app_dir, cloud, sessions, input_path, use_plan, timeout_per_session)[0]


def emulated_run(app_dir: Path, cloud: str, sessions: int, input_path: Path, use_plan: bool,
                 timeout_per_session: float = 150.0) -> tuple[dict[str, list[dict[str, Any]]], Measurement]:
    """Run the app's input `sessions` times on the emulated `cloud` (aws: moto + the emulated
    Lambda; gcp: the Google emulators) through the measured run of `unumctl cost`
    (`python -m unumctl.cost.measure`, in a child process as unumctl/cost/emulated.py runs
    it), and return the sessions' histories {session: events}, read by that run before its
    emulators stop, and the run's measurement (what `unumctl cost` bills). Raises ValueError
    (one line) when a component is missing, a session failed or the run printed no
    measurement."""
    from ..cost.emulated import MEASURE
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "history.json"
        cmd = [sys.executable, "-m", MEASURE, str(app_dir), "--cloud", cloud, "--sessions", str(sessions),
               "--input", str(input_path), "--history-out", str(out)] + ([] if use_plan else ["--no-plan"])
        limit = timeout_per_session * sessions + 120
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
        except subprocess.TimeoutExpired:
            raise ValueError(f"tune --emulated: the emulated {cloud} run did not finish within {limit:.0f} s") from None
        last = next((ln for ln in reversed(proc.stderr.splitlines()) if ln.strip()), "")
        if proc.returncode != 0 or not out.exists():
            raise ValueError(f"tune --emulated: the emulated {cloud} run failed (exit {proc.returncode}): {last}")
        try:
            measured = Measurement.from_json(json.loads(proc.stdout))
        except (json.JSONDecodeError, MeasurementError) as exc:
            raise ValueError(f"tune --emulated: the emulated {cloud} run printed no measurement: {exc}") from None
        return json.loads(out.read_text()), measured


def cold_start_rate(measurement: Measurement | None) -> float | None:
    """Cold starts per function execution in `measurement` (None without a measurement, or
    when the run did not count them)."""
    if measurement is None or measurement.cold_starts is None or not measurement.executions:
        return None
    return measurement.cold_starts / len(measurement.executions)


def measured_bill(measurement: Measurement, prices: dict[str, Any]) -> str:
    """tune's line for the measured run, in `unumctl cost`'s own figures (its billing of the
    same measurement: unumctl.cost.billing.unum_lines): the app's $ per million sessions and
    its groups (lambda, dynamodb, s3, logs, ...), so that tune and cost print one number for
    one plan."""
    from ..cost import billing
    lines, _unpriced = billing.unum_lines(measurement, prices)
    groups: dict[str, float] = {}
    for ln in lines:
        groups[ln.group] = groups.get(ln.group, 0.0) + ln.usd
    parts = ", ".join(f"{g} ${usd * 1e6:.2f}" for g, usd in groups.items())
    rate = cold_start_rate(measurement)
    colds = "" if rate is None else f", priced at the run's {rate:.2f} cold starts per execution"
    return (f"measured, as unumctl cost bills it: ${billing.total(lines) * 1e6:.2f} per million sessions "
            f"({parts}); the fusion savings above are estimates{colds}: unumctl cost --plan measures them")


def tune(app: Any, cloud: str, *, reader: Any, prices: dict[str, Any], session_ids: list[str] | None,
         limit: int | None, latency_bound: float, objective: str, command: str,
         histories: dict[str, list[dict[str, Any]]] | None = None,
         allow_serialising: bool = False,
         measurement: Measurement | None = None) -> tuple[planfile.TunePlan, list[str]]:
    """Plan from the sessions `session_ids` (None: the `limit` newest succeeded ones) read
    through `reader` (unumctl.observe.HistoryReader of `cloud`), or from `histories`
    ({session: events}, `emulated_history`) when given; `app` has the plan in force applied
    (its sizes are the measured ones). A fusion that runs a Map's or a Parallel's branches
    one after another is chosen only with `allow_serialising` (colocate.choose); a region
    not fused is printed with why. `measurement` (the emulated run's, `emulated_run`) adds
    its bill as `unumctl cost` prints it (measured_bill), and fusion prices a removed
    invocation's cold start at that run's rate (cold_start_rate), the basis cost bills on.
    Returns (the plan, the lines printed: the memory table
    with each fused group's head at the size the plan gives it, then the fusion and batching
    lines). Raises ValueError when no session has execution events."""
    if histories is not None:
        metrics = from_events(histories, cloud, billing_increment_ms(cloud, prices))
        if not metrics.functions:
            raise ValueError("tune --emulated: the emulated sessions recorded no execution events "
                             "(runtime.history must be full)")
    else:
        metrics = collect(reader, cloud, prices, sessions=session_ids, limit=limit)
    mp = memory.plan_memory(memory.graph_of(app), metrics, measured_sizes(app, cloud), prices,
                            latency_bound=latency_bound, objective=objective)
    plan = planfile.TunePlan(
        derived={"command": command, "cloud": cloud, "sessions": len(metrics.sessions),
                 "at": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "latency_bound": latency_bound, "objective": objective,
                 "critical_path_ms": round(mp.measured_cp_ms, 1),
                 "predicted_critical_path_ms": round(mp.predicted_cp_ms, 1)},
        memory=dict(sorted(mp.memory.items())),
        reasons={fn: ch.reason for fn, ch in sorted(mp.functions.items())})
    # fusion priced at the target's own rates (local's are those of the cloud it stands for: unumctl/local/stands_for.py)
    # a removed invocation's cold start: at the measured run's rate when there is one (cost
    # bills that run's steady state), else one per invocation (colocate.choose's default)
    rate = cold_start_rate(measurement)
    fuse, batch, extra = colocate.choose(app, metrics, cloud=cloud, prices=prices, latency_bound=latency_bound,
                                         allow_serialising=allow_serialising,
                                         cold_start_rate=1.0 if rate is None else rate)
    plan.fuse, plan.batch = [list(g) for g in fuse], dict(batch)
    for key, why in extra.items():  # a function's fusion reason beside its memory one
        plan.reasons[key] = f"{plan.reasons[key]}; {why}" if key in plan.reasons else why
    for group in plan.fuse:  # a group runs in its first member's invocation: the members' largest size
        sizes = [plan.memory.get(fn, app.manifest.functions[fn].memory) for fn in group]
        head = group[0]
        if max(sizes) != plan.memory.get(head, sizes[0]):
            plan.memory[head] = max(sizes)
            plan.reasons[head] = (f"{max(sizes)} MB as the head of fused group {'+'.join(group)} "
                                  f"(alone: {plan.reasons[head]})")
            ch = mp.functions.get(head)
            if ch is not None and ch.candidates:  # the table's line, `*` and compute follow the plan file
                per_session = metrics.functions[head].executions / max(1, len(metrics.sessions))
                mp.usd_after += (ch.candidate(max(sizes)).usd - ch.candidate(ch.chosen_mb).usd) * per_session
                ch.chosen_mb, ch.reason = max(sizes), plan.reasons[head]
    lines = memory.table(mp)
    lines += [f"fuse {'+'.join(g)}: {plan.reasons.get('+'.join(g), '')}" for g in plan.fuse]
    lines += [f"batch {fn}: {k} items per branch invocation" for fn, k in sorted(plan.batch.items())]
    lines += [f"{key}: {why}" for key, why in sorted(extra.items()) if why.startswith(("not fused", "not batched"))]
    if measurement is not None:
        lines.append(measured_bill(measurement, prices))
    return plan, lines


def command_line(app_dir: Path, cloud: str, sessions: int | None, from_history: bool,
                 latency_bound: float, objective: str, emulated: bool = False,
                 allow_serialising: bool = False) -> str:
    """The `derived.command` of a plan: the tune command that made it."""
    args = ["unumctl", "tune", str(app_dir), "--cloud", cloud] + (["--emulated"] if emulated else [])
    args += ["--allow-serialising"] if allow_serialising else []
    args += ["--from-history"] if from_history else ["--sessions", str(sessions)]
    args += ["--latency-bound", f"{latency_bound:g}", "--objective", objective]
    return shlex.join(args)


def check_out(out: Path) -> None:
    """Refuse (ValueError, one line) a `tune --out FILE` that names a directory or lies in a
    directory that does not exist: checked before any session runs."""
    if out.is_dir():
        raise ValueError(f"--out {out}: is a directory; name the plan file (e.g. --out {out / planfile.PLAN_FILE})")
    if not out.parent.is_dir():
        raise ValueError(f"--out {out}: directory {out.parent} does not exist; create it or name a file "
                         "in an existing directory")


def write(plan: planfile.TunePlan, out: Path, force: bool) -> None:
    """Write the plan file `out`, refusing (ValueError, one line) to overwrite one that was
    edited by hand unless `force`, a directory or a file that is not a regular one
    (check_out, safefile.read_bounded), and reporting a write the file system refuses as
    one line too."""
    check_out(out)
    if planfile.hand_edited(out) and not force:
        raise ValueError(f"{out}: edited by hand (or not written by unumctl tune); not overwritten. "
                         "Pass --force to replace it, or --out FILE to write elsewhere")
    try:
        planfile.dump(plan, out)
    except OSError as exc:
        raise ValueError(f"{out}: cannot write the plan file: {exc.strerror or exc} (--out FILE writes "
                         "elsewhere)") from None
