"""The `unumctl cost` report: Unum's bill per execution and per million executions, in each
mode measured, beside every hosted orchestrator (systems.py: Step Functions Standard and
Express, Google Cloud Workflows), with the assumptions it rests on; as a dict (`--json`) and
as text.

JSON shape (all USD; `per_execution` per workflow execution = one session):
  {"app", "cloud", "sessions", "target", "modes": [mode measured, ...],
   "plan": {"file": the app's plan file or None, "in_force": whether the measured run applied it,
            "fuse", "batch", "memory": the plan's (empty when not in force)},
   "prices": {"file", "as_of", "sources"},
   "assumptions": {"memory_mb": {function: MB}, "memory_source", "duration_source",
                   "session_ms": [..], "transitions_source", "notes": [..]},
   "transitions": executions of the workflow's functions per session,
   "operations_per_transition": {operation: count per function execution},
   "systems": [key of each priced system, in report order],
   "unum" (exactly-once, when measured) | "unum_at_least_once" (when measured) |
   "stepfunctions_standard" | "stepfunctions_express" | "cloud_workflows":
       {"title", "lines": [{"group", "item", "quantity", "unit", "unit_price", "usd"}],
        "per_execution", "per_million", ...system's own fields (systems.py)},
   "stepfunctions_standard": {..., "transitions", "transitions_source"},
   "cloud_workflows": {..., "steps": {"internal", "external"}, "steps_source"},
   "unum*": {..., "mode", "unpriced"},
   "ratio": {"standard", "express", "workflows": that system / Unum exactly-once (None when
             not measured), "at_least_once": {the same / Unum at-least-once} (when measured)},
   "unpriced": [operation counted but not in the price table, any mode],
   "windows" (an app with Window edges): {"consumer_sessions": [the window sessions that fired
       on the measured objects, billed with them], "ticks": [[window, seconds], ...]}}
  (for one mode, the transitions and operations are that mode's; for both, exactly-once's,
   and "at_least_once": {"transitions", "operations_per_transition", "session_ms"})

`compare(before, after)` is `unumctl cost --plan`'s: {"before": report, "after": report,
"ratio": {system key: after / before per execution}, "hosted_vs_planned": {unum key: {hosted
key: hosted as written / Unum planned}}, "like_for_like": {"as_written": before's "ratio",
"planned": after's "ratio"}}.
"""

from __future__ import annotations

from typing import Any

from .. import registry
from . import billing, systems
from .measurement import Measurement

__all__ = ["build", "compare", "quantity", "render", "render_compare"]

HOSTED_RATIOS = (("standard", "stepfunctions_standard"), ("express", "stepfunctions_express"),
                 ("workflows", "cloud_workflows"))


def build(m: Measurement | dict[str, Measurement], prices: dict[str, Any],
          machine: tuple[int, int] | None, plan: dict[str, Any] | None = None) -> dict[str, Any]:
    """The report of measurement `m` (exactly-once), or of `m` = {mode: Measurement} (systems.MODES),
    priced with `prices`; `machine`: stepfunctions.interpreted_transitions() of the app (None
    for an IR app); `plan`: the report's "plan" (plan_state; default: none in force).
    ValueError for an unknown mode or no measurement."""
    ms = {systems.EXACTLY_ONCE: m} if isinstance(m, Measurement) else dict(m)
    if not ms or set(ms) - set(systems.MODES):
        raise ValueError(f"modes: {sorted(ms)}: give one or more of {', '.join(systems.MODES)}")
    first = ms[next(mode for mode in systems.MODES if mode in ms)]
    sections = systems.price_all(ms, prices, machine)
    by = {s.key: s for s in sections}
    std = by["stepfunctions_standard"]
    notes = ["times are this machine's, on emulators: indicative, not cloud durations",
             "Step Functions' and Cloud Workflows' function lines use the same measured durations "
             "(they include Unum's runtime work)"]
    if len(ms) > 1:
        notes.append("the hosted orchestrators are priced from the at-least-once run (its functions do "
                     "less of Unum's own work, and its sessions are shorter)")
    rules = billing.for_cloud(first.cloud)
    notes += rules.notes
    if (steady := first.steady_state_note()) is not None:
        notes.append(steady)
    if (win := first.window_note()) is not None:
        notes.append(win)

    def ratios(unum_key: str) -> dict[str, float | None]:
        u = by[unum_key].per_execution if unum_key in by else 0.0
        return {name: by[key].per_execution / u if u else None for name, key in HOSTED_RATIOS}

    ratio: dict[str, Any] = ratios("unum")
    if "unum_at_least_once" in by:
        ratio["at_least_once"] = ratios("unum_at_least_once")
    unpriced = sorted({op for s in sections for op in s.extra.get("unpriced", [])})
    r: dict[str, Any] = {
        "app": first.app, "cloud": first.cloud, "sessions": first.sessions, "target": first.target,
        "modes": [mode for mode in systems.MODES if mode in ms],
        "plan": plan or plan_state(None, False),
        "prices": {"file": prices.get("_path"), "as_of": prices["as_of"],
                   "sources": {c: prices[c].get("_sources", "") for c in registry.priced()}},
        "assumptions": {
            "memory_mb": {f: first.memory_mb[f] for f in sorted({f for f, _ in first.executions})},
            "memory_source": "the manifest (functions.F.memory, or its default) through the deployment model",
            "duration_source": "measured: each execution's handler duration on the emulated target; "
                               "Express: each session's wall time from the entry invoke to the result item",
            "session_ms": [round(x, 1) for x in first.session_ms],
            "transitions_source": std.extra["transitions_source"],
            "notes": notes},
        "transitions": billing.transitions(first),
        "operations_per_transition": billing.operations_per_transition(first),
        "systems": [s.key for s in sections],
        **{s.key: s.as_dict() for s in sections},
        "ratio": ratio,
        "unpriced": unpriced,
    }
    if first.window_ticks or first.consumer_sessions:
        r["windows"] = {"consumer_sessions": list(first.consumer_sessions),
                        "ticks": [list(t) for t in first.window_ticks]}
    if len(ms) > 1:
        alo = ms[systems.AT_LEAST_ONCE]
        r["at_least_once"] = {"transitions": billing.transitions(alo),
                              "operations_per_transition": billing.operations_per_transition(alo),
                              "session_ms": [round(x, 1) for x in alo.session_ms]}
    return r


