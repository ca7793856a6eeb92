"""Render an app's workflow as Mermaid or Graphviz DOT text (`unumctl graph`)."""

from __future__ import annotations

from runtime.ir import Workflow

_MERMAID_ARROWS = {"Scalar": "-->", "Map": "==>", "Fan-in": "-.->", "Shuffle": "==>", "Window": "--o"}


def quorum_label(edge) -> str:
    """`quorum k of n` for a Fan-in edge with `Quorum: k` (n: the Values entries, `*` when one
    is a glob whose size is known only at run time)."""
    globbed = any(p.glob for v in edge.values for p in v.parts)
    return f"quorum {edge.quorum} of {'*' if globbed else len(edge.values)}"


def _label(edge) -> str:
    parts = [] if edge.type == "Scalar" else [edge.type]
    if edge.quorum is not None:  # k-of-n fan-in (docs/ir.md "Quorum")
        parts.append(quorum_label(edge))
    if edge.type == "Shuffle":  # runtime/triggers/shuffle.py: one invocation per run-time key
        parts.append("1 per key")
    if edge.conditional is not None:
        parts.append(f"if {edge.conditional.source}")
    if edge.values:
        parts.append("[" + ", ".join(v.source for v in edge.values) + "]")
    if edge.window is not None:  # windows across sessions (docs/ir.md)
        w = edge.window
        parts.append(f"{w.name} every {w.batch_size} objects" if w.batch_size is not None
                     else f"{w.name} every {w.seconds:g} s")
    if edge.modifiers:
        parts.append("; ".join(m.source for m in edge.modifiers))
    if edge.iterate:
        parts.append("iterate")
    return " ".join(parts)


def to_mermaid(wf: Workflow) -> str:
    """`flowchart TD` text: Scalar edges `-->`, Map and Shuffle `==>` (Shuffle labelled
    `Shuffle 1 per key`), Fan-in `-.->`, Window `--o`, labelled with
    conditionals, Values and modifiers; the entry function is drawn as a stadium."""
    lines = ["flowchart TD"]
    for name, node in wf.functions.items():
        lines.append(f"    {name}([{name}])" if node.start else f"    {name}[{name}]")
    for name, node in wf.functions.items():
        for e in node.next:
            label = _label(e).replace('"', "'")
            arrow = _MERMAID_ARROWS[e.type]
            lines.append(f'    {name} {arrow}|"{label}"| {e.target}' if label else f"    {name} {arrow} {e.target}")
    return "\n".join(lines) + "\n"


def to_dot(wf: Workflow) -> str:
    """`digraph` text with one node per function; edge style by type (Map bold, Fan-in dashed,
    Shuffle bold with a crow's-foot head: one invocation per run-time key; Window dotted)."""
    style = {"Scalar": "solid", "Map": "bold", "Fan-in": "dashed", "Shuffle": "bold", "Window": "dotted"}
    lines = ["digraph workflow {", "    rankdir=TB;"]
    for name, node in wf.functions.items():
        shape = "doublecircle" if node.start else "box"
        lines.append(f'    "{name}" [shape={shape}];')
    for name, node in wf.functions.items():
        for e in node.next:
            label = _label(e).replace('"', '\\"')
            head = ", arrowhead=crow" if e.type == "Shuffle" else ""
            lines.append(f'    "{name}" -> "{e.target}" [style={style[e.type]}{head}, label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
