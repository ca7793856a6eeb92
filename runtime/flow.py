"""Workflows as Python code: `@step` and `@workflow`, compiled to the IR once, at compile time.

A `@step` function is one Unum function (its handler: `handler(event, context)` of docs/ir.md
"User functions"); a `@workflow` function composes steps. `unumctl` (unumctl/python.py)
imports the workflow's module and calls `trace(wf)`, which runs the workflow body once over
symbolic values (`Value`): each step call records an IR function, each use of a value an
edge (Scalar, Map, Fan-in, conditional, back edge). The recorded graph is plain IR mappings
(docs/ir.md "IR file"); nothing of the workflow body runs when the functions run, so there is
no replay and no determinism rule (docs/python.md).

At run time (in a function's bundle) this module only wraps functions: a `Step` called with
plain values calls the function (the runtime calls it as the handler; a unit test calls it
directly). It imports only the standard library, so the bundle carries no CLI or cloud code.

Errors: `FlowError`, one line `FILE:LINE: what is wrong; what to use instead`, naming the
user's line (a Python `if`/`for` over a symbolic value, a value as a dict key, a step called
at import time, I/O in the workflow body, ...).
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import itertools
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Sequence

__all__ = ["Expr", "FlowError", "Retry", "Step", "Value", "Workflow", "accumulate", "importing", "last", "length",
           "loop", "pairwise", "parallel", "quorum", "step", "trace", "when", "workflow"]

_HERE = os.path.normcase(os.path.abspath(__file__))
_TRACE: contextvars.ContextVar["_Trace | None"] = contextvars.ContextVar("unum_flow_trace", default=None)
_IMPORTING: contextvars.ContextVar[bool] = contextvars.ContextVar("unum_flow_importing", default=False)


class FlowError(Exception):
    """A construct that cannot compile to a static graph; one line `FILE:LINE: ...; use ...`."""


def _site(depth: int = 1) -> str:
    """`FILE:LINE` of the innermost frame outside this module (the user's line)."""
    f = sys._getframe(depth)
    while f is not None and os.path.normcase(os.path.abspath(f.f_code.co_filename)) == _HERE:
        f = f.f_back  # type: ignore[assignment]
    return f"{f.f_code.co_filename}:{f.f_lineno}" if f is not None else "<unknown>"


def _fail(msg: str) -> FlowError:
    err = FlowError(f"{_site(2)}: {msg}")
    tr = _TRACE.get()
    if tr is not None and tr.error is None:
        tr.error = err  # kept even if the user's code catches it
    return err


@dataclass(frozen=True)
class Retry:
    """In-function retry of user exceptions (docs/ir.md `Retry`): `max_attempts` extra
    attempts after the first, `interval` seconds before the first retry, multiplied by
    `backoff` each time; `errors`: exception class names (or classes), empty = all."""

    max_attempts: int = 2
    interval: float = 0.1
    backoff: float = 2.0
    errors: tuple[Any, ...] = ()

    def to_ir(self) -> dict[str, Any]:
        out: dict[str, Any] = {"MaxAttempts": self.max_attempts, "IntervalSeconds": self.interval,
                               "BackoffRate": self.backoff}
        if self.errors:
            out["ErrorEquals"] = [e if isinstance(e, str) else e.__name__ for e in self.errors]
        return out


def _camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in name.split("_") if p) or "Step"


