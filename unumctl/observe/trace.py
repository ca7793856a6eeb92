"""`unumctl trace`: one self-contained HTML file for a session (no network access needed):
the workflow graph coloured by outcome and a timeline with one bar per execution; clicking a
bar or a function shows its events, input and output."""

from __future__ import annotations

import html
import json
import re
from collections import deque
from typing import Any

from runtime.ir import Workflow

from ..graph import quorum_label

__all__ = ["critical_path", "render"]

COLOURS = {"ran": "#2e7d32", "adopted": "#1565c0", "dropped": "#9e9e9e", "failed": "#c62828",
           "crashed": "#ef6c00", "suspended": "#6a1b9a", "retried": "#f9a825", "timed_out": "#ad1457",
           "out_of_memory": "#ad1457", "gave_up": "#b71c1c", "duplicated": "#00838f",
           "walked": "#c8e6c9", "quorum_fired": "#4527a0", "fired": "#5d4037"}  # walked: a state inside a function that ran, taken or not
_RANK = ["failed", "gave_up", "timed_out", "out_of_memory", "crashed", "retried", "suspended", "ran",
         "adopted", "dropped", "duplicated"]


def _layout(wf: Workflow) -> list[dict[str, Any]]:
    """Functions with a layer (BFS depth from the entry) and a position in it."""
    depth: dict[str, int] = {}
    entry = wf.entry.name
    q = deque([entry])
    depth[entry] = 0
    while q:
        n = q.popleft()
        for e in wf.functions[n].next:
            if e.target in wf.functions and e.target not in depth:
                depth[e.target] = depth[n] + 1
                q.append(e.target)
    for n in wf.functions:
        depth.setdefault(n, max(depth.values(), default=0) + 1)
    rows: dict[int, list[str]] = {}
    for n, d in depth.items():
        rows.setdefault(d, []).append(n)
    out = []
    for d, names in sorted(rows.items()):
        for i, n in enumerate(sorted(names)):
            out.append({"name": n, "layer": d, "pos": i, "width": len(names),
                        "next": [{"to": e.target, "type": e.type,
                                  **({"label": quorum_label(e)} if e.quorum is not None else {}),
                                  **({"window": e.window.name} if e.window is not None else {})}
                                 for e in wf.functions[n].next]})
    return out


def outcome_of(events: list[dict[str, Any]], function: str) -> str:
    """The most notable event kind of a function's events ('none' when it never executed)."""
    kinds = {e["kind"] for e in events if e.get("function") == function}
    for k in _RANK:
        if k in kinds:
            return k
    return "none"


EXECUTIONS = ("ran", "adopted", "failed", "crashed", "dropped", "suspended", "timed_out", "out_of_memory")
_INVOKERS = ("ran", "adopted")
_EPS = 0.002  # s: clocks of one machine; an invoked execution starts after its invoker ends


def _predecessors(wf: Workflow) -> dict[str, set[str]]:
    pred: dict[str, set[str]] = {n: set() for n in wf.functions}
    for n, f in wf.functions.items():
        for e in f.next:
            pred.setdefault(e.target, set()).add(n)
    return pred


def critical_path(events: list[dict[str, Any]], wf: Workflow) -> list[int]:
    """Indices (into `events`) of the executions that determined the session's end time:
    the last-ending execution, the execution that invoked it, and so on back to the entry,
    with the earlier attempts and the retries of each of those invocations (they delayed
    it). Events carry no parent, so the invoker of an execution of F is taken as the latest-ending successful execution of a function with an IR edge to F that
    invoked something and ended before it started (for a fan-in: the last branch to finish,
    the one that invoked the join). Returns [] when no execution has times."""
    timed = [i for i, e in enumerate(events) if e["kind"] in EXECUTIONS and e.get("t0") is not None]
    if not timed:
        return []
    retries = [i for i, e in enumerate(events) if e["kind"] == "retried" and e.get("t0") is not None]
    pred = _predecessors(wf)
    end = lambda i: events[i].get("t1") or events[i]["t0"]  # noqa: E731
    last = max(timed, key=lambda i: (end(i), events[i]["kind"] in _INVOKERS))
    chain: list[int] = []
    seen: set[int] = set()
    cur: int | None = last
    while cur is not None and cur not in seen:
        e = events[cur]
        same = [i for i in timed + retries if events[i].get("instance") == e.get("instance")
                and events[i].get("function") == e.get("function") and events[i]["t0"] <= e["t0"]]
        seen.update(same)
        chain.extend(same)
        first_t0 = min(events[i]["t0"] for i in same)
        cands = [i for i in timed if i not in seen and events[i]["kind"] in _INVOKERS
                 and events[i].get("function") in pred.get(e.get("function") or "", ())
                 and end(i) <= first_t0 + _EPS]
        invoking = [i for i in cands if (events[i].get("invoked") or 0) > 0]
        pool = invoking or cands
        cur = max(pool, key=end) if pool else None
    return sorted(chain, key=lambda i: (events[i]["t0"], i))


