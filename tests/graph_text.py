"""A strict reader of the Mermaid and DOT text `unumctl graph` writes (unumctl/graph.py,
unumctl/asl/graph.py), for tests: every line must be one statement of the small grammar
below, or the reader fails naming the line. A label that let its text out (a newline that
starts a `click X href "javascript:..."` line, a quote that closes the label early, a `]`
or `-->` read as syntax) makes a line that matches no statement.

Mermaid (flowchart syntax, https://mermaid.js.org/syntax/flowchart.html): `flowchart TD`;
`%% comment`; a node `ID<open>"TEXT"<close>` (or the `((start))` / `((end))` circles);
an edge `ID ARROW ID` or `ID ARROW|"TEXT"| ID`; `subgraph ID ["TEXT"]`; `end`. TEXT holds
no quote; its entity codes (`#quot;`, `#35;`...) decode to the label's text.

DOT (https://graphviz.org/doc/info/lang.html): `digraph ID {`, `}`, `rankdir=TB;`,
`// comment`, a node `"ID" [ATTRS];`, an edge `"ID" -> "ID" [ATTRS];`,
`subgraph "cluster_ID" {`, `label="TEXT"; style=rounded;`; ATTRS are `key=value` pairs
whose values are words or quoted strings (`\\"` a quote, `\\\\` a backslash, `\\n` a line
break).
"""

from __future__ import annotations

import html
import re

_ID = r"(?:n\d+|__start|__end)"
_TEXT = r'"([^"\n]*)"'
_SHAPES = [(r"\[", r"\]"), (r"\(", r"\)"), (r"\{", r"\}"), (r"\[/", r"/\]"), (r"\(\[", r"\]\)"),
           (r">", r"\]"), (r"\[\[", r"\]\]")]
_ARROW = r"(-->|==>|-\.->|--o)"
MERMAID = {
    "header": re.compile(r"flowchart TD"),
    "comment": re.compile(r"%% ([^\n]*)"),
    "circle": re.compile(rf"({_ID})\(\((start|end)\)\)"),
    "node": re.compile(rf"({_ID})(?:{'|'.join(o + _TEXT + c for o, c in _SHAPES)})"),
    "edge": re.compile(rf"({_ID}) {_ARROW}(?:\|{_TEXT}\|)? ({_ID})"),
    "subgraph": re.compile(rf"subgraph (b_n\d+(?:_\d+)?) \[{_TEXT}\]"),
    "end": re.compile(r"end"),
}
_QUOTED = r'"((?:[^"\\\n]|\\.)*)"'
_ATTRS = rf"\[(\w+=(?:\w+|{_QUOTED})(?:, \w+=(?:\w+|{_QUOTED}))*)\]"
DOT = {
    "header": re.compile(r"digraph (workflow|statemachine) \{"),
    "close": re.compile(r"\}"),
    "rankdir": re.compile(r"rankdir=TB;"),
    "comment": re.compile(r"// ([^\n]*)"),
    "node": re.compile(rf'"({_ID})" {_ATTRS};'),
    "edge": re.compile(rf'"({_ID})" -> "({_ID})" {_ATTRS};'),
    "subgraph": re.compile(r'subgraph "cluster_(b_n\d+(?:_\d+)?)" \{'),
    "cluster_label": re.compile(rf"label={_QUOTED}; style=rounded;"),
}


def _statements(text: str, grammar: dict[str, re.Pattern]) -> list[tuple[str, re.Match]]:
    assert text.endswith("\n"), text[-80:]
    out = []
    for n, line in enumerate(text[:-1].split("\n"), 1):
        s = line.strip()
        for kind, rx in grammar.items():
            m = rx.fullmatch(s)
            if m:
                out.append((kind, m))
                break
        else:
            raise AssertionError(f"line {n} is no statement of the grammar: {line!r}")
    return out


def mermaid_decode(text: str) -> str:
    """A Mermaid label's text: entity codes (`#quot;`, `#35;`) decoded."""
    return html.unescape(re.sub(r"#(\d+|[a-zA-Z]+);", lambda m: f"&#{m[1]};" if m[1].isdigit() else f"&{m[1]};",
                                text))


def dot_decode(text: str) -> str:
    """A DOT quoted string's text: `\\"` a quote, `\\\\` a backslash, `\\n` a line break."""
    return re.sub(r"\\(.)", lambda m: "\n" if m[1] == "n" else m[1], text)


def read_mermaid(text: str) -> tuple[dict[str, str], list[tuple[str, str, str, str]], list[str]]:
    """(nodes {id: decoded label}, edges [(src id, arrow, decoded label, dst id)], comments);
    AssertionError naming the first line that is no statement. `<br/>` in a node's text
    (the joiner unumctl.asl.graph puts between its parts) becomes a newline."""
    nodes: dict[str, str] = {}
    edges: list[tuple[str, str, str, str]] = []
    comments: list[str] = []
    depth = 0
    for kind, m in _statements(text, MERMAID):
        if kind == "node":
            label = next(g for g in m.groups()[1:] if g is not None)
            nodes[m[1]] = "\n".join(mermaid_decode(p) for p in label.split("<br/>"))
        elif kind == "edge":
            edges.append((m[1], m[2], mermaid_decode(m[3] or ""), m[4]))
        elif kind == "comment":
            comments.append(mermaid_decode(m[1]))
        elif kind == "subgraph":
            depth += 1
        elif kind == "end":
            depth -= 1
            assert depth >= 0, "an `end` closes no subgraph"
    assert depth == 0
    return nodes, edges, comments


def _attrs(body: str) -> dict[str, str]:
    return {m[1]: dot_decode(m[3]) if m[3] is not None else m[2]
            for m in re.finditer(rf"(\w+)=(?:(\w+)|{_QUOTED})", body)}


def read_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, dict[str, str]]], list[str]]:
    """(nodes {id: attributes}, edges [(src id, dst id, attributes)], comments), quoted
    values decoded; AssertionError naming the first line that is no statement."""
    nodes: dict[str, dict[str, str]] = {}
    edges: list[tuple[str, str, dict[str, str]]] = []
    comments: list[str] = []
    depth = 0
    for kind, m in _statements(text, DOT):
        if kind == "node":
            nodes[m[1]] = _attrs(m[2])
        elif kind == "edge":
            edges.append((m[1], m[2], _attrs(m[3])))
        elif kind == "comment":
            comments.append(dot_decode(m[1]))
        elif kind in ("header", "subgraph"):
            depth += 1
        elif kind == "close":
            depth -= 1
    assert depth == 0
    return nodes, edges, comments


def mermaid_edges(text: str) -> list[tuple[str, str, str, str]]:
    """[(source node's label, arrow, edge label, target node's label)] of Mermaid `text`."""
    nodes, edges, _ = read_mermaid(text)
    return [(nodes.get(a, a), arrow, label, nodes.get(b, b)) for a, arrow, label, b in edges]


def dot_edges(text: str) -> list[tuple[str, str, dict[str, str]]]:
    """[(source node's label, target node's label, edge attributes)] of DOT `text`."""
    nodes, edges, _ = read_dot(text)
    return [(nodes[a].get("label", a), nodes[b].get("label", b), attrs) for a, b, attrs in edges]