class Step:
    """One Unum function made from `fn` by `@step`: `name` is its IR Name (default: the
    function's name in CamelCase, `find_url` -> `FindUrl`); `options` the manifest fields
    (`memory` MB, `timeout` s, `requirements`), `retry` (Retry or None), `checkpoint`.

    Called inside a workflow being traced it records an invocation and returns a `Value`;
    called otherwise with plain values it calls `fn` (`fn(event)` or `fn(event, context)`,
    by `fn`'s arity), which is what the runtime does with the handler."""

    def __init__(self, fn: Callable[..., Any], name: str | None, memory: int, timeout: int,
                 retry: Retry | None, requirements: Sequence[str], checkpoint: bool) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn
        self.name = name or _camel(fn.__name__)
        self.memory, self.timeout = memory, timeout
        self.retry, self.requirements, self.checkpoint = retry, list(requirements), checkpoint
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        self._takes_context = len(params) >= 2
        self.site = f"{fn.__code__.co_filename}:{fn.__code__.co_firstlineno}"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        tr = _TRACE.get()
        if tr is not None:
            if kwargs or len(args) != 1:
                raise _fail(f"step {self.name} takes one input (its event); pass one step output "
                            "(the outputs of parallel() as one tuple)")
            return tr.call(self, args[0])
        if _IMPORTING.get():
            raise _fail(f"step {self.name} is called outside the workflow function (while its module "
                        "is imported); call steps only inside the @workflow function's body")
        if any(isinstance(a, (Value, Expr)) for a in args):
            raise _fail(f"step {self.name} is called on a workflow value outside the workflow being "
                        "compiled; call steps only inside the @workflow function's body")
        if len(args) == 2 and not kwargs and not self._takes_context:
            args = args[:1]  # the runtime's handler(event, context) of a one-argument step
        return self.fn(*args, **kwargs)

    def map(self, items: "Value") -> "Value":
        """`items.map(self)`: this step once per element of `items` (a Map edge)."""
        if not isinstance(items, Value):
            raise _fail(f"{self.name}.map() takes a step's output; got {type(items).__name__}")
        return items.map(self)

    def __repr__(self) -> str:
        return f"<step {self.name}>"


def step(fn: Callable[..., Any] | None = None, *, name: str | None = None, memory: int = 128,
         timeout: int = 60, retry: Retry | dict[str, Any] | None = None,
         requirements: Sequence[str] = (), checkpoint: bool = True) -> Any:
    """Decorator: `fn(event)` or `fn(event, context)` becomes one Unum function (a Step).
    `memory` MB (128..10240), `timeout` s (1..900), `retry` a Retry (or its fields as a dict),
    `requirements` pip requirement specifiers, `checkpoint` False = at-least-once. The
    values are checked by the manifest's model when the app is loaded (unumctl/manifest.py)."""
    if isinstance(retry, dict):
        retry = Retry(**retry)

    def wrap(f: Callable[..., Any]) -> Step:
        return Step(f, name, memory, timeout, retry, requirements, checkpoint)
    return wrap(fn) if fn is not None else wrap


