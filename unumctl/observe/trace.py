"""`unumctl trace`: one self-contained HTML file for a session (no network access needed):
the workflow graph coloured by outcome and a timeline with one bar per execution; clicking a
bar or a function shows its events, input and output."""

from __future__ import annotations

import html
import json
from collections import deque
from typing import Any

from runtime.ir import Workflow

COLOURS = {"ran": "#2e7d32", "adopted": "#1565c0", "dropped": "#9e9e9e", "failed": "#c62828",
           "crashed": "#ef6c00", "suspended": "#6a1b9a", "retried": "#f9a825", "timed_out": "#ad1457",
           "out_of_memory": "#ad1457", "gave_up": "#b71c1c", "duplicated": "#00838f"}
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
                        "next": [{"to": e.target, "type": e.type} for e in wf.functions[n].next]})
    return out


def outcome_of(events: list[dict[str, Any]], function: str) -> str:
    """The most notable event kind of a function's events ('none' when it never executed)."""
    kinds = {e["kind"] for e in events if e.get("function") == function}
    for k in _RANK:
        if k in kinds:
            return k
    return "none"


def render(description: dict[str, Any], events: list[dict[str, Any]], wf: Workflow) -> str:
    """The HTML page (a string) for one session: `description` from HistoryReader.describe,
    `events` from HistoryReader.history, `wf` the app's workflow."""
    nodes = _layout(wf)
    for n in nodes:
        n["outcome"] = outcome_of(events, n["name"])
    data = {"session": description, "events": events, "nodes": nodes, "colours": COLOURS}
    blob = json.dumps(data, default=str).replace("</", "<\\/")
    title = html.escape(f"unumctl trace {description['session']}")
    return _PAGE.replace("__TITLE__", title).replace("__DATA__", blob)


_PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>__TITLE__</title>
<style>
body{font:13px system-ui,sans-serif;margin:16px;color:#222}
h1{font-size:18px;margin:0 0 6px} h2{font-size:15px;margin:18px 0 6px}
#summary span{margin-right:14px} svg text{font:11px system-ui,sans-serif}
.bar{cursor:pointer} .node{cursor:pointer} #detail{white-space:pre-wrap;background:#f5f5f5;
padding:8px;border:1px solid #ddd;max-height:320px;overflow:auto}
.legend span{display:inline-block;margin-right:10px} .sw{display:inline-block;width:10px;height:10px;margin-right:3px}
</style></head><body>
<h1 id="title"></h1><div id="summary"></div>
<h2>Workflow</h2><svg id="graph"></svg>
<h2>Timeline</h2><div class="legend" id="legend"></div><svg id="timeline"></svg>
<h2>Details</h2><div id="detail">Click a bar or a function.</div>
<script type="application/json" id="data">__DATA__</script>
<script>
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const NS = "http://www.w3.org/2000/svg";
function el(tag, attrs, parent) { const e = document.createElementNS(NS, tag);
  for (const k in attrs) e.setAttribute(k, attrs[k]); if (parent) parent.appendChild(e); return e; }
function show(obj) { document.getElementById("detail").textContent = JSON.stringify(obj, null, 2); }
const s = D.session;
document.getElementById("title").textContent = "Session " + s.session + " \u2014 " + s.status;
const sum = document.getElementById("summary");
const c = s.counts || {};
for (const [k, v] of [["entry", s.function], ["duration", s.duration == null ? "-" : s.duration.toFixed(3) + " s"],
    ["invocations", c.invocations], ["executions", c.executions], ["retries", c.retries],
    ["duplicates dropped", c.duplicates_dropped], ["error", s.error || "-"]]) {
  const sp = document.createElement("span"); sp.textContent = k + ": " + v; sum.appendChild(sp); }
// graph
const g = document.getElementById("graph"), W = 150, H = 34, GX = 40, GY = 50;
const maxw = Math.max(1, ...D.nodes.map(n => n.width)), layers = Math.max(0, ...D.nodes.map(n => n.layer)) + 1;
g.setAttribute("width", maxw * (W + GX) + 20); g.setAttribute("height", layers * (H + GY) + 10);
const pos = {};
for (const n of D.nodes) { const off = (maxw - n.width) * (W + GX) / 2;
  pos[n.name] = {x: 10 + off + n.pos * (W + GX), y: 10 + n.layer * (H + GY)}; }
for (const n of D.nodes) for (const e of n.next) { const a = pos[n.name], b = pos[e.to]; if (!b) continue;
  el("line", {x1: a.x + W / 2, y1: a.y + H, x2: b.x + W / 2, y2: b.y, stroke: "#888",
    "stroke-dasharray": e.type === "Fan-in" ? "4 3" : "", "stroke-width": e.type === "Map" ? 3 : 1.5}, g); }
for (const n of D.nodes) { const p = pos[n.name];
  const grp = el("g", {class: "node"}, g);
  el("rect", {x: p.x, y: p.y, width: W, height: H, rx: 6, fill: D.colours[n.outcome] || "#e0e0e0",
    stroke: "#333"}, grp);
  const t = el("text", {x: p.x + W / 2, y: p.y + H / 2 + 4, "text-anchor": "middle",
    fill: n.outcome === "none" ? "#222" : "#fff"}, grp); t.textContent = n.name + " (" + n.outcome + ")";
  grp.addEventListener("click", () => show(D.events.filter(e => e.function === n.name))); }
// timeline
const lg = document.getElementById("legend");
for (const k in D.colours) { const sp = document.createElement("span");
  sp.innerHTML = '<i class="sw" style="background:' + D.colours[k] + '"></i>' + k; lg.appendChild(sp); }
const ev = D.events.filter(e => e.t0 != null);
const t0 = Math.min(...ev.map(e => e.t0)), t1 = Math.max(...ev.map(e => e.t1 || e.t0));
const span = Math.max(t1 - t0, 1e-6), TW = 900, ROW = 14, LBL = 230;
const tl = document.getElementById("timeline");
tl.setAttribute("width", LBL + TW + 20); tl.setAttribute("height", ev.length * ROW + 30);
const ax = el("text", {x: LBL, y: 12}, tl); ax.textContent = "0 s";
const ax2 = el("text", {x: LBL + TW, y: 12, "text-anchor": "end"}, tl); ax2.textContent = span.toFixed(3) + " s";
ev.forEach((e, i) => { const y = 20 + i * ROW;
  const x = LBL + (e.t0 - t0) / span * TW, w = Math.max(2, ((e.t1 || e.t0) - e.t0) / span * TW);
  const lab = el("text", {x: 4, y: y + 10}, tl);
  lab.textContent = (e.instance || e.function || "") + (e.attempt ? " #" + e.attempt : "") + " " + e.kind;
  const r = el("rect", {x: x, y: y, width: w, height: ROW - 3, fill: D.colours[e.kind] || "#666", class: "bar"}, tl);
  el("title", {}, r).textContent = e.kind + " " + (e.instance || "") + (e.detail ? ": " + e.detail : "");
  r.addEventListener("click", () => show(e)); });
</script></body></html>
"""