def plan_state(file: str | None, in_force: bool, plan: Any = None) -> dict[str, Any]:
    """The report's "plan": `file` (the app's plan file, None when it has none), whether the
    measured run applied it, and what it changes (unumctl.tuning.planfile.TunePlan `plan`'s
    fuse, batch and memory; empty when not in force)."""
    on = in_force and plan is not None
    return {"file": file, "in_force": on, "fuse": [list(g) for g in plan.fuse] if on else [],
            "batch": dict(plan.batch) if on else {}, "memory": dict(plan.memory) if on else {}}


def plan_line(p: dict[str, Any]) -> str:
    """The first line of the text report: whether a plan is in force, and what it changes."""
    if p["in_force"]:
        what = ["fuse " + ", ".join("+".join(g) for g in p["fuse"])] if p["fuse"] else []
        what += ["batch " + ", ".join(f"{f} {k}" for f, k in p["batch"].items())] if p["batch"] else []
        what += ["memory " + ", ".join(f"{f} {mb} MB" for f, mb in p["memory"].items())] if p["memory"] else []
        return f"plan in force: {p['file']} ({'; '.join(what) or 'no changes'}): the workflow as planned, not as written"
    if p["file"]:
        return f"plan ignored: {p['file']} not applied: the workflow as written"
    return "no plan in force: the workflow as written"


