"""The `unumctl cost` report: Unum's bill per execution and per million executions beside Step
Functions Standard and Express, with the assumptions it rests on; as a dict (`--json`) and as
text.

JSON shape (all USD; `per_execution` per workflow execution = one session):
  {"app", "cloud", "sessions", "target",
   "prices": {"file", "as_of", "sources"},
   "assumptions": {"memory_mb": {function: MB}, "memory_source", "duration_source",
                   "session_ms": [..], "transitions_source", "notes": [..]},
   "transitions": executions of the workflow's functions per session,
   "operations_per_transition": {operation: count per function execution},
   "unum" | "stepfunctions_standard" | "stepfunctions_express":
       {"lines": [{"group", "item", "quantity", "unit", "unit_price", "usd"}],
        "per_execution", "per_million"},
   "stepfunctions_standard": {..., "transitions"},
   "ratio": {"standard": SFN Standard / Unum, "express": SFN Express / Unum},
   "unpriced": [operation counted but not in the price table]}
"""

from __future__ import annotations

from typing import Any

from . import billing, stepfunctions
from .measurement import Measurement


def build(m: Measurement, prices: dict[str, Any], machine: tuple[int, int] | None) -> dict[str, Any]:
    """The report of measurement `m` priced with `prices`; `machine`:
    stepfunctions.interpreted_transitions() of the app (None for an IR app)."""
    unum, unpriced = billing.unum_lines(m, prices)
    std, n_std, how = stepfunctions.standard(m, prices, machine)
    exp = stepfunctions.express(m, prices, machine)

    def section(lines: list[billing.Line]) -> dict[str, Any]:
        usd = billing.total(lines)
        return {"lines": [x.as_dict() for x in lines], "per_execution": usd, "per_million": usd * 1e6}

    u = billing.total(unum)
    notes = ["times are this machine's, on emulators: indicative, not cloud durations",
             "Step Functions' Lambda part uses the same measured durations (they include Unum's runtime work)"]
    rules = billing.for_cloud(m.cloud)
    notes += rules.notes
    if (steady := m.steady_state_note()) is not None:
        notes.append(steady)
    return {
        "app": m.app, "cloud": m.cloud, "sessions": m.sessions, "target": m.target,
        "prices": {"file": prices.get("_path"), "as_of": prices["as_of"],
                   "sources": {c: prices[c].get("_sources", "") for c in rules.price_sections}},
        "assumptions": {
            "memory_mb": {f: m.memory_mb[f] for f in sorted({f for f, _ in m.executions})},
            "memory_source": "the manifest (functions.F.memory, or its default) through the deployment model",
            "duration_source": "measured: each execution's handler duration on the emulated target; "
                               "Express: each session's wall time from the entry invoke to the result item",
            "session_ms": [round(x, 1) for x in m.session_ms],
            "transitions_source": how,
            "notes": notes},
        "transitions": billing.transitions(m),
        "operations_per_transition": billing.operations_per_transition(m),
        "unum": section(unum),
        "stepfunctions_standard": {**section(std), "transitions": n_std},
        "stepfunctions_express": section(exp),
        "ratio": {"standard": billing.total(std) / u if u else None,
                  "express": billing.total(exp) / u if u else None},
        "unpriced": unpriced,
    }


def quantity(q: float) -> str:
    """`q` to 6 significant digits in positional notation, never scientific
    (1.5e-06 -> '0.0000015', 1234567.0 -> '1234570', 3.0 -> '3')."""
    from decimal import Decimal
    text = format(Decimal(f"{q:.6g}"), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def render(r: dict[str, Any]) -> str:
    """The report as text (stdout of `unumctl cost` without --json)."""
    out = [f"{r['app']} on {r['cloud']} ({r['target']}), {r['sessions']} session(s), "
           f"{r['transitions']:g} function executions per session", ""]
    for key, title in (("unum", f"Unum on {r['cloud']}"), ("stepfunctions_standard", "Step Functions Standard"),
                       ("stepfunctions_express", "Step Functions Express")):
        s = r[key]
        out.append(f"{title}: ${s['per_execution']:.8f} per execution, ${s['per_million']:,.2f} per million")
        out.append(f"  {'group':13} {'item':70} {'quantity':>14} {'unit':11} {'$/M':>13}")
        for x in s["lines"]:
            out.append(f"  {x['group']:13} {x['item'][:70]:70} {quantity(x['quantity']):>14} {x['unit']:11} "
                       f"${x['usd'] * 1e6:>10,.2f}/M")
        out.append("")
    ratio = r["ratio"]
    if ratio["standard"] is not None:
        out.append(f"Step Functions Standard / Unum: {ratio['standard']:.1f}x   "
                   f"Express / Unum: {ratio['express']:.2f}x")
    a = r["assumptions"]
    out.append(f"transitions (Standard): {r['stepfunctions_standard']['transitions']:g}: {a['transitions_source']}")
    out.append("memory (MB): " + ", ".join(f"{f} {mb}" for f, mb in a["memory_mb"].items())
               + f" ({a['memory_source']})")
    out.append(f"duration: {a['duration_source']}; sessions (ms): "
               + ", ".join(f"{x:g}" for x in a["session_ms"]))
    for note in a["notes"]:
        out.append(f"note: {note}")
    out.append("operations per transition: " + ", ".join(f"{k} {v:g}" for k, v in r["operations_per_transition"].items()))
    if r["unpriced"]:
        out.append(f"NOT PRICED (counted, missing from the price table's operations): {', '.join(r['unpriced'])}")
    out.append(f"prices: {r['prices']['file']} (as of {r['prices']['as_of']})")
    return "\n".join(out)