def _state_view(graph: Any, events: list[dict[str, Any]]) -> dict[str, Any]:
    """The Step Functions states as the user wrote them (unumctl.asl.graph.StateGraph), laid
    out in layers along Next/Choice/branch edges, each with the outcome of the compiled
    functions that run it. When the executions recorded the states they walked and ran
    (`states`, runtime.asl.steps; history level full), each node says whether it was
    `taken` and carries those steps (input, output, the Choice rule that matched), and each
    edge whether the execution went along it (`taken`): a state never entered keeps outcome
    "none". Without them, a Pass, Choice, Wait, Succeed or Fail state walked inside another
    function's ingress or egress is "walked" (that function ran; whether this state was
    taken is not recorded) unless an envelope sent to it shows it was reached."""
    edges = [(e.src, e.dst, e.kind) for e in graph.edges
             if e.src in graph.nodes and e.dst in graph.nodes]
    succ: dict[str, list[str]] = {}
    for a, b, _ in edges:
        succ.setdefault(a, []).append(b)
    start = next((e.dst for e in graph.edges if e.src == "__start"), None)
    back: set[tuple[str, str]] = set()  # loop edges (a DFS back edge), left out of the layering
    state: dict[str, int] = {}
    stack = [(start, iter(succ.get(start, [])))] if start is not None else []
    if start is not None:
        state[start] = 1
    while stack:
        n, it = stack[-1]
        m = next(it, None)
        if m is None:
            state[n] = 2
            stack.pop()
        elif state.get(m) == 1:
            back.add((n, m))
        elif m not in state:
            state[m] = 1
            stack.append((m, iter(succ.get(m, []))))
    inner: dict[str, list[str]] = {}  # a Map/Parallel state -> the states of its branches

    def collect(item: Any) -> list[str]:
        if isinstance(item, str):
            return [item]
        ids = [x for sub in item.items for x in collect(sub)]
        if item.items and isinstance(item.items[0], str) and item.id == f"b_{item.items[0]}":
            inner[item.items[0]] = ids[1:]
        return ids
    for it in graph.items:
        collect(it)
    depth = {n: 0 for n in graph.nodes}
    for _ in range(len(graph.nodes) + 1):  # longest path over the acyclic edges
        changed = False
        for a, b, kind in edges:
            want = depth[a] + 1
            if kind == "next" and inner.get(a):  # after everything inside the Map/Parallel
                want = max(want, max(depth[x] for x in inner[a]) + 1)
            if (a, b) not in back and depth[b] < want:
                depth[b] = want
                changed = True
        if not changed:
            break
    rows: dict[int, list[str]] = {}
    for n, d in sorted(depth.items(), key=lambda kv: (kv[1], int(kv[0][1:]) if kv[0][1:].isdigit() else 0)):
        rows.setdefault(d, []).append(n)
    reached = _envelope_states(events)
    steps_of, went = _steps(events)
    recorded = bool(steps_of)
    nodes = []
    for d, ids in sorted(rows.items()):
        for i, nid in enumerate(ids):
            n = graph.nodes[nid]
            outs = [outcome_of(events, f) for f in n.functions]
            outs = [o for o in outs if o != "none"]
            outcome = min(outs, key=_RANK.index) if outs else "none"
            taken = n.name in steps_of
            if recorded:
                if not taken:
                    outcome = "none"
                elif outcome == "none" or n.type not in ("Task", "Map", "Parallel"):
                    failed = any(s.get("error") and not s.get("caught") for s in steps_of[n.name])
                    outcome = "failed" if failed else (outcome if outcome not in ("none", "walked") else "ran")
            elif outcome != "none" and n.type not in ("Task", "Map", "Parallel") and n.name not in reached:
                outcome = "walked"  # run in another function's ingress/egress: taken or not
            node = {"id": nid, "name": n.name, "type": n.type, "runs": n.runs, "functions": n.functions,
                    "outcome": outcome, "layer": d, "pos": i, "width": len(ids)}
            if recorded:
                node["taken"] = taken
                node["steps"] = steps_of.get(n.name, [])[:50]
            nodes.append(node)
    names = {nid: n.name for nid, n in graph.nodes.items()}
    drawn = []
    for e in graph.edges:
        if e.src in graph.nodes and e.dst in graph.nodes:
            edge = {"from": e.src, "to": e.dst, "kind": e.kind, "label": e.label}
            if recorded:
                edge["taken"] = (names[e.src], names[e.dst]) in went
            drawn.append(edge)
    return {"nodes": nodes, "edges": drawn, "recorded": recorded}