def compare(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """`unumctl cost --plan`: two reports of the same app (`before`: the plan file ignored,
    `after`: applied) side by side, and after / before per execution of every system both
    priced (None when before is 0); `hosted_vs_planned`: {unum system: {hosted system: its
    price before / the Unum system's after}} (a hosted orchestrator runs the workflow as
    written, without the plan's fusion and batching)."""
    keys = [k for k in before["systems"] if k in after.get("systems", [])]
    unum = [k for k in keys if k.startswith("unum")]
    hosted = [k for k in keys if not k.startswith("unum")]
    return {"app": before["app"], "cloud": before["cloud"], "before": before, "after": after,
            "ratio": {k: (after[k]["per_execution"] / before[k]["per_execution"]
                          if before[k]["per_execution"] else None) for k in keys},
            # a hosted orchestrator runs the workflow as written (the plan is Unum's): its
            # price before the plan against Unum's after it
            "hosted_vs_planned": {u: {h: (before[h]["per_execution"] / after[u]["per_execution"]
                                          if after[u]["per_execution"] else None) for h in hosted}
                                  for u in unum},
            # like for like: both as written (before), both with the plan (after; an IR app's
            # hosted systems are priced on the planned run's executions, as Step Functions
            # would run the fused functions)
            "like_for_like": {"as_written": before["ratio"], "planned": after["ratio"]}}


def quantity(q: float) -> str:
    """`q` to 6 significant digits in positional notation, never scientific
    (1.5e-06 -> '0.0000015', 1234567.0 -> '1234570', 3.0 -> '3')."""
    from decimal import Decimal
    text = format(Decimal(f"{q:.6g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def render(r: dict[str, Any]) -> str:
    """The report as text (stdout of `unumctl cost` without --json)."""
    out = [plan_line(r.get("plan") or plan_state(None, False)),
           f"{r['app']} on {r['cloud']} ({r['target']}), {r['sessions']} session(s), "
           f"{r['transitions']:g} function executions per session, mode(s): {', '.join(r['modes'])}", ""]
    for key in r["systems"]:
        s = r[key]
        out.append(f"{s['title']}: ${s['per_execution']:.8f} per execution, ${s['per_million']:,.2f} per million")
        out.append(f"  {'group':13} {'item':70} {'quantity':>14} {'unit':11} {'$/M':>13}")
        for x in s["lines"]:
            out.append(f"  {x['group']:13} {x['item'][:70]:70} {quantity(x['quantity']):>14} {x['unit']:11} "
                       f"${x['usd'] * 1e6:>10,.2f}/M")
        out.append("")
    out += summary(r)
    a = r["assumptions"]
    out.append(f"transitions (Standard): {r['stepfunctions_standard']['transitions']:g}: {a['transitions_source']}")
    w = r["cloud_workflows"]
    out.append(f"steps (Cloud Workflows): {w['steps']['internal']:g} internal, {w['steps']['external']:g} external: "
               f"{w['steps_source']}")
    out.append("memory (MB): " + ", ".join(f"{f} {mb}" for f, mb in a["memory_mb"].items())
               + f" ({a['memory_source']})")
    out.append(f"duration: {a['duration_source']}; sessions (ms): "
               + ", ".join(f"{x:g}" for x in a["session_ms"]))
    for note in a["notes"]:
        out.append(f"note: {note}")
    out.append("operations per transition: " + ", ".join(f"{k} {v:g}" for k, v in r["operations_per_transition"].items()))
    if "at_least_once" in r:
        out.append("operations per transition (at-least-once): "
                   + ", ".join(f"{k} {v:g}" for k, v in r["at_least_once"]["operations_per_transition"].items()))
    if r["unpriced"]:
        out.append(f"NOT PRICED (counted, missing from the price table's operations): {', '.join(r['unpriced'])}")
    out.append(f"prices: {r['prices']['file']} (as of {r['prices']['as_of']})")
    return "\n".join(out)


def summary(r: dict[str, Any]) -> list[str]:
    """The $/M of every system on one line and each hosted system / each Unum mode."""
    out = ["$/M: " + "   ".join(f"{r[k]['title']} {r[k]['per_million']:,.2f}" for k in r["systems"])]
    for label, ratio in (("exactly-once", r["ratio"]), ("at-least-once", r["ratio"].get("at_least_once"))):
        if ratio is None or ratio.get("standard") is None:
            continue
        out.append(f"vs Unum {label}: Standard {ratio['standard']:.2f}x   Express {ratio['express']:.2f}x   "
                   f"Cloud Workflows {ratio['workflows']:.2f}x")
    return out


def render_compare(c: dict[str, Any]) -> str:
    """`unumctl cost --plan` as text: both reports' $/M side by side and after / before."""
    b, a = c["before"], c["after"]
    out = [plan_line(a["plan"]) + " (after); before: the plan file ignored",
           f"{c['app']} on {c['cloud']}: before (plan file ignored) and after (plan applied)", "",
           f"  {'system':40} {'before $/M':>13} {'after $/M':>13} {'after/before':>13}"]
    for k, ratio in c["ratio"].items():
        out.append(f"  {b[k]['title'][:40]:40} {b[k]['per_million']:>13,.2f} {a[k]['per_million']:>13,.2f} "
                   + (f"{ratio:>13.3f}" if ratio is not None else f"{'-':>13}"))
    out.append("")
    titles = {name: b[key]["title"] for name, key in HOSTED_RATIOS if key in b}

    def ratio_line(label: str, unum: str, ratio: dict[str, Any] | None) -> None:
        if ratio and any(ratio.get(n) is not None for n in titles):
            out.append(f"  {label} / {unum}: "
                       + "   ".join(f"{t} {ratio[n]:.2f}x" for n, t in titles.items() if ratio.get(n) is not None))

    lfl = c.get("like_for_like", {})
    for mode, key in (("exactly-once", "unum"), ("at-least-once", "unum_at_least_once")):
        if key not in b:
            continue
        written, planned = ((lfl.get(side) or {}) if key == "unum" else (lfl.get(side) or {}).get("at_least_once")
                            for side in ("as_written", "planned"))
        ratio_line("like for like, as written: each hosted system as written", f"Unum {mode} as written", written)
        ratio_line("like for like, planned: each hosted system on the planned run's executions",
                   f"Unum {mode} with the plan", planned)
    for u, ratios in c.get("hosted_vs_planned", {}).items():
        out.append(f"  as written vs planned: each hosted system as written / {a[u]['title']} with the plan: "
                   + "   ".join(f"{b[h]['title']} {r:.2f}x" for h, r in ratios.items() if r is not None))
    out += ["", "before:", render(b), "", "after:", render(a)]
    return "\n".join(out)
