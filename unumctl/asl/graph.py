"""`unumctl graph` for a Step Functions app: the state machine the user wrote, as Mermaid or
Graphviz DOT text, annotated with the compiled function each state runs in.

Every state is a node (Task, Pass, Choice, Wait, Succeed, Fail, Map, Parallel, each with its
own shape); `Next` edges are plain, Choice edges carry the rule as a label (`$.n > 1000 and
not ($.vip == true)`, `default`), Catch edges are dashed and labelled `catch <ErrorEquals>`.
A Map or Parallel state is a box (Mermaid subgraph, DOT cluster) holding the state's node and
one nested box per branch (the Map's item processor), entered by an `each item` /
`branch k` edge (a Distributed Map's box is `Distributed Map <name>`, its edge `each item of
getObject` / `each batch of ...` with an ItemReader / ItemBatcher). Each node says where it runs, from the compiler's output
(unumctl.asl.compiler.Compiler): `in F` (the function whose invocation runs the state: a
Task's own function, or the functions that walk Pass/Choice/Wait/Succeed/Fail states in
their ingress/egress), `fan-out in F` / `join in G` for Map and Parallel, `after timer in W`
for a Wait whose continuation is a delayed invocation, `in-process in F` for a Map/Parallel
run inside one function. Comment lines list every compiled function with its code (a
manifest function, or `synthesized`).

Sources: ASL spec (https://states-language.net/spec.html) for the states and fields drawn;
docs/stepfunctions.md "The compilation rule" for where states run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from runtime.asl.distributed import is_distributed

from ..graph import dot_text, mermaid_text
from .compiler import Compiler, _branches, _where

__all__ = ["rule_text", "state_graph", "to_dot", "to_mermaid"]

_OPS = {"Equals": "==", "LessThan": "<", "GreaterThan": ">", "LessThanEquals": "<=",
        "GreaterThanEquals": ">="}
MAX_LABEL = 70


@dataclass
class Node:
    """One state: `id` (graph id), `name`, `type` (ASL Type), `runs` (where it runs, as text),
    `functions` (the compiled functions that run it: unumctl trace colours the state by
    their executions)."""

    id: str
    name: str
    type: str
    runs: str = ""
    retry: str = ""
    functions: list[str] = field(default_factory=list)  # compiled functions running it, task's first


@dataclass
class Box:
    """A Map/Parallel state (its node first) or one of its branches; `items` are node ids
    and nested boxes in drawing order."""

    id: str
    label: str
    items: list[Any] = field(default_factory=list)


@dataclass
class Edge:
    """`kind` is next, choice, default, catch, branch or end."""

    src: str
    dst: str
    label: str = ""
    kind: str = "next"


@dataclass
class StateGraph:
    """The drawing: top-level items (node ids and boxes), nodes, edges, and the compiled
    functions as (name, code) pairs (code None for synthesized functions)."""

    items: list[Any]
    nodes: dict[str, Node]
    edges: list[Edge]
    functions: list[tuple[str, str | None]]


def rule_text(rule: dict[str, Any]) -> str:
    """A Choice rule as a short expression: `$.a == 'x'`, `$.n > $.m`, `IsPresent($.x)`,
    `not (...)`, `(...) and (...)`; a JSONata Condition is shown as written."""
    if "Condition" in rule:
        return str(rule["Condition"])
    for op, joiner in (("And", " and "), ("Or", " or ")):
        if op in rule:
            parts = [rule_text(r) for r in rule[op]]
            return joiner.join(p if len(rule[op]) == 1 or " " not in p else f"({p})" for p in parts)
    if "Not" in rule:
        inner = rule_text(rule["Not"])
        return f"not ({inner})" if " " in inner else f"not {inner}"
    var = rule.get("Variable", "?")
    for op, val in rule.items():
        if op in ("Variable", "Next", "Comment", "Assign", "Output"):
            continue
        if op.startswith("Is"):
            return f"{op}({var})" if val is True else f"not {op}({var})"
        if op == "StringMatches":
            return f"{var} matches {json.dumps(val)}"
        path = op.endswith("Path")
        base = op[:-4] if path else op
        for kind in ("String", "Numeric", "Boolean", "Timestamp"):
            if base.startswith(kind):
                sym = _OPS.get(base[len(kind):], base)
                shown = val if path else json.dumps(val)
                return f"{var} {sym} {shown}"
    return "?"


def _clip(text: str) -> str:
    return text if len(text) <= MAX_LABEL else text[:MAX_LABEL - 3] + "..."


def build(definition: dict[str, Any], compiler: Compiler) -> StateGraph:
    """The drawing of `definition`, compiled by `compiler` (whose `compile()` has run)."""
    nodes: dict[str, Node] = {}
    edges: list[Edge] = []
    ids: dict[tuple[str, str], str] = {}
    runs = _where(compiler)
    ends = {f.scope: f.name for f in compiler.fns.values() if f.end}

    def nid(scope: str, name: str) -> str:
        if (scope, name) not in ids:
            ids[(scope, name)] = f"n{len(ids)}"
        return ids[(scope, name)]

    def scope_items(scope: str, doc: dict[str, Any]) -> list[Any]:
        items: list[Any] = []
        for name, st in doc["States"].items():
            i = nid(scope, name)
            t = st["Type"]
            retry = ", ".join(e for r in st.get("Retry", []) for e in r.get("ErrorEquals", []))
            where = runs.get((scope, name), [])
            fns = [fn for fn, role in where if role == "in"] + [fn for fn, role in where if role != "in"]
            nodes[i] = Node(i, name, t, _runs_text(where), retry, list(dict.fromkeys(fns)))
            if t in ("Map", "Parallel"):
                box = Box(f"b_{i}", f"{'Distributed Map' if is_distributed(st) else t} {name}", [i])
                subs = _branches(st)
                for k, b in enumerate(subs):
                    sub = f"{scope}/{name}" if t == "Map" else f"{scope}/{name}#{k}"
                    label = ("ItemProcessor" if "ItemProcessor" in st else "Iterator") if t == "Map" \
                        else f"branch {k}"
                    if sub in ends:  # a synthesized function collects the branch's end
                        label += f" · ends in {ends[sub]}"
                    inner = Box(f"b_{i}_{k}", label, scope_items(sub, b))
                    box.items.append(inner)
                    each = "each item"
                    if t == "Map" and isinstance(st.get("ItemReader"), dict):  # items read from S3
                        each = f"each item of {str(st['ItemReader'].get('Resource', '')).rsplit(':', 1)[-1]}"
                    if t == "Map" and "ItemBatcher" in st:
                        each = each.replace("each item", "each batch")
                    edges.append(Edge(i, nid(sub, b["StartAt"]), each if t == "Map" else f"branch {k}",
                                      "branch"))
                items.append(box)
            else:
                items.append(i)
            if "Next" in st:
                edges.append(Edge(i, nid(scope, st["Next"])))
            for r in st.get("Choices", []):
                edges.append(Edge(i, nid(scope, r["Next"]), _clip(rule_text(r)), "choice"))
            if "Default" in st:
                edges.append(Edge(i, nid(scope, st["Default"]), "default", "default"))
            for c in st.get("Catch", []):
                edges.append(Edge(i, nid(scope, c["Next"]), _clip("catch " + ", ".join(c["ErrorEquals"])),
                                  "catch"))
            if scope == "" and (st.get("End") or t == "Succeed"):
                edges.append(Edge(i, "__end", "", "end"))
        return items

    items = scope_items("", definition)
    edges.insert(0, Edge("__start", nid("", definition["StartAt"]), "", "end"))
    functions = [(f.name, f.lambda_fn) for f in compiler.fns.values()]
    return StateGraph(items, nodes, edges, functions)


def _runs_text(roles: list[tuple[str, str]]) -> str:
    by_role: dict[str, list[str]] = {}
    for fn, role in roles:
        by_role.setdefault(role, [])
        if fn not in by_role[role]:
            by_role[role].append(fn)
    order = ["in", "fan-out in", "join in", "after timer in", "in-process in"]
    return " · ".join(f"{role} {', '.join(fns)}" for role in order if (fns := by_role.get(role)))


# ---------------------------------------------------------------------------- Mermaid
_MERMAID_SHAPES = {"Task": ('["', '"]'), "Pass": ('("', '")'), "Choice": ('{"', '"}'),
                   "Wait": ('[/"', '"/]'), "Succeed": ('(["', '"])'), "Fail": ('>"', '"]'),
                   "Map": ('[["', '"]]'), "Parallel": ('[["', '"]]')}
_MERMAID_ARROWS = {"next": "-->", "choice": "-->", "default": "-->", "catch": "-.->",
                   "branch": "==>", "end": "-->"}


def _mq(text: str) -> str:
    """Text inside a quoted Mermaid label or a comment (unumctl.graph.mermaid_text: entity
    codes for quotes, line breaks, brackets, `#`, `;`, backticks, HTML characters...)."""
    return mermaid_text(text)


def _node_text(n: Node) -> list[str]:
    parts = [n.name, n.type + (f" · {n.runs}" if n.runs else "")]
    if n.retry:
        parts.append(f"retry {n.retry}")
    return parts


def to_mermaid(g: StateGraph) -> str:
    """`flowchart TD` text (see module docstring)."""
    lines = ["flowchart TD"]
    for name, code in g.functions:
        lines.append(f"    %% function {_mq(name)}: {'code of ' + _mq(code) if code else 'synthesized'}")
    lines += ["    __start((start))", "    __end((end))"]

    def emit(items: list[Any], indent: str) -> None:
        for it in items:
            if isinstance(it, Box):
                lines.append(f'{indent}subgraph {it.id} ["{_mq(it.label)}"]')
                emit(it.items, indent + "    ")
                lines.append(f"{indent}end")
            else:
                n = g.nodes[it]
                left, right = _MERMAID_SHAPES[n.type]
                text = "<br/>".join(_mq(p) for p in _node_text(n))
                lines.append(f"{indent}{n.id}{left}{text}{right}")

    emit(g.items, "    ")
    for e in g.edges:
        arrow = _MERMAID_ARROWS[e.kind]
        label = f'|"{_mq(e.label)}"|' if e.label else ""
        lines.append(f"    {e.src} {arrow}{label} {e.dst}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- DOT
_DOT_SHAPES = {"Task": "shape=box", "Pass": "shape=box, style=rounded", "Choice": "shape=diamond",
               "Wait": "shape=parallelogram", "Succeed": "shape=box, peripheries=2",
               "Fail": "shape=octagon", "Map": "shape=box3d", "Parallel": "shape=box3d"}
_DOT_STYLES = {"next": "solid", "choice": "solid", "default": "solid", "catch": "dashed",
               "branch": "bold", "end": "solid"}


def _dq(text: str) -> str:
    """Text inside a DOT quoted label or a comment (unumctl.graph.dot_text: backslashes,
    quotes and line breaks escaped)."""
    return dot_text(text)


def to_dot(g: StateGraph) -> str:
    """`digraph` text; Map/Parallel states and their branches are `cluster_` subgraphs."""
    lines = ["digraph statemachine {", "    rankdir=TB;"]
    for name, code in g.functions:
        lines.append(f"    // function {_dq(name)}: {'code of ' + _dq(code) if code else 'synthesized'}")
    lines += ['    "__start" [shape=circle, label="start"];',
              '    "__end" [shape=doublecircle, label="end"];']

    def emit(items: list[Any], indent: str) -> None:
        for it in items:
            if isinstance(it, Box):
                lines.append(f'{indent}subgraph "cluster_{it.id}" {{')
                lines.append(f'{indent}    label="{_dq(it.label)}"; style=rounded;')
                emit(it.items, indent + "    ")
                lines.append(f"{indent}}}")
            else:
                n = g.nodes[it]
                text = "\\n".join(_dq(p) for p in _node_text(n))
                lines.append(f'{indent}"{n.id}" [{_DOT_SHAPES[n.type]}, label="{text}"];')

    emit(g.items, "    ")
    for e in g.edges:
        label = f', label="{_dq(e.label)}"' if e.label else ""
        lines.append(f'    "{e.src}" -> "{e.dst}" [style={_DOT_STYLES[e.kind]}{label}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def state_graph(root, manifest) -> StateGraph:
    """Load, validate and compile the app's state machine (`manifest.workflow.stepfunctions`,
    relative to `root`) and build its drawing. `manifest.functions` must be the manifest as
    written (unumctl.manifest.load_manifest), not a loaded App's compiled functions. Raises IRError
    (AslValidationError) naming the file, state and field."""
    from . import load_definition, resolver
    path = root / manifest.workflow.stepfunctions
    definition = load_definition(path)
    functions = dict(manifest.functions)
    from .validate import validate
    validate(definition, str(path))
    c = Compiler(definition, resolver(functions), sorted(functions), str(path), "", manifest.app)
    c.compile()
    return build(definition, c)
