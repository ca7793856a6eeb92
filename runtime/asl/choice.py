"""Choice rule evaluation (ASL spec "Choice State": data-test expressions, And/Or/Not,
every comparison operator and its `*Path` form, the `Is*` type tests, StringMatches)."""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any

from . import paths
from .errors import AslError

__all__ = ["OPERATORS", "evaluate", "parse_timestamp"]

_BASES = ("StringEquals", "StringLessThan", "StringGreaterThan", "StringLessThanEquals",
          "StringGreaterThanEquals", "NumericEquals", "NumericLessThan", "NumericGreaterThan",
          "NumericLessThanEquals", "NumericGreaterThanEquals", "BooleanEquals",
          "TimestampEquals", "TimestampLessThan", "TimestampGreaterThan",
          "TimestampLessThanEquals", "TimestampGreaterThanEquals")
OPERATORS = set(_BASES) | {b + "Path" for b in _BASES} | {
    "StringMatches", "IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp"}
_TS = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")


def parse_timestamp(v: Any) -> _dt.datetime | None:
    """An RFC 3339 timestamp (with 'T' and a zone) as an aware datetime, else None."""
    if not isinstance(v, str) or not _TS.fullmatch(v):
        return None
    try:
        return _dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError:
        return None


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _cmp(kind: str, op: str, a: Any, b: Any) -> bool:
    if kind == "String":
        if not isinstance(a, str) or not isinstance(b, str):
            return False
    elif kind == "Numeric":
        if not _num(a) or not _num(b):
            return False
    elif kind == "Boolean":
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    elif kind == "Timestamp":
        a, b = parse_timestamp(a), parse_timestamp(b)
        if a is None or b is None:
            return False
    return {"Equals": a == b, "LessThan": a < b, "GreaterThan": a > b,
            "LessThanEquals": a <= b, "GreaterThanEquals": a >= b}[op]


def _split(name: str) -> tuple[str, str]:
    for kind in ("String", "Numeric", "Boolean", "Timestamp"):
        if name.startswith(kind):
            return kind, name[len(kind):]
    raise KeyError(name)


def _matches(value: Any, pattern: Any) -> bool:
    if not isinstance(value, str) or not isinstance(pattern, str):
        return False
    out, i = [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if ch == "*" else re.escape(ch))
        i += 1
    return re.fullmatch("".join(out), value, re.DOTALL) is not None


def evaluate(rule: dict[str, Any], data: Any, context: Any) -> bool:
    """True when the Choice rule matches the state input `data`.

    Raises AslError('States.Runtime') when `Variable` (or a `*Path` operand) is absent."""
    if "And" in rule:
        return all(evaluate(r, data, context) for r in rule["And"])
    if "Or" in rule:
        return any(evaluate(r, data, context) for r in rule["Or"])
    if "Not" in rule:
        return not evaluate(rule["Not"], data, context)
    var = rule.get("Variable")
    op = next((k for k in rule if k in OPERATORS), None)
    if var is None or op is None:
        raise AslError("States.Runtime", f"Choice rule {rule!r} has no Variable or operator")
    operand = rule[op]
    if op == "IsPresent":
        return paths.exists(var, data, context) == bool(operand)
    value = paths.read(var, data, context)
    if op == "IsNull":
        return (value is None) == bool(operand)
    if op == "IsNumeric":
        return _num(value) == bool(operand)
    if op == "IsString":
        return isinstance(value, str) == bool(operand)
    if op == "IsBoolean":
        return isinstance(value, bool) == bool(operand)
    if op == "IsTimestamp":
        return (parse_timestamp(value) is not None) == bool(operand)
    if op == "StringMatches":
        return _matches(value, operand)
    if op.endswith("Path"):
        operand = paths.read(operand, data, context)
        op = op[:-4]
    kind, cmp = _split(op)
    return _cmp(kind, cmp, value, operand)