class Workflow:
    """A `@workflow` function: `fn(input)` composing steps; compiled by `trace`, never run
    at run time. Calling it directly raises FlowError (unit tests run it in-process through
    unumctl.python `run`)."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        functools.update_wrapper(self, fn)
        self.fn = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise _fail(f"workflow {self.fn.__name__} is compiled, not called; run it with "
                    "`unumctl invoke` or unumctl.python.run(app_dir, input) in a test")


def workflow(fn: Callable[[Any], Any]) -> Workflow:
    """Decorator: `fn(input)` is a workflow composing steps (`trace` compiles it)."""
    return Workflow(fn)


# -- symbolic values ---------------------------------------------------------------------

def _lit(v: Any) -> str:
    if isinstance(v, Expr):
        return v.text
    if v is None or isinstance(v, (bool, int, float, str)):
        return repr(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_lit(x) for x in v) + "]"
    raise _fail(f"{type(v).__name__} {v!r:.40} cannot appear in a condition; use None, bool, "
                "numbers, strings or lists of them")


_FLIP = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">"}


class Expr:
    """An expression over one step's output, compiled to the IR's safe expression language
    (runtime/expr.py; `$out` is the output): fields `v["k"]`, arithmetic, comparisons,
    `&` (and), `|` (or), `~` (not), `length(v)`. `base` is the Value it reads."""

    __slots__ = ("base", "text", "cmp")

    def __init__(self, base: "Value", text: str, cmp: tuple[str, str, str] | None = None) -> None:
        self.base, self.text, self.cmp = base, text, cmp

    def _bin(self, op: str, other: Any, swap: bool = False) -> "Expr":
        if isinstance(other, Expr) and other.base.node is not self.base.node:
            raise _fail("a condition reads one step's output; compare fields of the same value")
        a, b = _lit(self), _lit(other)
        if swap:
            a, b = b, a
        return Expr(self.base, f"({a} {op} {b})" if op not in _FLIP else f"{a} {op} {b}",
                    (a, op, b) if op in _FLIP else None)

    def __getitem__(self, key: Any) -> "Expr":
        return Expr(self.base, f"{self.text}[{_lit(key)}]")

    def negated(self) -> "Expr":
        """The negation: a comparison with its operator flipped, else `not (...)`."""
        if self.cmp:
            a, op, b = self.cmp
            return Expr(self.base, f"{a} {_FLIP[op]} {b}", (a, _FLIP[op], b))
        return Expr(self.base, f"not ({self.text})")

    def __eq__(self, o: Any) -> "Expr":  # type: ignore[override]
        return self._bin("==", o)

    def __ne__(self, o: Any) -> "Expr":  # type: ignore[override]
        return self._bin("!=", o)

    def __lt__(self, o: Any) -> "Expr":
        return self._bin("<", o)

    def __le__(self, o: Any) -> "Expr":
        return self._bin("<=", o)

    def __gt__(self, o: Any) -> "Expr":
        return self._bin(">", o)

    def __ge__(self, o: Any) -> "Expr":
        return self._bin(">=", o)

    def __add__(self, o: Any) -> "Expr":
        return self._bin("+", o)

    def __radd__(self, o: Any) -> "Expr":
        return self._bin("+", o, True)

    def __sub__(self, o: Any) -> "Expr":
        return self._bin("-", o)

    def __rsub__(self, o: Any) -> "Expr":
        return self._bin("-", o, True)

    def __mul__(self, o: Any) -> "Expr":
        return self._bin("*", o)

    def __rmul__(self, o: Any) -> "Expr":
        return self._bin("*", o, True)

    def __mod__(self, o: Any) -> "Expr":
        return self._bin("%", o)

    def __floordiv__(self, o: Any) -> "Expr":
        return self._bin("//", o)

    def __truediv__(self, o: Any) -> "Expr":
        return self._bin("/", o)

    def __and__(self, o: Any) -> "Expr":
        return self._bin("and", o)

    def __or__(self, o: Any) -> "Expr":
        return self._bin("or", o)

    def __invert__(self) -> "Expr":
        return self.negated()

    def __contains__(self, item: Any) -> bool:
        raise _fail(f"`in` on the output of step {self.base.step_name} is decided at run time; "
                    "use when() with a comparison")

    def __bool__(self) -> bool:
        raise _fail(f"`if`, `while`, `and`, `or` or `not` on the output of step {self.base.step_name} "
                    "is decided at run time; use when(cond, then, otherwise) or loop(...) (and `&`, "
                    "`|`, `~` inside conditions)")

    def __iter__(self) -> Iterator[Any]:
        raise _fail(f"a `for` loop or unpacking over the output of step {self.base.step_name} needs its "
                    "run-time value; use .map(step) to run a step once per element")

    def __hash__(self) -> int:
        raise _fail(f"the output of step {self.base.step_name} is used as a dict key or set member, "
                    "which needs its run-time value; pass it to a step and build the dict there")

    def __len__(self) -> int:
        raise _fail(f"len() of the output of step {self.base.step_name} is known at run time only; "
                    "use length(value) inside a condition")

    def __format__(self, spec: str) -> str:
        raise _fail(f"formatting the output of step {self.base.step_name} into a string needs its "
                    "run-time value; build strings inside a step")

    def __index__(self) -> int:
        raise _fail(f"the output of step {self.base.step_name} used as an index or number needs "
                    "its run-time value; do the arithmetic inside a step")

    __int__ = __float__ = __index__


def length(v: Any) -> Expr:
    """`len(...)` of a step's output (or of one of its fields) inside a condition."""
    e = v.expr() if isinstance(v, Value) else v
    if not isinstance(e, Expr):
        raise _fail("length() takes a step's output or a field of it")
    return Expr(e.base, f"len({e.text})")