def _steps(events: list[dict[str, Any]]) -> tuple[dict[str, list[dict[str, Any]]], set[tuple[str, str]]]:
    """From the executions' recorded `states` (runtime.asl.steps, expanded): the steps of
    each state name, and the (state, next state) pairs the session went along (a Choice's
    rule or Default, a Next, a Catch; a Map/Parallel to the first state of each branch it
    started)."""
    steps_of: dict[str, list[dict[str, Any]]] = {}
    went: set[tuple[str, str]] = set()
    first: dict[str, set[str]] = {}  # scope -> the states its executions entered first
    for e in events:
        if e.get("kind") not in ("ran", "failed", "suspended") or not isinstance(e.get("states"), list):
            continue
        prev_scope = None
        for s in e["states"]:
            if not isinstance(s, dict) or not isinstance(s.get("state"), str):
                continue
            steps_of.setdefault(s["state"], []).append({**s, "instance": e.get("instance")})
            if isinstance(s.get("next"), str):
                went.add((s["state"], s["next"]))
            scope = s.get("scope", "")
            if scope != prev_scope and s.get("phase") != "end":
                first.setdefault(scope, set()).add(s["state"])
            prev_scope = scope
    for name, steps in steps_of.items():  # fan-outs: to the first state of each branch scope
        for s in steps:
            if s.get("phase") == "start":
                base = f"{s.get('scope', '')}/{name}"
                for scope, entered in first.items():
                    if scope == base or scope.startswith(base + "#"):
                        went.update((name, f) for f in entered)
    return steps_of, went


def _envelope_states(events: list[dict[str, Any]]) -> set[str]:
    """Names of the states that executions started at or sent to (the `AslState` of the
    envelopes in the recorded inputs and outputs, runtime.asl.wrapper): those were reached."""
    out: set[str] = set()

    def scan(v: Any, depth: int = 0) -> None:
        if depth > 3:
            return
        if isinstance(v, dict):
            if isinstance(v.get("AslState"), str) and "AslInput" in v:
                out.add(v["AslState"])
        elif isinstance(v, list):
            for x in v[:1000]:
                scan(x, depth + 1)
    for e in events:
        scan(e.get("input"))
        scan(e.get("output"))
    return out


def render(description: dict[str, Any], events: list[dict[str, Any]], wf: Workflow,
           states: Any = None) -> str:
    """The HTML page (a string) for one session: `description` from HistoryReader.describe,
    `events` from HistoryReader.history, `wf` the app's (compiled) workflow, `states` the
    Step Functions state graph (unumctl.asl.graph.StateGraph) for a Step Functions app."""
    nodes = _layout(wf)
    for n in nodes:
        n["outcome"] = outcome_of(events, n["name"])
    crit = critical_path(events, wf)
    data = {"session": description, "events": events, "nodes": nodes, "colours": COLOURS,
            "critical": crit, "states": _state_view(states, events) if states is not None else None}
    title = html.escape(f"unumctl trace {description['session']}")
    parts = {"__TITLE__": title, "__DATA__": embed_json(data)}
    # one pass: a placeholder's text inside a value (a session named __DATA__) is not replaced
    return re.sub("__TITLE__|__DATA__", lambda m: parts[m.group()], _PAGE)


