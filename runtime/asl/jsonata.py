"""JSONata for Amazon States Language: `{% %}` expressions, `$states`, variables, AWS functions.

Source: ASL spec "QueryLanguage" / "JSONata" sections and the AWS Step Functions developer
guide pages "Transforming data with JSONata in Step Functions" and "Passing data between
states with variables". Evaluation uses the jsonata-python library (module `jsonata`, a port
of the reference jsonata-js implementation); nothing is passed to eval.

* `is_expr(v)`: a string that starts with `{%` and ends with `%}` (no surrounding spaces:
  `" {% x %} "` is a literal string, as on AWS).
* `evaluate(text, states, variables, where)` / `render(template, ...)`: evaluate one
  expression / every expression inside a JSON template (objects, arrays, literals kept).
  `states` is the `$states` binding: {"input", "result", "errorOutput", "context"}, where
  "context" may be a zero-argument callable (built only when an expression reads it).
* `check(text)`: the parse error of an expression, or None (used by the validator).
* AWS's additions `$partition`, `$range`, `$hash`, `$random`, `$uuid`, `$parse` are bound in
  every expression.

Errors are AslError('States.QueryEvaluationError') with AWS's cause wording:
"An error occurred while executing the state 'S' (entered at the event id #N). The JSONata
expression 'E' specified for the field 'F' returned nothing (undefined)." (`Where` carries
S, N and F; N is the history event id AWS would give, estimated from the states entered).
Compiled expressions are cached per thread (the library keeps per-evaluation state on the
expression object).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from jsonata import Jsonata
from jsonata.jexception import JException
from jsonata.utils import Utils

from .errors import AslError

QUERY_ERROR = "States.QueryEvaluationError"
_LOCAL = threading.local()
_CONTEXT_USE = re.compile(r"\$states(?!\s*\.\s*(?:input|result|errorOutput)\b)")
_HASH_ALGORITHMS = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384",
                    "SHA-512": "sha512"}


@dataclass
class Where:
    """Where an expression is evaluated: state name, field (e.g. `Output/result`,
    `Arguments/FunctionName`, `Items`) and the event id AWS would report for the state's
    entry (history numbering)."""

    state: str | None
    field: str
    event_id: int = 2

    def sub(self, key: Any) -> "Where":
        return Where(self.state, f"{self.field}/{key}", self.event_id)

    def prefix(self) -> str:
        return (f"An error occurred while executing the state '{self.state}' "
                f"(entered at the event id #{self.event_id}).")


def is_expr(value: Any) -> bool:
    """True for a JSONata expression string `{% ... %}`."""
    return isinstance(value, str) and len(value) >= 4 and value.startswith("{%") and value.endswith("%}")


def body(text: str) -> str:
    """The expression inside `{% ... %}`, stripped."""
    return text[2:-2].strip()


def reads_context(text: str) -> bool:
    """True when JSONata text may read `$states.context` (any use of `$states` other than
    `.input`, `.result`, `.errorOutput`)."""
    return _CONTEXT_USE.search(text) is not None


def has_expr(template: Any) -> bool:
    """True when `template` (any JSON value) contains a `{% %}` string."""
    if isinstance(template, dict):
        return any(has_expr(v) for v in template.values())
    if isinstance(template, list):
        return any(has_expr(v) for v in template)
    return is_expr(template)


# ---------------------------------------------------------------------------- AWS functions
def _partition(array: Any, size: Any) -> Any:
    if not isinstance(array, list) or not is_number(size) or size <= 0 or size != int(size):
        raise JException("$partition: expects an array and a positive integer chunk size", 0)
    n = int(size)
    return [list(array[i:i + n]) for i in range(0, len(array), n)]


def _range(start: Any, end: Any, step: Any) -> Any:
    if not all(is_number(v) and v == int(v) for v in (start, end, step)) or step == 0:
        raise JException("$range: expects integer start, end and non-zero step", 0)
    out, v = [], int(start)
    while (step > 0 and v <= end) or (step < 0 and v >= end):
        out.append(v)
        v += int(step)
        if len(out) > 1000:
            raise JException("$range: at most 1000 elements", 0)
    return out


def _hash(value: Any, algorithm: Any) -> str:
    if not isinstance(value, str) or algorithm not in _HASH_ALGORITHMS:
        raise JException(f"$hash: expects a string and one of {', '.join(_HASH_ALGORITHMS)}", 0)
    return hashlib.new(_HASH_ALGORITHMS[algorithm], value.encode("utf-8")).hexdigest()


def _random(seed: Any = None) -> float:
    if seed is None:
        return random.random()
    return random.Random(seed).random()


def _uuid() -> str:
    return str(uuid.uuid4())


def _parse(text: Any) -> Any:
    if not isinstance(text, str):
        raise JException("$parse: expects a JSON string", 0)
    try:
        return _to_jsonata(json.loads(text))
    except ValueError as exc:
        raise JException(f"$parse: invalid JSON: {exc}", 0) from None


AWS_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "partition": _partition, "range": _range, "hash": _hash, "random": _random,
    "uuid": _uuid, "parse": _parse}


# ---------------------------------------------------------------------------- compile
def _compile(text: str) -> Jsonata:
    cache = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = {}
    expr = cache.get(text)
    if expr is None:
        expr = Jsonata(text)
        expr.set_output_convert_nulls(False)  # tell JSONata null from undefined
        for name, fn in AWS_FUNCTIONS.items():
            expr.register_lambda(name, fn)
        if len(cache) > 4096:
            cache.clear()
        cache[text] = expr
    return expr


def check(text: str) -> str | None:
    """The parse error of the expression inside `{% %}` `text` ("code: message"), or None."""
    try:
        _compile(body(text))
    except JException as exc:
        return f"{exc.error}: {exc}" if getattr(exc, "error", None) else str(exc)
    except Exception as exc:  # the library raises a few plain exceptions on odd input
        return str(exc) or type(exc).__name__
    return None


# ---------------------------------------------------------------------------- values
def is_number(v: Any) -> bool:
    """True for a JSON number (bool excluded)."""
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _to_jsonata(value: Any) -> Any:
    """A JSON value as a binding: None (JSON null) becomes JSONata null (top level only;
    the library reads nulls inside objects and arrays as null already)."""
    return Utils.NULL_VALUE if value is None else value


class _Unsupported(Exception):
    pass


def _plain(value: Any) -> Any:
    """A JSONata result as plain JSON (sequences to lists, JSONata null to None, integral
    floats to int as JSON serialisation in JavaScript does); raises _Unsupported for
    functions and other non-JSON values."""
    if value is Utils.NULL_VALUE or value is None:
        return None
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise _Unsupported()
        return int(value) if value.is_integer() and abs(value) < 2 ** 53 else value
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]  # None here is a JSON null of the input
    raise _Unsupported()


def evaluate(text: str, states: Mapping[str, Any], variables: Mapping[str, Any] | None,
             where: Where) -> Any:
    """Evaluate the `{% %}` expression `text` with `$states` = `states` and the workflow
    variables `variables` bound; returns a plain JSON value.

    Raises AslError('States.QueryEvaluationError') when the expression does not parse,
    fails, returns nothing (undefined) or returns a function."""
    src = body(text)
    try:
        expr = _compile(src)
    except JException as exc:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' could not be parsed: {_jmsg(exc)}") from None
    bindings: dict[str, Any] = {}
    if variables:
        for k, v in variables.items():
            bindings[k] = _to_jsonata(v)
    st = {}
    for k, v in states.items():
        if k == "context":
            if not _CONTEXT_USE.search(src):
                continue
            v = v() if callable(v) else v
            if hasattr(v, "materialize"):
                v = v.materialize()
        st[k] = _to_jsonata(v)
    bindings["states"] = st
    # the library evaluates on the thread's "current" instance and reads $now()/$millis()
    # from it: make it this expression, not the one compiled last on this thread
    Jsonata.CURRENT.jsonata = expr
    try:
        out = expr.evaluate(None, bindings)
    except JException as exc:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' threw an error during evaluation: "
                       f"{_jmsg(exc)}") from None
    except RecursionError:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' exceeded the maximum recursion depth") from None
    if out is None:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' returned nothing (undefined).")
    try:
        return _plain(out)
    except _Unsupported:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' returned an unsupported result type.") from None


def _jmsg(exc: Exception) -> str:
    code = getattr(exc, "error", None)
    return f"{code}: {exc}" if code else str(exc)


def render(template: Any, states: Mapping[str, Any], variables: Mapping[str, Any] | None,
           where: Where) -> Any:
    """Evaluate every `{% %}` string inside the JSON value `template` (Arguments, Output,
    ItemSelector, Assign values, Items elements); other values are copied. Field names of
    nested values extend `where.field` with `/key` (AWS names e.g. `Output/result`)."""
    if isinstance(template, dict):
        return {k: render(v, states, variables, where.sub(k)) for k, v in template.items()}
    if isinstance(template, list):
        return [render(v, states, variables, where.sub(i)) for i, v in enumerate(template)]
    if is_expr(template):
        return evaluate(template, states, variables, where)
    return template


def type_name(value: Any) -> str:
    """JSON type name as AWS words it in QueryEvaluationError causes."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if is_number(value):
        return "number"
    return {str: "string", list: "array", dict: "object"}.get(type(value), "unknown")


def short_json(value: Any) -> str:
    """Compact JSON text of a value, as AWS quotes it in causes."""
    return json.dumps(value, separators=(",", ":"))