# how a value reaches the step that takes it (the edge kind from `node`)
_OUT, _INPUT, _ITEM, _BRANCH, _COND, _GATHER, _JOIN, _EITHER, _PAIR, _ACC, _LAST = range(11)


@dataclass
class _Node:
    name: str
    step: Step
    frame: tuple[Any, ...]          # the fan-out frames it runs in, outermost first
    site: str
    start: bool = False
    fed_by: Any = None              # the Value its step call was given
    edges: list[dict[str, Any]] = field(default_factory=list)
    # per edge: "chain" (unconditional Scalar), "branch" (of a parallel), "cond", "back", other
    roles: list[str] = field(default_factory=list)

    def add(self, edge: dict[str, Any], role: str) -> None:
        self.edges.append(edge)
        self.roles.append(role)


class Value(Expr):
    """The symbolic output of a step (or the workflow's input) while a workflow is traced.

    Pass it to a step (an edge), `.map(fn)` over it (a Map), `v["field"]` and comparisons
    to build a condition (Expr), `quorum(v, k)` on a gathered Map. Python control flow over
    it (`if`, `for`, `len`, dict keys) raises FlowError at the user's line."""

    __slots__ = ("kind", "node", "frame", "info", "used")

    def __init__(self, kind: int, node: _Node | None, frame: tuple[Any, ...], info: Any = None) -> None:
        super().__init__(self, "$out")
        self.kind, self.node, self.frame, self.info, self.used = kind, node, frame, info, False

    @property
    def step_name(self) -> str:
        return self.node.name if self.node is not None else "(workflow input)"

    def expr(self) -> Expr:
        return Expr(self, "$out")

    def map(self, body: Callable[[Any], Any]) -> "Value":
        """`body` (a step, or a function composing steps) once per element of this list
        value: a Map edge, a new fan-out frame; returns the gathered list of the body's
        outputs, in element order (a Fan-in edge with `Pop` to the step that takes it)."""
        tr = _tracer()
        if self.kind in (_COND, _EITHER):
            raise _fail(".map() runs over one step's output, not over the result of when() or loop(); give "
                        "that result to a step first and map over the step's output")
        if self.kind != _OUT or self.node is None:
            raise _fail(".map() runs over one step's output; give the map to the step that made the list")
        ret = inspect.signature(self.node.step.fn).return_annotation
        shown = ret.split("[")[0].strip() if isinstance(ret, str) else getattr(getattr(ret, "__origin__", ret), "__name__", "")
        if shown in ("dict", "str", "int", "float", "bool"):
            raise _fail(f"step {self.node.name} is annotated to return {shown}, "
                        "but .map() needs a list; return a list or drop the map")
        frame = self.frame + (("map", next(tr.ids)),)
        out = body(Value(_ITEM, self.node, frame))
        if not (isinstance(out, Value) and out.kind == _OUT and out.frame == frame):
            raise _fail(".map()'s body must return the output of a step it called on the item")
        return Value(_GATHER, out.node, self.frame, {"quorum": None})


def _tracer() -> "_Trace":
    tr = _TRACE.get()
    if tr is None:
        raise _fail("workflow constructs are used outside a workflow being compiled; use them "
                    "only inside the @workflow function's body")
    return tr


def parallel(value: Value, *branches: Callable[[Value], Value]) -> tuple[Value, ...]:
    """Each of `branches` (a step, or a function composing steps) on `value`, concurrently:
    the Scalar edges of a parallel fan-out (docs/ir.md "Edge types"). Returns one value per
    branch; pass them together (a tuple or list, in this order) to one step: a Fan-in."""
    tr = _tracer()
    if isinstance(value, Value) and value.kind in (_COND, _EITHER):
        raise _fail("parallel() takes one step's output, not the result of when() or loop(); give that "
                    "result to a step first and run the branches on the step's output")
    if not isinstance(value, Value) or value.kind != _OUT or value.node is None:
        raise _fail("parallel() takes one step's output and at least two branches")
    if len(branches) < 2:
        raise _fail("parallel() needs at least two branches; call the step directly for one")
    pid = next(tr.ids)
    outs = []
    for i, br in enumerate(branches):
        frame = value.frame + (("par", pid, i, len(branches)),)
        out = br(Value(_BRANCH, value.node, frame, i))
        if not (isinstance(out, Value) and out.kind == _OUT and out.frame == frame):
            raise _fail(f"branch {i} of parallel() must return the output of a step it called")
        outs.append(out)
    return tuple(outs)