# the characters that could end, comment out or re-open the <script> element the data sits
# in (`</script>`, `<!--`, `<script>`), start an entity, or end a line in a JS parser that
# predates ES2019: written as JSON escapes, which JSON.parse turns back into the same text
_EMBED = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026",
                        "\u2028": "\\u2028", "\u2029": "\\u2029"})


def embed_json(value: Any) -> str:
    """`value` as JSON text that is safe as the content of a `<script type="application/json">`
    element: no value can change how the page is parsed (`<`, `>`, `&`, U+2028 and U+2029 are
    written `\\u003c`, `\\u003e`, `\\u0026`, `\\u2028`, `\\u2029`; they occur only inside
    JSON strings, where those escapes mean the same characters), and JSON.parse of the
    element's textContent gives back `value` (HTML Living Standard, "Restrictions for contents
    of script elements"; RFC 8259 section 7). Values that are not JSON are written with str()."""
    return json.dumps(value, default=str).translate(_EMBED)


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 6px} h2{font-size:15px;margin:18px 0 6px}
#summary span{margin-right:14px} svg text{font:11px system-ui,sans-serif}
.bar,.node,.state{cursor:pointer} #detail{white-space:pre-wrap;background:#f5f5f5;
padding:8px;border:1px solid #ddd;max-height:320px;overflow:auto}
.legend span{display:inline-block;margin-right:10px} .sw{display:inline-block;width:10px;height:10px;margin-right:3px}
#critical{margin:4px 0}
</style></head><body>
<h1 id="title"></h1><div id="summary"></div>
<div id="stateSection" hidden><h2>State machine (as written)</h2><svg id="states"></svg></div>
<h2 id="graphTitle">Workflow</h2><svg id="graph"></svg>
<h2>Timeline</h2><div class="legend" id="legend"></div><div id="critical"></div><svg id="timeline"></svg>
<h2>Details</h2><div id="detail">Click a bar, a function or a state.</div>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) { const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]); if (parent) parent.appendChild(e); return e; }
function show(obj) { document.getElementById("detail").textContent = JSON.stringify(obj, null, 2); }
function maxOf(xs, d) { return xs.reduce((a, b) => (b > a ? b : a), d); }
function minOf(xs, d) { return xs.reduce((a, b) => (b < a ? b : a), d); }
const s = D.session;
document.getElementById("title").textContent = "Session " + s.session + " \u2014 " + s.status;
const sum = document.getElementById("summary");
const c = s.counts || {};
for (const [k, v] of [["entry", s.function], ["duration", s.duration == null ? "-" : s.duration.toFixed(3) + " s"],
    ["invocations", c.invocations], ["executions", c.executions], ["retries", c.retries],
    ["duplicates dropped", c.duplicates_dropped], ["error", s.error || "-"]]) {
  const sp = document.createElement("span"); sp.textContent = k + ": " + v; sum.appendChild(sp); }
