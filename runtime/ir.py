"""The Unum IR: one node per function with its outgoing edges.

Source: seed 000 Appendix A.2 (fields Name, Next, Type, Values, Conditional, Payload
Modifiers, Start, Checkpoint) and seed 001 §3.2. Extensions (documented in docs/ir.md):
`Version`, `Retry`, `Iterate` on edges (cycles), `Type: Shuffle` edges (runtime/triggers/shuffle.py),
`Wrapper` (front-end supplied ingress/egress program, e.g. compiled ASL).

Loading is from plain dicts (parsed YAML/JSON); errors are IRError with
"<file>: <field>: <reason>" messages. The runtime uses only this module's dataclasses.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from .constants import INDEX_SEP
from .errors import IRError
from .expr import Assignment, Expr
from .fusion import Fusion
from .triggers import quorum as _quorum
from .triggers.window_ir import WINDOW_KEYS, WindowSpec, check_workflow, parse_edge

__all__ = ["EDGE_TYPES", "Edge", "FunctionIR", "INDEX_SEP", "Modifier", "ValueTemplate", "Workflow",
           "build_workflow", "load_function"]

IR_VERSION = 1
EDGE_TYPES = ("Scalar", "Map", "Fan-in", "Shuffle", "Window")
_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_NODE_KEYS = {"Version", "Name", "Next", "Start", "Checkpoint", "Retry", "Wrapper",
              "Fused"}  # Fused: runtime/fusion.py (issue 25)
_EDGE_KEYS = {"Name", "Type", "Values", "Conditional", "Payload Modifiers", "Iterate", "Delay",
              "EmptyJoin", "Exits", "Quorum", *WINDOW_KEYS}


@dataclass(frozen=True)
class IndexPart:
    """One component of a `Values` invocation name: '*', a literal int or an expression."""

    glob: bool = False
    literal: int | None = None
    expr: Expr | None = None


@dataclass(frozen=True)
class ValueTemplate:
    """A `Values` entry such as `Mapper-UnumIndex-*` or `Encode-UnumIndex-($0+1)`."""

    source: str
    function: str
    parts: tuple[IndexPart, ...]

    @classmethod
    def parse(cls, text: str) -> "ValueTemplate":
        """Split `Fn-UnumIndex-a.b.c`; raises IRError for a bad component."""
        if not isinstance(text, str) or not text:
            raise IRError(f"Values entry {text!r} is not a non-empty string")
        fn, sep, rest = text.partition(INDEX_SEP)
        parts: list[IndexPart] = []
        if sep:
            for comp in _split_top_level(rest):
                comp = comp.strip()
                if comp == "*":
                    parts.append(IndexPart(glob=True))
                elif re.fullmatch(r"\d+", comp):
                    parts.append(IndexPart(literal=int(comp)))
                elif comp:
                    parts.append(IndexPart(expr=Expr.compile(comp)))
                else:
                    raise IRError(f"Values entry {text!r} has an empty index component")
            if any(p.glob for p in parts[:-1]):
                raise IRError(f"Values entry {text!r}: only the last index may be '*'")
        return cls(text, fn, tuple(parts))


def _split_top_level(s: str) -> list[str]:
    """Split on '.' outside parentheses (so `($0+1).2` gives ['($0+1)', '2'])."""
    cur: list[str]
    out, depth, cur = [], 0, []
    for ch in s:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "." and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


@dataclass(frozen=True)
class Modifier:
    """`Pop` or an assignment `$0=...`, `$size=...`, `$out=...` (Appendix A.2.6)."""

    source: str
    pop: bool = False
    assign: Assignment | None = None

    @classmethod
    def parse(cls, text: Any) -> "Modifier":
        """Raises IRError for anything that is neither Pop nor `$x=expr`."""
        if not isinstance(text, str):
            raise IRError(f"payload modifier {text!r} is not a string")
        if text.strip() == "Pop":
            return cls(text, pop=True)
        assign = Assignment.parse(text)
        if assign is None:
            raise IRError(f"payload modifier {text!r} is neither 'Pop' nor '$x=<expr>'")
        return cls(text, assign=assign)


@dataclass(frozen=True)
class Edge:
    """An outgoing edge (Appendix A.2.4)."""

    target: str
    type: str = "Scalar"
    values: tuple[ValueTemplate, ...] = ()
    conditional: Expr | None = None
    modifiers: tuple[Modifier, ...] = ()
    iterate: bool | None = None  # None = decided by cycle detection in build_workflow
    delay: Expr | None = None    # Scalar edges: seconds to defer the invocation (a timer)
    # Map edges: (join function, the branches' Fan-in modifiers) invoked with [] when the
    # list is empty; filled in by build_workflow from the Map target's Fan-in edge
    empty_join: tuple[str, tuple[Modifier, ...]] | None = None
    # Fan-in edges: the functions of `Values` that lie on a cycle, whose branches may loop
    # and so hand over through `exit/` items; filled in by build_workflow
    exits: tuple[str, ...] = ()
    # Fan-in edges: fire with the first k committed inputs (runtime/triggers/quorum.py)
    quorum: int | None = None
    # Window edges: the window the output goes into (runtime/triggers/window.py)
    window: WindowSpec | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"Name": self.target, "Type": self.type}
        if self.values:
            d["Values"] = [v.source for v in self.values]
        if self.conditional is not None:
            d["Conditional"] = self.conditional.source
        if self.modifiers:
            d["Payload Modifiers"] = [m.source for m in self.modifiers]
        if self.iterate is not None:
            d["Iterate"] = self.iterate
        if self.delay is not None:
            d["Delay"] = self.delay.source
        if self.empty_join is not None:
            d["EmptyJoin"] = {"Name": self.empty_join[0],
                              "Payload Modifiers": [m.source for m in self.empty_join[1]]}
        if self.exits:
            d["Exits"] = list(self.exits)
        if self.quorum is not None:
            d["Quorum"] = self.quorum
        if self.window is not None:
            d.update(self.window.to_dict())
        return d


@dataclass(frozen=True)
class RetryPolicy:
    """In-function retry of user exceptions: `max_attempts` extra attempts after the first,
    sleeping `interval * backoff**n` seconds; `error_equals` = exception class names
    (empty = all)."""

    max_attempts: int = 0
    interval: float = 0.0
    backoff: float = 2.0
    error_equals: tuple[str, ...] = ()

    def matches(self, error_type: str) -> bool:
        return not self.error_equals or error_type in self.error_equals or "States.ALL" in self.error_equals


def _load_retry(r: dict[str, Any], source: str) -> RetryPolicy:
    """A RetryPolicy from an IR `Retry` mapping; IRError naming the field and the fix."""
    def number(key: str, default: float, low: float, kind: type) -> Any:
        v = r.get(key, default)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or (kind is int and v != int(v)):
            raise IRError(f"{source}: Retry.{key}: {v!r} must be {'an integer' if kind is int else 'a number'} "
                          f">= {low:g}")
        if v < low or (isinstance(v, float) and not math.isfinite(v)):
            raise IRError(f"{source}: Retry.{key}: {v!r} must be >= {low:g} (and finite)")
        return kind(v)

    unknown = sorted(set(r) - {"MaxAttempts", "IntervalSeconds", "BackoffRate", "ErrorEquals"})
    if unknown:
        raise IRError(f"{source}: Retry.{unknown[0]}: unknown field (MaxAttempts, IntervalSeconds, "
                      "BackoffRate, ErrorEquals)")
    errors = r.get("ErrorEquals", ())
    if errors is None:
        errors = ()
    if isinstance(errors, str) or not isinstance(errors, (list, tuple)) \
            or not all(isinstance(e, str) and e for e in errors):
        raise IRError(f"{source}: Retry.ErrorEquals: {_short(repr(errors))} must be a list of error "
                      f"names, e.g. [{errors if isinstance(errors, str) else 'ValueError'}]")
    return RetryPolicy(number("MaxAttempts", 0, 0, int), number("IntervalSeconds", 0.0, 0, float),
                       number("BackoffRate", 2.0, 1, float), tuple(errors))


def _short(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters (with its length) for one-line error messages."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


@dataclass(frozen=True)
class FunctionIR:
    """One function's IR node. `next` is ordered as written; `next_is_list` records whether
    `Next` was a list (only then do several Scalar edges form a fan-out)."""

    name: str
    next: tuple[Edge, ...] = ()
    start: bool = False
    checkpoint: bool = True
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    wrapper: dict[str, Any] | None = None
    version: int = IR_VERSION
    # issue 25 fusion/batching: the `Fused` mapping (runtime.fusion.Fusion), None = not fused
    fused: dict[str, Any] | None = None

    @property
    def scalar_fanout(self) -> bool:
        """True when the Scalar edges of `Next` are branches of a fan-out."""
        return sum(1 for e in self.next if e.type == "Scalar") > 1

    @property
    def has_fanin(self) -> bool:
        return any(e.type == "Fan-in" for e in self.next)

    def to_dict(self) -> dict[str, Any]:
        """The canonical JSON form bundled with the function (round-trips through load)."""
        d: dict[str, Any] = {"Version": self.version, "Name": self.name,
                             "Next": [e.to_dict() for e in self.next],
                             "Start": self.start, "Checkpoint": self.checkpoint}
        if self.retry != RetryPolicy():
            d["Retry"] = {"MaxAttempts": self.retry.max_attempts,
                          "IntervalSeconds": self.retry.interval,
                          "BackoffRate": self.retry.backoff,
                          "ErrorEquals": list(self.retry.error_equals)}
        if self.wrapper is not None:
            d["Wrapper"] = self.wrapper
        if self.fused is not None:
            d["Fused"] = self.fused
        return d


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise IRError(f"{where}: expected true or false, got {value!r}")


def load_function(doc: Any, source: str = "<ir>") -> FunctionIR:
    """Build a FunctionIR from a parsed YAML/JSON mapping.

    Raises IRError("<source>: <field>: <reason>") for unknown keys, bad types, unknown edge
    types, unparsable expressions, or a version newer than this runtime understands.
    """
    if not isinstance(doc, dict):
        raise IRError(f"{source}: expected a mapping with Name and Next, got {type(doc).__name__}")
    unknown = set(doc) - _NODE_KEYS
    if unknown:
        raise IRError(f"{source}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_NODE_KEYS)}")
    version = doc.get("Version", IR_VERSION)
    if not isinstance(version, int) or version < 1 or version > IR_VERSION:
        raise IRError(f"{source}: Version: {version!r} is not supported (this runtime reads 1..{IR_VERSION})")
    name = doc.get("Name")
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise IRError(f"{source}: Name: {name!r} must start with a letter and use letters, digits, '_'")
    raw_next = doc.get("Next")
    if raw_next is None:
        raw_edges: list[Any] = []
    elif isinstance(raw_next, dict):
        raw_edges = [raw_next]
    elif isinstance(raw_next, list):
        raw_edges = raw_next
    else:
        raise IRError(f"{source}: Next: expected an edge mapping or a list of edges")
    edges = []
    for i, raw in enumerate(raw_edges):
        where = f"{source}: Next[{i}]"
        try:
            edges.append(_load_edge(raw, where, name))
        except IRError as exc:
            msg = str(exc)
            raise IRError(msg if msg.startswith(where) else f"{where}: {msg}") from None
    retry = RetryPolicy()
    if "Retry" in doc:
        r = doc["Retry"]
        if not isinstance(r, dict):
            raise IRError(f"{source}: Retry: expected a mapping")
        retry = _load_retry(r, source)
    wrapper = doc.get("Wrapper")
    if wrapper is not None and not (isinstance(wrapper, dict) and isinstance(wrapper.get("Kind"), str)):
        raise IRError(f"{source}: Wrapper: expected a mapping with a Kind")
    fused = doc.get("Fused")
    if fused is not None:  # issue 25: validated here, run by runtime.fusion
        fused = Fusion.from_dict(fused, source).to_dict()
    return FunctionIR(name=name, next=tuple(edges), start=_bool(doc.get("Start", False), f"{source}: Start"),
                      checkpoint=_bool(doc.get("Checkpoint", True), f"{source}: Checkpoint"),
                      retry=retry, wrapper=wrapper, version=version, fused=fused)


def check_shuffle_edge(raw: dict[str, Any], where: str) -> None:
    """Load-time checks of a `Type: Shuffle` edge mapping (runtime/triggers/shuffle.py runs the
    edge; docs/ir.md "Shuffle edges"); IRError naming the field and the fix."""
    for bad, why in (("Conditional", "every producer must take it, or the stage never completes"),
                     ("Payload Modifiers", "the consumers' frame is made from the keys"),
                     ("Delay", "only Scalar edges can be delayed"),
                     ("Iterate", "a shuffle stage cannot be the back edge of a cycle")):
        if bad in raw:
            raise IRError(f"{where}: {bad}: a Shuffle edge takes no {bad} ({why}); remove it")


def _load_edge(raw: Any, where: str, function: str | None = None) -> Edge:
    if not isinstance(raw, dict):
        raise IRError(f"{where}: expected a mapping with Name and Type")
    unknown = set(raw) - _EDGE_KEYS
    if unknown:
        raise IRError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {sorted(_EDGE_KEYS)}")
    target = raw.get("Name")
    if not isinstance(target, str) or not _NAME_RE.fullmatch(target):
        raise IRError(f"{where}: Name: {target!r} is not a function name")
    etype = raw.get("Type", "Scalar")
    if etype not in EDGE_TYPES:
        raise IRError(f"{where}: Type: {etype!r} must be one of {', '.join(EDGE_TYPES)}")
    values: tuple[ValueTemplate, ...] = ()
    if etype == "Fan-in":
        raw_values = raw.get("Values")
        if not isinstance(raw_values, list) or not raw_values:
            raise IRError(f"{where}: Values: a Fan-in edge needs a non-empty list of invocation names")
        try:
            values = tuple(ValueTemplate.parse(v) for v in raw_values)
        except IRError as exc:
            raise IRError(f"{where}: Values: {exc}") from None
    elif "Values" in raw:
        raise IRError(f"{where}: Values: only Fan-in edges take Values")
    if etype == "Shuffle":  # shuffle groups (runtime/triggers/shuffle.py, docs/ir.md "Shuffle edges")
        check_shuffle_edge(raw, where)
    window = None
    if etype == "Window":
        window = parse_edge(raw, where, target)
    elif any(k in raw for k in WINDOW_KEYS):
        key = next(k for k in WINDOW_KEYS if k in raw)
        raise IRError(f"{where}: {key}: only edges of Type: Window take it")
    cond = None
    if "Conditional" in raw:
        try:
            cond = Expr.compile(raw["Conditional"])
        except IRError as exc:
            raise IRError(f"{where}: Conditional: {exc}") from None
    mods_raw = raw.get("Payload Modifiers", []) or []
    if not isinstance(mods_raw, list):
        raise IRError(f"{where}: Payload Modifiers: expected a list")
    try:
        mods = tuple(Modifier.parse(m) for m in mods_raw)
    except IRError as exc:
        raise IRError(f"{where}: Payload Modifiers: {exc}") from None
    if etype == "Window" and any(m.assign is None or m.assign.target != "out" for m in mods):
        raise IRError(f"{where}: Payload Modifiers: a Window edge takes only '$out=<expr>' "
                      "(the window's objects have no fan-out frames)")
    if etype == "Fan-in" and any(m.assign and m.assign.target == "out" for m in mods):
        raise IRError(f"{where}: Payload Modifiers: '$out=' cannot be used on a Fan-in edge "
                      "(fan-in inputs are passed by reference to checkpoints)")
    iterate = _bool(raw["Iterate"], f"{where}: Iterate") if "Iterate" in raw else None
    delay = None
    if "Delay" in raw:
        if etype != "Scalar":
            raise IRError(f"{where}: Delay: only Scalar edges can be delayed")
        try:
            delay = Expr.compile(raw["Delay"])
        except IRError as exc:
            raise IRError(f"{where}: Delay: {exc}") from None
    empty_join = None
    if "EmptyJoin" in raw:
        ej = raw["EmptyJoin"]
        if etype not in ("Map", "Shuffle") or not isinstance(ej, dict) or not _NAME_RE.fullmatch(str(ej.get("Name", ""))):
            raise IRError(f"{where}: EmptyJoin: only Map edges take it, as "
                          "{Name: <join function>, Payload Modifiers: [...]}")
        try:
            ej_mods = tuple(Modifier.parse(m) for m in ej.get("Payload Modifiers", []) or [])
        except IRError as exc:
            raise IRError(f"{where}: EmptyJoin: {exc}") from None
        empty_join = (ej["Name"], ej_mods)
    exits = raw.get("Exits", [])
    if exits and (etype != "Fan-in" or not isinstance(exits, list)
                  or not all(isinstance(x, str) and _NAME_RE.fullmatch(x) for x in exits)):
        raise IRError(f"{where}: Exits: only Fan-in edges take it, as a list of function names")
    quorum = _quorum.parse(raw, etype, len(values), any(p.glob for v in values for p in v.parts),
                           where, function)
    return Edge(target, etype, values, cond, mods, iterate, delay, empty_join, tuple(exits), quorum, window)


@dataclass
class Workflow:
    """All IR nodes of an app, validated together (targets exist, one Start, cycles marked)."""

    functions: dict[str, FunctionIR]
    sources: dict[str, str] = field(default_factory=dict)

    @property
    def entry(self) -> FunctionIR:
        return next(f for f in self.functions.values() if f.start)


def build_workflow(nodes: Iterable[tuple[FunctionIR, str]]) -> Workflow:
    """Validate a set of nodes as one workflow and mark back edges (cycles) `Iterate`.

    Raises IRError naming the file and field for: duplicate names, not exactly one Start,
    an edge to an unknown function, Values naming no function.
    """
    funcs: dict[str, FunctionIR] = {}
    sources: dict[str, str] = {}
    for node, src in nodes:
        if node.name in funcs:
            raise IRError(f"{src}: Name: {node.name!r} is already defined in {sources[node.name]}")
        funcs[node.name] = node
        sources[node.name] = src
    if not funcs:
        raise IRError("workflow has no functions")
    starts = [n for n in funcs.values() if n.start]
    if len(starts) != 1:
        names = ", ".join(n.name for n in starts) or "none"
        raise IRError(f"workflow: Start: exactly one function must have Start: true (found: {names})")
    for node in funcs.values():
        for i, e in enumerate(node.next):
            where = f"{sources[node.name]}: Next[{i}]"
            if e.target not in funcs:
                raise IRError(f"{where}: Name: unknown target function {e.target!r} "
                              f"(known: {', '.join(sorted(funcs))})")
            for v in e.values:
                if v.function not in funcs:
                    raise IRError(f"{where}: Values: {v.source!r} names no function of this app")
    # windows across sessions (runtime/triggers/window.py): one declaration per window
    check_workflow([(f"{sources[n.name]}: Next[{i}]", e.window) for n in funcs.values()
                    for i, e in enumerate(n.next) if e.window is not None])
    # Mark back edges found by DFS from the entry as iterating edges (seed 001 §3.6), unless
    # the edge says Iterate explicitly, is a Fan-in (its target name must agree across all
    # contributors) or assigns an index (the target is then a different invocation anyway).
    back: set[tuple[str, int]] = set()
    state: dict[str, int] = {}

    def dfs(name: str) -> None:
        state[name] = 1
        for i, e in enumerate(funcs[name].next):
            s = state.get(e.target, 0)
            if s == 1:
                back.add((name, i))
            elif s == 0:
                dfs(e.target)
        state[name] = 2

    dfs(starts[0].name)
    for name, i in back:
        node = funcs[name]
        e = node.next[i]
        if e.iterate is not None or e.type == "Fan-in" or any(
                m.assign is not None and m.assign.target not in ("out",) for m in e.modifiers):
            continue
        edges = list(node.next)
        edges[i] = replace(edges[i], iterate=True)
        funcs[name] = replace(node, next=tuple(edges))
    # A back edge among several Scalar edges pushes a fan-out frame on every pass: without
    # Pop the frames (and the payload) would grow by one level per iteration. (An edge that
    # sets an index enters a fan-out branch, whose frame its fan-in pops.)
    for name, i in sorted(back):
        node, e = funcs[name], funcs[name].next[i]
        if e.type == "Scalar" and node.scalar_fanout and e.iterate is True \
                and not any(m.pop or (m.assign is not None and m.assign.target not in ("out", "size"))
                            for m in e.modifiers):
            raise IRError(f"{sources[name]}: Next[{i}]: the edge back to {e.target} is one of several "
                          "Scalar edges, so it pushes a fan-out frame on every pass; add "
                          "'Payload Modifiers: [Pop]' to it (see examples/loop-counter)")
    # A branch that may loop (its function lies on or after a cycle) is named by its last iteration
    # when it leaves for a fan-in; it hands its value over through an `exit/` item named by
    # the iteration its frame was entered at, which every branch and the target agree on.
    succ = {n: {e.target for e in f.next} for n, f in funcs.items()}

    def on_cycle(fn: str) -> bool:
        seen, todo = set(), list(succ[fn])
        while todo:
            cur = todo.pop()
            if cur == fn:
                return True
            if cur not in seen:
                seen.add(cur)
                todo.extend(succ[cur])
        return False
    cyclic = {n for n in funcs if on_cycle(n)}
    # ... and so is every function after a cycle: it inherits the loop's iteration counter
    todo = [t for n in cyclic for t in succ[n]]
    while todo:
        cur = todo.pop()
        if cur not in cyclic:
            cyclic.add(cur)
            todo.extend(succ[cur])
    for name, node in list(funcs.items()):
        edges = [replace(e, exits=tuple(sorted({v.function for v in e.values} & cyclic)))
                 if e.type == "Fan-in" and not e.exits else e for e in node.next]
        funcs[name] = replace(node, next=tuple(edges))
    _quorum.check_workflow((n, i, sources[n], e) for n, f in funcs.items() for i, e in enumerate(f.next))
    # A Map over [] runs its join at once with no inputs: record the join of every Map edge
    # (the Fan-in over all the branches of the frame it makes, however deeply nested).
    for name, node in list(funcs.items()):
        edges = list(node.next)
        for i, e in enumerate(edges):
            if e.type not in ("Map", "Shuffle") or e.empty_join is not None:
                continue
            join = map_join(funcs, e.target)
            if join is not None:
                edges[i] = replace(e, empty_join=join)
        funcs[name] = replace(node, next=tuple(edges))
    return Workflow(funcs, sources)


def map_join(funcs: dict[str, FunctionIR], target: str) -> tuple[str, tuple[Modifier, ...]] | None:
    """The join of a Map edge into `target`: (join function, its Fan-in edge's modifiers),
    or None when there is not exactly one.

    The join is the Fan-in edge over all the branches of the Map's frame: an edge of a
    function `f` that runs in that frame itself (not in a frame nested in it) whose `Values`
    include `f-UnumIndex-...*` (the glob is the frame's own size). It is searched along
    every path from `target`: a Map edge, and a Scalar edge of a function whose Scalar edges
    fan out, enter a nested frame; each `Pop` leaves one; a path that leaves the Map's frame
    otherwise has no join. So `Outer -Map-> Inner -Map-> Leaf -Fan-in-> Row -Fan-in-> All`
    gives Outer's Map edge the join All (Row's Fan-in over `Row-UnumIndex-*`) and Inner's
    the join Row: a Map over `[]` at either level runs the join the non-empty Map would
    reach, with `[]` (docs/ir.md, `EmptyJoin`)."""
    joins: dict[tuple[str, tuple[str, ...]], tuple[str, tuple[Modifier, ...]]] = {}
    seen: set[tuple[str, int]] = set()
    todo = [(target, 0)]
    while todo:
        fn, depth = todo.pop()
        if (fn, depth) in seen or depth > len(funcs):  # depth bound: a cycle through a Map edge
            continue
        seen.add((fn, depth))
        node = funcs[fn]
        for e in node.next:
            if e.type == "Fan-in" and depth == 0 and any(
                    v.function == fn and v.parts and v.parts[-1].glob for v in e.values):
                joins[(e.target, tuple(m.source for m in e.modifiers))] = (e.target, e.modifiers)
                continue
            # a Shuffle edge leaves the producers' frame and enters the keys' frame (push 0)
            push = 1 if e.type == "Map" or (e.type == "Scalar" and node.scalar_fanout) else 0
            after = depth + push - sum(1 for m in e.modifiers if m.pop)
            if after >= 0:
                todo.append((e.target, after))
    return next(iter(joins.values())) if len(joins) == 1 else None