def quorum(gathered: Value, k: int) -> Value:
    """The first `k` outputs of a Map's branches to commit (a k-of-n Fan-in, docs/ir.md
    "Quorum"), in the order the quorum accepted them."""
    if not isinstance(gathered, Value) or gathered.kind != _GATHER:
        raise _fail("quorum() takes the result of .map(); e.g. quorum(requests.map(replica), 2)")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise _fail(f"quorum(): k must be an integer >= 1, got {k!r}")
    return Value(_GATHER, gathered.node, gathered.frame, {"quorum": k})


def when(cond: Expr, then: Callable[[Value], Value], otherwise: Callable[[Value], Value] | None = None) -> Value:
    """`then(v)` when `cond` holds on `v` (the step output `cond` reads), else `otherwise(v)`
    (or `v` itself): Scalar edges with `Conditional` (the safe expression language). The
    result is whichever branch ran; the step that takes it follows both branches."""
    _tracer()
    if not isinstance(cond, Expr) or isinstance(cond, Value):
        raise _fail("when() takes a condition on a step's output, e.g. when(v['n'] > 1, ...)")
    base = cond.base
    if base.kind != _OUT or base.node is None:
        raise _fail("a condition reads a step's output (not the workflow input or a map item); "
                    "give it a step first")
    tails = []
    for c, fn in ((cond, then), (cond.negated(), otherwise)):
        v = Value(_COND, base.node, base.frame, c.text)
        out = fn(v) if fn is not None else v
        if not (isinstance(out, Value) and out.kind in (_OUT, _COND) and out.frame == base.frame):
            raise _fail("a when() branch must return the output of a step it called (or its input)")
        tails.append(out)
    return Value(_EITHER, None, base.frame, tails)


def loop(body: Callable[[Value], Value], value: Value, *, while_: Callable[[Value], Expr]) -> Value:
    """Run `body` on `value`, then again on its own output while `while_(output)` holds (a
    do-while: a back edge with `Iterate: true`, docs/ir.md "Cycles"); returns the output of
    the last pass."""
    tr = _tracer()
    if not isinstance(value, Value) or value.kind != _OUT:
        raise _fail("loop() takes a step's output as its first value")
    mark = len(tr.order)
    out = body(value)
    if not (isinstance(out, Value) and out.kind == _OUT and out.frame == value.frame) or len(tr.order) == mark:
        raise _fail("loop()'s body must call a step on its input and return a step's output")
    head = tr.order[mark]
    if head.fed_by is not value:
        raise _fail(f"loop()'s body must first call a step on its input (step {head.name} is given another value)")
    cond = while_(out)
    if not isinstance(cond, Expr) or isinstance(cond, Value) or cond.base.node is not out.node:
        raise _fail("loop(while_=...) must return a condition on the body's output, e.g. lambda v: v['n'] != 1")
    assert out.node is not None
    out.node.add({"Name": head.name, "Type": "Scalar", "Conditional": cond.text, "Iterate": True}, "back")
    return Value(_COND, out.node, out.frame, cond.negated().text)


def _in_map(v: Any, what: str, example: str) -> Value:
    """`v` if it is a step's output inside a Map's body (the innermost frame a Map's)."""
    _tracer()
    if not (isinstance(v, Value) and v.kind == _OUT and v.info is None and v.frame and v.frame[-1][0] == "map"):
        raise _fail(f"{what} takes the output of a step called inside a .map() body; e.g. {example}")
    return v