function colour(o) { return D.colours[o] || "#e0e0e0"; }
function layered(svg, nodes, W, H, GX, GY) {
  const maxw = maxOf(nodes.map(n => n.width), 1), layers = maxOf(nodes.map(n => n.layer), 0) + 1;
  svg.setAttribute("width", maxw * (W + GX) + 20); svg.setAttribute("height", layers * (H + GY) + 10);
  const pos = {};
  for (const n of nodes) { const off = (maxw - n.width) * (W + GX) / 2;
    pos[n.id || n.name] = {x: 10 + off + n.pos * (W + GX), y: 10 + n.layer * (H + GY)}; }
  return pos;
}
function box(svg, cls, p, W, H, n, label, onclick) {
  const grp = el("g", {class: cls, "data-outcome": n.outcome}, svg);
  el("rect", {x: p.x, y: p.y, width: W, height: H, rx: 6, fill: colour(n.outcome), stroke: "#333"}, grp);
  const t = el("text", {x: p.x + W / 2, y: p.y + H / 2 + 4, "text-anchor": "middle",
    fill: n.outcome === "none" || n.outcome === "walked" ? "#222" : "#fff"}, grp); t.textContent = label;
  el("title", {}, grp).textContent = label + (n.runs ? "\n" + n.runs : "");
  grp.addEventListener("click", onclick);
}
// the Step Functions states as written
if (D.states) {
  document.getElementById("stateSection").hidden = false;
  document.getElementById("graphTitle").textContent = "Compiled functions";
  const sg = document.getElementById("states"), W = 170, H = 34;
  const pos = layered(sg, D.states.nodes, W, H, 30, 58);
  const defs = el("defs", {}, sg);  // arrowheads: grey, and blue for the path taken
  for (const [id, c] of [["arrow", "#888"], ["arrowTaken", "#1565c0"], ["arrowCatch", "#c62828"]]) {
    const m = el("marker", {id: id, viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 9, markerHeight: 9, markerUnits: "userSpaceOnUse",
      orient: "auto-start-reverse"}, defs); el("path", {d: "M0,0 L10,5 L0,10 z", fill: c}, m); }
  const labelled = {};  // labels of the edges into each target, drawn once above it
  for (const e of D.states.edges) { const a = pos[e.from], b = pos[e.to]; if (!a || !b) continue;
    const taken = e.taken === true, catchEdge = e.kind === "catch";
    const ln = el("line", {x1: a.x + W / 2, y1: a.y + H, x2: b.x + W / 2, y2: b.y,
      stroke: taken ? "#1565c0" : catchEdge ? "#c62828" : "#888", "stroke-dasharray": catchEdge ? "4 3" : "",
      "stroke-width": taken ? 3.5 : e.kind === "branch" ? 3 : 1.5, opacity: D.states.recorded && !taken ? 0.45 : 1,
      "marker-end": "url(#" + (taken ? "arrowTaken" : catchEdge ? "arrowCatch" : "arrow") + ")",
      class: "edge" + (taken ? " taken" : ""), "data-from": e.from, "data-to": e.to}, sg);
    if (e.label) { (labelled[e.to] = labelled[e.to] || {b: b, items: []}).items.push({label: e.label, taken: taken, from: e.from}); } }
  for (const to in labelled) {  // above the target box, so that the labels of one Choice never share a spot
    const {b, items} = labelled[to], full = items.map(x => x.label).join(" / ");
    const text = full.length > 28 ? full.slice(0, 27) + "\u2026" : full;
    const t = el("text", {x: b.x + W / 2, y: b.y - 6, "text-anchor": "middle", "font-size": 11,
      fill: items.some(x => x.taken) ? "#1565c0" : "#555", "font-weight": items.some(x => x.taken) ? "bold" : "normal",
      class: "edgeLabel", "data-to": to}, sg);
    t.textContent = text; el("title", {}, t).textContent = full; }
  for (const n of D.states.nodes) {
    box(sg, "state" + (n.taken ? " taken" : ""), pos[n.id], W, H, n, n.name + " \u00b7 " + n.type,
        () => show({state: n.name, type: n.type, runs: n.runs, outcome: n.outcome, taken: n.taken,
                    steps: n.steps, events: D.events.filter(e => n.functions.includes(e.function))}));
    if (D.states.recorded && !n.taken) sg.lastChild.setAttribute("opacity", 0.55); }
}
// the (compiled) workflow's functions
const g = document.getElementById("graph"), W = 150, H = 34;
const gpos = layered(g, D.nodes, W, H, 40, 50);
for (const n of D.nodes) for (const e of n.next) { const a = gpos[n.name], b = gpos[e.to]; if (!b) continue;
  el("line", {x1: a.x + W / 2, y1: a.y + H, x2: b.x + W / 2, y2: b.y, stroke: "#888",
    "stroke-dasharray": e.type === "Fan-in" ? "4 3" : e.type === "Shuffle" ? "8 2 1 2" : e.type === "Window" ? "1 3" : "",
    "stroke-width": e.type === "Map" || e.type === "Shuffle" ? 3 : 1.5, class: "edge-" + e.type}, g);
  if (e.label) { const q = el("text", {x: (a.x + b.x) / 2 + W / 2 + 4, y: (a.y + H + b.y) / 2,
    class: "edgeLabel quorum"}, g); q.textContent = e.label; }
  if (e.type === "Shuffle") el("text", {x: (a.x + b.x + W) / 2 + 4, y: (a.y + H + b.y) / 2, "font-size": 10,
    class: "shuffle-label"}, g).textContent = "shuffle: 1 per key";
  if (e.window) el("text", {x: (a.x + b.x) / 2 + W / 2 + 4, y: (a.y + H + b.y) / 2, "font-size": 11, fill: "#5d4037"}, g)
    .textContent = "window " + e.window; }
