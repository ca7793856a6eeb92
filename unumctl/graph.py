"""Render an app's workflow as Mermaid or Graphviz DOT text (`unumctl graph`).

No name or label can change how the text is parsed: node ids come from a safe scheme (`n0`,
`n1`, ... in the workflow's order, never from a name), and every label is quoted, its text
escaped by `mermaid_text` / `dot_text` (also used by unumctl.asl.graph), so a label holding
a newline, quotes, brackets, `-->` or `click X href "javascript:..."` stays one label on one
line.
"""

from __future__ import annotations

import re
import string

from runtime.ir import Workflow

__all__ = ["dot_text", "mermaid_text", "quorum_label", "to_dot", "to_mermaid"]

_MERMAID_ARROWS = {"Scalar": "-->", "Map": "==>", "Fan-in": "-.->", "Shuffle": "==>", "Window": "--o"}

# Mermaid, flowchart syntax, "Special characters that break syntax" and "Entity codes to escape
# characters" (https://mermaid.js.org/syntax/flowchart.html#entity-codes-to-escape-characters):
# text inside quotes, any character written `#<decimal code>;` or `#<HTML character name>;`
_MERMAID_KEEP = frozenset(string.ascii_letters + string.digits + " _-.,:/=+*?!@$'~^()")
_MERMAID_NAMED = {'"': "#quot;", "&": "#amp;", "<": "#lt;", ">": "#gt;", "|": "#124;"}
# the characters Python's str.splitlines, and so a line-based reader, takes as a line end
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")


def mermaid_text(text: str) -> str:
    """`text` for the inside of a quoted Mermaid label (`["..."]`, `|"..."|`, a subgraph's
    title) or a `%%` comment: letters, digits, space and `_-.,:/=+*?!@$'~^()` as they are, and
    printable non-ASCII characters; every other character as an entity code (`"` `#quot;`,
    `&` `#amp;`, `<` `#lt;`, `>` `#gt;`, `|` `#124;`, anything else `#<decimal code>;`:
    newline `#10;`, `#` `#35;`, `;` `#59;`, `[` `#91;`, backtick `#96;`...). The result holds
    no quote, no line break and no `#` that is not an entity's, so the label's text is
    exactly `text` once the entities are decoded."""
    out = []
    for ch in text:
        if ch in _MERMAID_KEEP or (ord(ch) > 127 and ch.isprintable() and not ch.isspace()):
            out.append(ch)
        else:
            out.append(_MERMAID_NAMED.get(ch) or f"#{ord(ch)};")
    return "".join(out)


def dot_text(text: str) -> str:
    """`text` for the inside of a DOT double-quoted string used as a label or a `//` comment
    (Graphviz, "The DOT Language", IDs: in a quoted string `\\"` is a quote; "Attributes",
    escString: `\\n` breaks the line, `\\\\` is a backslash, so `\\N`, `\\G`... in the text
    stay text): a backslash as `\\\\`, a quote as `\\"`, each line break (CR LF, LF, CR,
    U+2028...) as `\\n`, any other control character as a space. The result holds no
    unescaped quote and no line break."""
    out = []
    for ch in text.replace("\r\n", "\n"):
        if ch == "\\":
            out.append("\\\\")
        elif ch == '"':
            out.append('\\"')
        elif ch in _LINE_BREAKS:
            out.append("\\n")
        elif not ch.isprintable() and ch != " ":
            out.append(" ")
        else:
            out.append(ch)
    return "".join(out)


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
    ids = _ids(wf)
    lines = ["flowchart TD"]
    for name, node in wf.functions.items():
        text = mermaid_text(node_text(wf, name))
        lines.append(f'    {ids[name]}(["{text}"])' if node.start else f'    {ids[name]}["{text}"]')
    for name, node in wf.functions.items():
        for e in node.next:
            label = mermaid_text(_label(e))
            arrow = _MERMAID_ARROWS[e.type]
            dst = ids[e.target]
            lines.append(f'    {ids[name]} {arrow}|"{label}"| {dst}' if label else f"    {ids[name]} {arrow} {dst}")
    return "\n".join(lines) + "\n"


_PY_SITE = re.compile(r"([^/\\]+\.py):(\d+)$")


def node_text(wf: Workflow, name: str) -> str:
    """A function's label: its name, and for a Python workflow (unumctl/python.py: the
    source is the `FILE:LINE` of the step call) the file's name and line, `Split (flow.py:57)`."""
    m = _PY_SITE.search(wf.sources.get(name, ""))
    return f"{name} ({m[1]}:{m[2]})" if m else name


def _ids(wf: Workflow) -> dict[str, str]:
    """Function name -> node id (`n0`, `n1`... in the workflow's order): an id is never a
    name, so no name can be a keyword of either language (`end`, `click`, `subgraph`...)."""
    return {name: f"n{k}" for k, name in enumerate(wf.functions)}


def to_dot(wf: Workflow) -> str:
    """`digraph` text with one node per function; edge style by type (Map bold, Fan-in dashed,
    Shuffle bold with a crow's-foot head: one invocation per run-time key; Window dotted)."""
    style = {"Scalar": "solid", "Map": "bold", "Fan-in": "dashed", "Shuffle": "bold", "Window": "dotted"}
    ids = _ids(wf)
    lines = ["digraph workflow {", "    rankdir=TB;"]
    for name, node in wf.functions.items():
        shape = "doublecircle" if node.start else "box"
        lines.append(f'    "{ids[name]}" [shape={shape}, label="{dot_text(node_text(wf, name))}"];')
    for name, node in wf.functions.items():
        for e in node.next:
            label = dot_text(_label(e))
            head = ", arrowhead=crow" if e.type == "Shuffle" else ""
            lines.append(f'    "{ids[name]}" -> "{ids[e.target]}" [style={style[e.type]}{head}, label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"