def pairwise(value: Value) -> Value:
    """Inside a `.map()` body: `[value of item i-1, value of item i]` (`[value of item 0]`
    for the first item), given to the next step as soon as those two are done, not after
    the whole Map (a partial fan-in: three Fan-in edges with `Conditional` on `$0`, the last
    setting `$0=$0+1`, examples/pipeline-fold)."""
    v = _in_map(value, "pairwise()", "recode(pairwise(encode(chunk)))")
    return Value(_PAIR, v.node, v.frame)


def accumulate(body: Step, value: Value) -> Value:
    """Inside a `.map()` body: an ordered fold over the items, `body([value of item 0])`
    for the first item and `body([accumulate of item i-1, value of item i])` after it
    (like itertools.accumulate: each item's output is the running result). `body` must be
    a step (its output feeds itself). Take the final result with `last(...)`."""
    v = _in_map(value, "accumulate()", "accumulate(fold, recode(chunk))")
    if not isinstance(body, Step):
        raise _fail(f"accumulate() takes a @step as its body (its output feeds its next call), got {body!r:.40}")
    return body(Value(_ACC, v.node, v.frame))


def last(gathered: Value) -> Value:
    """The output of a Map's last item only (a Scalar edge from it, `Conditional:
    "$0 == $size-1"` and `Pop`); with `accumulate` in the body, the fold's result."""
    if not isinstance(gathered, Value) or gathered.kind != _GATHER or gathered.info["quorum"] is not None:
        raise _fail("last() takes the result of .map(); e.g. last(chunks.map(body))")
    return Value(_LAST, gathered.node, gathered.frame)


# -- tracing ------------------------------------------------------------------------------

_IO_EVENTS = ("open", "socket.", "subprocess.", "os.system", "os.exec", "os.spawn", "os.posix_spawn",
              "os.remove", "os.rename", "os.mkdir", "os.rmdir", "shutil.", "urllib.", "http.", "sqlite3.connect")
_HOOKED = False


def _audit(event: str, args: tuple[Any, ...]) -> None:
    tr = _TRACE.get()
    if tr is None or tr.error is not None or not event.startswith(_IO_EVENTS):
        return
    f = sys._getframe(1)
    while f is not None:
        if tr.user_frame(f):
            what = f"{event} {args[0]!r:.60}" if args else event
            err = FlowError(f"{f.f_code.co_filename}:{f.f_lineno}: the workflow body does I/O at compile "
                            f"time ({what}); it runs once, when the app is compiled: move the I/O into a step")
            tr.error = err
            raise err
        f = f.f_back  # type: ignore[assignment]