for (const n of D.nodes) box(g, "node", gpos[n.name], W, H, n, n.name + " (" + n.outcome + ")",
                             () => show(D.events.filter(e => e.function === n.name)));
// timeline: one bar per event; the critical path outlined, retries and duplicates labelled
const lg = document.getElementById("legend");
function swatch(text, style) {  // no markup is built from text: every text goes in as textContent
  const sp = document.createElement("span"), sw = document.createElement("i");
  sw.className = "sw"; Object.assign(sw.style, style); sp.appendChild(sw);
  sp.appendChild(document.createTextNode(text)); lg.appendChild(sp); }
for (const k in D.colours) swatch(k, {background: D.colours[k]});
swatch("critical path", {border: "2px solid #000", background: "#fff"});
const critical = new Set(D.critical || []);
const ev = [];
D.events.forEach((e, i) => { if (e.t0 != null) ev.push([i, e]); });
const t0 = minOf(ev.map(x => x[1].t0), Infinity), t1 = maxOf(ev.map(x => x[1].t1 || x[1].t0), -Infinity);
const span = Math.max(t1 - t0, 1e-6), TW = 900, ROW = 14, LBL = 260;
if (D.critical && D.critical.length) {
  const names = [];
  for (const i of D.critical) { const n = D.events[i].instance || D.events[i].function;
    if (names[names.length - 1] !== n) names.push(n); }
  document.getElementById("critical").textContent = "Critical path: " + names.join(" \u2192 ");
}
const tl = document.getElementById("timeline");
tl.setAttribute("width", LBL + TW + 20); tl.setAttribute("height", ev.length * ROW + 30);
const ax = el("text", {x: LBL, y: 12}, tl); ax.textContent = "0 s";
const ax2 = el("text", {x: LBL + TW, y: 12, "text-anchor": "end"}, tl); ax2.textContent = span.toFixed(3) + " s";
ev.forEach(([idx, e], i) => { const y = 20 + i * ROW, crit = critical.has(idx);
  const x = LBL + (e.t0 - t0) / span * TW, w = Math.max(2, ((e.t1 || e.t0) - e.t0) / span * TW);
  if (crit) el("rect", {x: 0, y: y - 1, width: LBL + TW + 20, height: ROW, fill: "#fff3c4", class: "critical-row"}, tl);
  const lab = el("text", {x: 4, y: y + 10, "font-weight": crit ? "bold" : "normal"}, tl);
  const what = e.kind === "retried" ? "retry \u2192 attempt " + e.attempt
    : e.kind === "fired" && e.trigger ? "fired " + e.trigger + ": " + e.keys + " keys \u2192 " + e.target
    : e.kind === "fired" && e.window ? "fired window " + e.window.Name + " " + e.window.Id + " (" + e.window.Size + " objects)"
    : e.kind === "quorum_fired" ? "fired the quorum"
    : e.kind === "duplicated" ? "delivered twice" : e.kind + (e.attempt > 1 ? " (attempt " + e.attempt + ")" : "");
  lab.textContent = (crit ? "\u2605 " : "") + (e.instance || e.function || "") + " " + what;
  const dup = e.kind === "dropped" || e.kind === "duplicated";
  const r = el("rect", {x: x, y: y, width: w, height: ROW - 3, fill: colour(e.kind), class: "bar",
    "data-kind": e.kind, "data-critical": crit ? "1" : "0", stroke: crit ? "#000" : (dup ? "#00838f" : "none"),
    "stroke-width": crit ? 2 : 1, "stroke-dasharray": dup ? "3 2" : "", "fill-opacity": dup ? 0.55 : 1}, tl);
  el("title", {}, r).textContent = e.kind + " " + (e.instance || "") + (e.detail ? ": " + e.detail : "");
  r.addEventListener("click", () => show(e)); });
</script></body></html>
"""
