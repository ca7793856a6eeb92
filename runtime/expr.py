"""Safe evaluation of IR expressions: `Conditional`, `Values` index parts and payload modifiers.

Source: seed 000 Appendix A.2.5 (runtime variables `$out`, `$n`, `$size`) and A.2.6 (payload
modifiers). Expressions are evaluated with `simpleeval` (an AST walker with a whitelist of
operators and functions); nothing is ever passed to `eval`/`exec`.

Variables: `$out` (the function output; fields via `$out.field` or `$out['field']`),
`$0..$n` (fan-out indexes, `$0` innermost), `$size` (innermost fan-out size), `$iter`
(iteration counter), `$route` (label chosen by a wrapper such as the ASL one, or None).

Bounds: simpleeval limits string repetition, shifts and exponents; on top of that no
integer an expression computes may exceed MAX_INT_BITS bits (checked before `**`, `*` and
`<<` compute it, so `4000000**4000000` is refused at once instead of running for minutes),
and a result must be a JSON value (an integer of at most MAX_INT_BITS bits: Python's json
encoder refuses ints of more than 4,300 digits, `sys.get_int_max_str_digits`; a finite
float). Either failure is an IRError naming the expression.
"""

from __future__ import annotations

import ast
import math
import operator
import re
from dataclasses import dataclass, field
from typing import Any

import simpleeval

from .errors import IRError

__all__ = ["Assignment", "Env", "Expr"]

_VAR = re.compile(r"\$(out|size|iter|route|\d+)\b")
_ASSIGN = re.compile(r"^\s*\$(out|size|\d+)\s*=(?!=)\s*(.+?)\s*$")
_FUNCS = {"len": len, "min": min, "max": max, "abs": abs, "int": int, "str": str,
          "float": float, "bool": bool, "round": round, "sorted": sorted}


MAX_INT_BITS = 14_000  # ~4,214 decimal digits: under the json encoder's 4,300-digit limit


class _TooBig(ArithmeticError):
    pass


def _check_int(v: Any) -> Any:
    if isinstance(v, int) and not isinstance(v, bool) and v.bit_length() > MAX_INT_BITS:
        raise _TooBig(f"an integer of {v.bit_length()} bits, over the {MAX_INT_BITS}-bit bound")
    return v


def _bits(v: Any) -> int:
    return abs(v).bit_length() if isinstance(v, int) else 0