class _Trace:
    def __init__(self, user_dir: str) -> None:
        self.user_dir = os.path.normcase(os.path.abspath(user_dir)) + os.sep
        self.nodes: dict[str, _Node] = {}
        self.order: list[_Node] = []
        self.ids = itertools.count()
        self.error: FlowError | None = None

    def user_frame(self, f: Any) -> bool:
        name = os.path.normcase(os.path.abspath(f.f_code.co_filename))
        return name.startswith(self.user_dir) and name != _HERE

    def call(self, st: Step, inp: Any) -> Value:
        if isinstance(inp, (list, tuple)):
            inp = self._joined(inp)
        if not isinstance(inp, Value):
            if isinstance(inp, Expr):
                inp = self._projected(inp)
            else:
                raise _fail(f"step {st.name} is given {type(inp).__name__} {inp!r:.40}, not a step's "
                            "output; constants belong inside a step (the workflow input is the only "
                            "data from outside)")
        frame = inp.frame
        name = st.name
        for k in itertools.count(2):
            if name not in self.nodes:
                break
            name = f"{st.name}{k}"
        node = _Node(name, st, frame, _site(2), fed_by=inp)
        self._connect(inp, node)
        self.nodes[name] = node
        self.order.append(node)
        return Value(_OUT, node, frame)

    def _projected(self, e: Expr) -> Value:
        base = e.base
        if base.kind != _OUT or base.node is None:
            raise _fail("a field of the workflow input or of a map item cannot be passed on; pass "
                        "the whole value and read the field in the step")
        return Value(_OUT, base.node, base.frame, e.text)

    def _joined(self, items: Sequence[Any]) -> Value:
        outs = list(items)
        pars: list[Any] = [v.frame[-1] if isinstance(v, Value) and v.kind == _OUT and v.frame else None for v in outs]
        ok = (outs and all(p is not None and p[0] == "par" for p in pars)
              and len({p[1] for p in pars}) == 1 and [p[2] for p in pars] == list(range(pars[0][3]))
              and len({v.frame[:-1] for v in outs}) == 1)
        if not ok:
            raise _fail("a list passed to a step must be the values parallel() returned, all of them "
                        "in order (a Fan-in); use parallel(value, branch, ...) first")
        return Value(_JOIN, None, outs[0].frame[:-1], outs)

    def _connect(self, inp: Value, node: _Node) -> None:
        kind = inp.kind
        if kind in (_INPUT, _ITEM, _BRANCH) and inp.used:
            what = {_INPUT: "the workflow input", _ITEM: "a map's item", _BRANCH: "a parallel branch's input"}[kind]
            raise _fail(f"{what} goes to exactly one step; run several steps on it with parallel(value, a, b)")
        inp.used = True
        if kind == _INPUT:
            node.start = True
        elif kind == _OUT:
            assert inp.node is not None
            edge: dict[str, Any] = {"Name": node.name, "Type": "Scalar"}
            if inp.info is not None:
                edge["Payload Modifiers"] = [f"$out={inp.info}"]
            inp.node.add(edge, "chain")
        elif kind == _ITEM:
            assert inp.node is not None
            inp.node.add({"Name": node.name, "Type": "Map"}, "map")
        elif kind == _BRANCH:
            assert inp.node is not None
            inp.node.add({"Name": node.name, "Type": "Scalar"}, "branch")
        elif kind == _COND:
            assert inp.node is not None
            inp.node.add({"Name": node.name, "Type": "Scalar", "Conditional": inp.info}, "cond")
        elif kind == _GATHER:
            assert inp.node is not None
            edge = {"Name": node.name, "Type": "Fan-in", "Values": [_value_name(inp.node, "*")],
                    "Payload Modifiers": ["Pop"]}
            if inp.info["quorum"] is not None:
                edge["Quorum"] = inp.info["quorum"]
            inp.node.add(edge, "fanin")
        elif kind == _JOIN:
            values = [_value_name(v.node, str(i)) for i, v in enumerate(inp.info)]
            for v in inp.info:
                v.node.add({"Name": node.name, "Type": "Fan-in", "Values": values,
                            "Payload Modifiers": ["Pop"]}, "fanin")
        elif kind == _EITHER:
            for t in inp.info:
                self._connect(t, node)
        elif kind == _PAIR:
            src = inp.node
            assert src is not None
            for values, cond, mods in (
                    (["$0"], "$0 == 0", None), (["($0-1)", "$0"], "$0 > 0", None),
                    (["$0", "($0+1)"], "$0 < $size-1", ["$0=$0+1"])):  # item i is also item i+1's first
                edge = {"Name": node.name, "Type": "Fan-in", "Values": [_value_name(src, x) for x in values],
                        "Conditional": cond}
                if mods:
                    edge["Payload Modifiers"] = mods
                src.add(edge, "fanin")
        elif kind == _ACC:
            src = inp.node
            assert src is not None
            src.add({"Name": node.name, "Type": "Fan-in", "Values": [_value_name(src, "0")],
                     "Conditional": "$0 == 0"}, "fanin")
            src.add({"Name": node.name, "Type": "Fan-in", "Values": [_value_name(node, "($0-1)"),
                     _value_name(src, "$0")], "Conditional": "$0 > 0"}, "fanin")
            # the index moves on, so the edge to itself is not an iteration (docs/ir.md "Cycles")
            node.add({"Name": node.name, "Type": "Fan-in", "Values": [_value_name(node, "$0"),
                      _value_name(src, "($0+1)")], "Conditional": "$0 < $size-1",
                      "Payload Modifiers": ["$0=$0+1"], "Iterate": False}, "fanin")
        elif kind == _LAST:
            assert inp.node is not None
            inp.node.add({"Name": node.name, "Type": "Scalar", "Conditional": "$0 == $size-1",
                          "Payload Modifiers": ["Pop"]}, "last")

    def ir(self) -> list[tuple[dict[str, Any], _Node]]:
        """The IR mapping of every recorded function (docs/ir.md), in call order."""
        out = []
        for n in self.order:
            scalars = [r for e, r in zip(n.edges, n.roles) if e["Type"] == "Scalar"]
            if scalars.count("chain") > 1 or ("chain" in scalars and len(scalars) > 1):
                raise FlowError(f"{n.site}: the output of step {n.name} goes to several steps "
                                "unconditionally; use parallel(value, a, b) and join the branches")
            edges = []
            for e, r in zip(n.edges, n.roles):
                e = dict(e)
                if r in ("cond", "back") and len(scalars) > 1:  # two Scalar edges push a frame
                    e["Payload Modifiers"] = ["Pop"]
                edges.append(e)
            doc: dict[str, Any] = {"Name": n.name}
            if n.start:
                doc["Start"] = True
            if not n.step.checkpoint:
                doc["Checkpoint"] = False
            if n.step.retry is not None:
                doc["Retry"] = n.step.retry.to_ir()
            if edges:
                doc["Next"] = edges if len(edges) > 1 else edges[0]
            out.append((doc, n))
        return out


