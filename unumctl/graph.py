"""Render an app's workflow as Mermaid or Graphviz DOT text (`unumctl graph`)."""

from __future__ import annotations

from runtime.ir import Workflow

_MERMAID_ARROWS = {"Scalar": "-->", "Map": "==>", "Fan-in": "-.->", "Window": "--o"}


def _label(edge) -> str:
    parts = [] if edge.type == "Scalar" else [edge.type]
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
    """`flowchart TD` text: Scalar edges `-->`, Map `==>`, Fan-in `-.->`, Window `--o`, labelled with
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
    Window dotted)."""
    style = {"Scalar": "solid", "Map": "bold", "Fan-in": "dashed", "Window": "dotted"}
    lines = ["digraph workflow {", "    rankdir=TB;"]
    for name, node in wf.functions.items():
        shape = "doublecircle" if node.start else "box"
        lines.append(f'    "{name}" [shape={shape}];')
    for name, node in wf.functions.items():
        for e in node.next:
            label = _label(e).replace('"', '\\"')
            lines.append(f'    "{name}" -> "{e.target}" [style={style[e.type]}, label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