def _pow(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and b > 0 and abs(a) > 1 and _bits(a) * b > MAX_INT_BITS + b:
        raise _TooBig(f"{_short(str(a), 40, False)} ** {b} would be over the {MAX_INT_BITS}-bit bound")
    return _check_int(simpleeval.safe_power(a, b))


def _mult(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and _bits(a) + _bits(b) > MAX_INT_BITS + 1:
        raise _TooBig(f"a product over the {MAX_INT_BITS}-bit bound")
    return _check_int(simpleeval.safe_mult(a, b))


def _lshift(a: Any, b: Any) -> Any:
    if isinstance(a, int) and isinstance(b, int) and _bits(a) + b > MAX_INT_BITS:
        raise _TooBig(f"a shift over the {MAX_INT_BITS}-bit bound")
    return _check_int(simpleeval.safe_lshift(a, b))


_OPERATORS = {**simpleeval.DEFAULT_OPERATORS, ast.Pow: _pow, ast.Mult: _mult, ast.LShift: _lshift,
              ast.Add: lambda a, b: _check_int(simpleeval.safe_add(a, b)),
              ast.Sub: lambda a, b: _check_int(operator.sub(a, b))}


def _check_result(value: Any, depth: int = 0) -> None:
    """Raise _TooBig / ValueError when `value` is not a JSON value the payload encoder
    takes (an int over MAX_INT_BITS, a NaN or infinite float, nesting past 100)."""
    if depth > 100:
        raise ValueError("the result is nested more than 100 deep")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{value} is not a JSON number")
    _check_int(value)
    if isinstance(value, dict):
        for v in value.values():
            _check_result(v, depth + 1)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_result(v, depth + 1)


def _translate(src: str) -> str:
    """Rewrite `$x` runtime variables into identifiers simpleeval accepts."""
    return _VAR.sub(lambda m: ("v_" + m.group(1)), src)


@dataclass(frozen=True)
class Expr:
    """A parsed expression. `Expr.compile(src)` raises IRError for syntax errors."""

    source: str
    _parsed: Any = field(compare=False, repr=False)

    @classmethod
    def compile(cls, source: str | int | float | bool) -> "Expr":
        """Parse `source` once; raises IRError("bad expression ...") on syntax errors."""
        src = str(source)
        if isinstance(source, bool):
            src = "True" if source else "False"
        try:
            parsed = simpleeval.SimpleEval.parse(_translate(src))
        except SyntaxError as exc:
            raise IRError(f"bad expression {_short(src)}: {_short(str(exc.msg), 200, False)}") from None
        except Exception as exc:  # noqa: BLE001 - simpleeval.InvalidExpression and friends
            raise IRError(f"bad expression {_short(src)}: {_short(str(exc), 200, False)}") from None
        for node in ast.walk(parsed):
            # expressions are pure: no method calls ($out.clear(), 'a'.ljust(10**8)) and no
            # attribute beyond a mapping key, so nothing can mutate a value or get past
            # simpleeval's size limits; call only the listed functions
            if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name) and node.func.id in _FUNCS):
                raise IRError(f"bad expression {_short(src)}: only {', '.join(sorted(_FUNCS))} may be called "
                              "(no methods)")
            if isinstance(node, (ast.NamedExpr, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                                 ast.GeneratorExp)):
                raise IRError(f"bad expression {_short(src)}: {type(node).__name__} is not allowed")
        return cls(src, parsed)

    def evaluate(self, env: "Env") -> Any:
        """Evaluate against `env`; raises IRError naming the expression on failure."""
        ev = simpleeval.SimpleEval(names=env.names(), functions=_FUNCS, operators=_OPERATORS)
        try:
            value = ev.eval(self.source, previously_parsed=self._parsed)
            if value is not env.out:  # $out itself came from JSON
                _check_result(value)
            return value
        except _TooBig as exc:
            raise IRError(f"expression {_short(self.source)} failed: the result cannot be a JSON number: "
                          f"{exc}") from None
        except Exception as exc:  # noqa: BLE001 - simpleeval raises many types; report uniformly
            raise IRError(f"expression {_short(self.source)} failed: {type(exc).__name__}: {_short(str(exc), 200, False)}") from None


def _short(text: str, limit: int = 120, quote: bool = True) -> str:
    """`text` (repr'd when `quote`) cut to `limit` characters, with its length, so an error
    about a huge expression stays one short line."""
    r = repr(text) if quote else text
    return r if len(r) <= limit else f"{r[:limit]}... ({len(text)} characters)"


@dataclass
class Env:
    """The variables visible to an expression.

    `indexes`/`sizes` are outermost-first lists (as in invocation names); `$0` is the last.
    """

    out: Any = None
    indexes: tuple[int, ...] = ()
    sizes: tuple[int, ...] = ()
    iteration: int = 0
    route: Any = None

    def names(self) -> dict[str, Any]:
        names: dict[str, Any] = {"v_out": self.out, "v_iter": self.iteration,
                                 "v_route": self.route, "True": True, "False": False, "None": None}
        names["v_size"] = self.sizes[-1] if self.sizes else None
        for depth, idx in enumerate(reversed(self.indexes)):
            names[f"v_{depth}"] = idx
        return names


@dataclass(frozen=True)
class Assignment:
    """A payload modifier `$target=<expr>` (target is 'out', 'size' or an index depth)."""

    target: str
    expr: Expr

    @classmethod
    def parse(cls, text: str) -> "Assignment | None":
        """Return the assignment, or None when `text` is not of the form `$x=...`."""
        m = _ASSIGN.match(text)
        if not m:
            return None
        return cls(m.group(1), Expr.compile(m.group(2)))