def _value_name(node: _Node | None, last: str) -> str:
    """The Fan-in `Values` entry of `node`'s invocations in its innermost frame: the outer
    frames by variable (`$k`, outermost first), the innermost one `last` (docs/ir.md "Values")."""
    assert node is not None
    outer = [f"${k}" for k in range(len(node.frame) - 1, 0, -1)]
    return f"{node.name}-UnumIndex-" + ".".join(outer + [last])


def trace(wf: Workflow, user_dir: str) -> list[tuple[dict[str, Any], _Node]]:
    """Run `wf`'s body once over symbolic values and return its functions as
    [(IR mapping, node)] (node: `.step` the Step, `.site` `FILE:LINE` of the call).
    `user_dir`: the directory of the user's code (I/O from frames there is refused).
    Raises FlowError (one line, the user's FILE:LINE) for what has no static graph."""
    global _HOOKED
    if not isinstance(wf, Workflow):
        raise FlowError(f"{wf!r:.60} is not a @workflow function; decorate it with @workflow")
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True
    tr = _Trace(user_dir)
    token = _TRACE.set(tr)
    try:
        result = wf.fn(Value(_INPUT, None, ()))
    except FlowError:
        raise tr.error if tr.error is not None else sys.exc_info()[1]  # type: ignore[misc]
    finally:
        _TRACE.reset(token)
    if tr.error is not None:
        raise tr.error
    if isinstance(result, Value) and result.kind in (_GATHER, _JOIN, _PAIR, _LAST):
        raise FlowError(f"{wf.fn.__code__.co_filename}:{wf.fn.__code__.co_firstlineno}: workflow "
                        f"{wf.fn.__name__} returns an edge no step takes (.map(), parallel(), pairwise() "
                        "or last()); give it to one step and return its output")
    if not tr.order:
        raise FlowError(f"{wf.fn.__code__.co_filename}:{wf.fn.__code__.co_firstlineno}: workflow "
                        f"{wf.fn.__name__} calls no step; call at least one step on its input")
    return tr.ir()


def importing() -> Any:
    """Context manager: steps called while it is active (at module import time) are refused."""
    import contextlib

    @contextlib.contextmanager
    def cm() -> Iterator[None]:
        token = _IMPORTING.set(True)
        try:
            yield
        finally:
            _IMPORTING.reset(token)
    return cm()
