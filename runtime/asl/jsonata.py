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
An error of the evaluator reads "... threw an error during evaluation. CODE: message" (a
JSONata error code) or "... threw an error during evaluation: message" (a bound), as AWS
words them (causes measured on AWS with TestState, quoted in floci-io/floci issue #2737).
Compiled expressions are cached per thread (the library keeps per-evaluation state on the
expression object).

Bounds (AWS bounds JSONata evaluation too, and fails the state with the same error):
* `$eval` does not exist (AWS's JSONata does not offer it: "T1006: Attempted to invoke a
  non-function"); `check` refuses it, so the validator does.
* time: one evaluation runs at most TIME_LIMIT seconds ("Expression evaluation timeout:
  Check for infinite loop", jsonata-js's timebox wording): a runaway expression fails its
  state instead of running into the function's timeout. The check runs between evaluation
  steps; a regular expression (`$match`, `$replace`, `$contains`, `$split`, a regex called
  as a function) runs inside one step, so regex literals are compiled with the `regex`
  package (the library's pluggable `regex_engine`; `re`-compatible VERSION0 syntax) and
  every match gets the evaluation's remaining time as its `timeout=`: a catastrophic
  pattern such as `/(a|aa)+$/` fails the state with the same cause within TIME_LIMIT;
* memory: no value produced by an evaluation step may hold more than MEMORY_LIMIT bytes,
  counted as 8 per array element and 1 per string character ("Expression evaluation
  memory limit exceeded: Check for excessive memory usage", AWS's wording; on AWS
  `[1..873782]` passes and `[1..873783]` fails, floci-io/floci #2737); a MemoryError of the
  process (the local target's address-space limit) gives the same cause;
* depth: at most MAX_DEPTH nested evaluation steps, and Python's RecursionError, give
  AWS's "Stack overflow error: Check for non-terminating recursive function. Consider
  rewriting as tail-recursive.";
* any other Python exception of the evaluator (`0/0`, `$power(10, 400)`, a regex where a
  value is needed) is a QueryEvaluationError naming the expression and field: arithmetic
  with the reference implementation's "D1001: Number out of range", anything else with the
  exception's type and message.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any, Callable, Mapping

__all__ = ["QUERY_ERROR", "Where", "body", "check", "evaluate", "is_expr", "is_number", "reads_context", "render",
           "short_json", "type_name"]

try:
    import regex
except ImportError:  # a bundle whose wheels were resolved for another Python (`_regex` is
    # compiled): an emulated Lambda running a python3.13 archive under the host's Python
    regex = None
from jsonata import Jsonata
from jsonata.jexception import JException
from jsonata.regex_engine import RegexFlags
from jsonata.utils import Utils

from .errors import AslError

QUERY_ERROR = "States.QueryEvaluationError"
_LOCAL = threading.local()
_CONTEXT_USE = re.compile(r"\$states(?!\s*\.\s*(?:input|result|errorOutput)\b)")
TIME_LIMIT = 5.0          # s one expression may evaluate (module attribute: tests lower it)
MEMORY_LIMIT = 6_990_256  # bytes one value of an evaluation may hold (8 per element, 1 per character)
MAX_DEPTH = 500           # nested evaluation steps
TIMEOUT_MSG = "Expression evaluation timeout: Check for infinite loop"
MEMORY_MSG = "Expression evaluation memory limit exceeded: Check for excessive memory usage"
STACK_MSG = ("Stack overflow error: Check for non-terminating recursive function. Consider rewriting "
             "as tail-recursive.")
REFUSED = ("eval",)       # JSONata functions AWS's Step Functions does not offer
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
class BoundedPattern:
    """A JSONata regex literal compiled with the `regex` package: every match runs with the
    time left to the calling thread's evaluation (`_bounds`) as `timeout=`, so a
    catastrophic pattern raises TimeoutError (reported as TIMEOUT_MSG) instead of running
    inside one evaluation step past TIME_LIMIT. It has the methods jsonata-python calls on
    a compiled pattern (`jsonata.regex_engine.CompiledPattern`: search, finditer, sub,
    split) and the rest of `re.Pattern`'s matching API. Source: the `regex` package's
    documentation ("timeout" argument of the matching methods)."""

    def __init__(self, pattern: str, flags: RegexFlags):
        f = (regex.IGNORECASE if flags.case_insensitive else 0) | (regex.MULTILINE if flags.multiline else 0)
        self._p = regex.compile(pattern, f | regex.VERSION0)
        self.pattern, self.flags, self.groups = pattern, f, self._p.groups
        self.groupindex = self._p.groupindex

    @staticmethod
    def _left() -> float:
        deadline = getattr(_LOCAL, "deadline", None)
        if deadline is None:  # outside an evaluation (not reached by `evaluate`)
            return TIME_LIMIT
        return max(0.001, deadline - time.monotonic())

    def search(self, string: str, *a: Any) -> Any:
        return self._p.search(string, *a, timeout=self._left())

    def match(self, string: str, *a: Any) -> Any:
        return self._p.match(string, *a, timeout=self._left())

    def fullmatch(self, string: str, *a: Any) -> Any:
        return self._p.fullmatch(string, *a, timeout=self._left())

    def finditer(self, string: str, *a: Any) -> Any:
        return self._p.finditer(string, *a, timeout=self._left())

    def findall(self, string: str, *a: Any) -> Any:
        return self._p.findall(string, *a, timeout=self._left())

    def split(self, string: str, maxsplit: int = 0) -> list[str]:
        return self._p.split(string, maxsplit, timeout=self._left())

    def sub(self, repl: Any, string: str, count: int = 0) -> str:
        try:
            return self._p.sub(repl, string, count, timeout=self._left())
        except regex.error as exc:
            # jsonata-python's $replace retries a "$12" with group 1 then "2" when it reads
            # `re`'s wording "invalid group reference 12 at position P"; `regex` omits the
            # number, so name the first reference past the pattern's groups as `re` does
            bad = [(m.group(1), m.start(1)) for m in re.finditer(r"\\g<(\d+)>", repl if isinstance(repl, str) else "")
                   if int(m.group(1)) > self.groups]
            if "invalid group reference" in str(exc) and bad:
                raise re.error(f"invalid group reference {bad[0][0]} at position {bad[0][1]}") from None
            raise

    def __repr__(self) -> str:
        return f"BoundedPattern({self.pattern!r})"


def _regex_engine(pattern: str, flags: RegexFlags) -> BoundedPattern:
    """jsonata-python's `regex_engine` hook: regex literals become BoundedPattern."""
    return BoundedPattern(pattern, flags)


def regex_engine() -> Callable[[str, RegexFlags], Any]:
    """The engine regex literals compile with: `_regex_engine` (bounded), or, where the
    `regex` package cannot be imported (its compiled module was built for another Python,
    as when an emulated Lambda runs an archive resolved for the runtime's Python under the
    host's), the library's own `re` engine, unbounded, with one warning on stderr."""
    if regex is not None:
        return _regex_engine
    if not getattr(_LOCAL, "warned", False):
        _LOCAL.warned = True
        import sys
        print("unum: the 'regex' package cannot be imported here (built for another Python?); "
              "JSONata regular expressions run without their time bound", file=sys.stderr)
    from jsonata.regex_engine import default_regex_engine
    return default_regex_engine


def _compile(text: str) -> Jsonata:
    cache = getattr(_LOCAL, "cache", None)
    if cache is None:
        cache = _LOCAL.cache = {}
    expr = cache.get(text)
    if expr is None:
        expr = Jsonata(text, regex_engine())
        expr.set_output_convert_nulls(False)  # tell JSONata null from undefined
        for name, fn in AWS_FUNCTIONS.items():
            expr.register_lambda(name, fn)
        for name in REFUSED:  # unbound: a call is T1006 "Attempted to invoke a non-function"
            expr.register_function(name, None)
        if len(cache) > 4096:
            cache.clear()
        cache[text] = expr
    return expr


def check(text: str) -> str | None:
    """The parse error of the expression inside `{% %}` `text` ("code: message"), or None."""
    try:
        expr = _compile(body(text))
    except JException as exc:
        return f"{exc.error}: {exc}" if getattr(exc, "error", None) else str(exc)
    except Exception as exc:  # noqa: BLE001 - the library raises a few plain exceptions on odd input
        return str(exc) or type(exc).__name__
    used = _refused_use(expr.ast)
    if used:
        return (f"${used} is not available: AWS Step Functions' JSONata does not offer it "
                "(compute the value in a Task or with the other functions)")
    return None


def _refused_use(ast: Any) -> str | None:
    """The first REFUSED function name that the parsed expression `ast` refers to (a call
    or any other reference to `$name`), or None."""
    seen: set[int] = set()
    todo = [ast]
    while todo:
        node = todo.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, (list, tuple)):
            todo.extend(node)
            continue
        if not hasattr(node, "__dict__") or not hasattr(node, "type"):
            continue
        if node.type == "variable" and node.value in REFUSED:
            return node.value
        for k, v in vars(node).items():
            if not k.startswith("_") and (isinstance(v, (list, tuple)) or hasattr(v, "type")):
                todo.append(v)
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
    bindings.update(_bounds())
    # the library evaluates on the thread's "current" instance and reads $now()/$millis()
    # from it: make it this expression, not the one compiled last on this thread
    Jsonata.CURRENT.jsonata = expr
    threw = (f"{where.prefix()} The JSONata expression '{src}' specified for the field "
             f"'{where.field}' threw an error during evaluation")
    try:
        out = expr.evaluate(None, bindings)
    except _Bound as exc:
        raise AslError(QUERY_ERROR, f"{threw}: {exc}") from None
    except TimeoutError:  # a BoundedPattern match ran out of the evaluation's time
        raise AslError(QUERY_ERROR, f"{threw}: {TIMEOUT_MSG}") from None
    except JException as exc:
        raise AslError(QUERY_ERROR, f"{threw}. {_jmsg(exc)}") from None
    except RecursionError:
        raise AslError(QUERY_ERROR, f"{threw}: {STACK_MSG}") from None
    except MemoryError:
        raise AslError(QUERY_ERROR, f"{threw}: {MEMORY_MSG}") from None
    except Exception as exc:  # noqa: BLE001 - the library lets Python's own errors through
        raise AslError(QUERY_ERROR, f"{threw}{_python_error(exc)}") from None
    if out is None:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' returned nothing (undefined).")
    try:
        return _plain(out)
    except _Unsupported:
        raise AslError(QUERY_ERROR, f"{where.prefix()} The JSONata expression '{src}' specified "
                       f"for the field '{where.field}' returned an unsupported result type.") from None


class _Bound(Exception):
    """An evaluation past TIME_LIMIT, MEMORY_LIMIT or MAX_DEPTH (str: AWS's message)."""


def _size(value: Any) -> int:
    """The bytes MEMORY_LIMIT counts for one value: 8 per array element or object member,
    1 per string character (nested values were counted when they were produced)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Utils.RangeList):  # lazy `[a..b]`: its __len__ counts one too many
        return 8 * max(0, value.b - value.a)
    if isinstance(value, (list, tuple, dict)):
        return 8 * len(value)
    return 0


def _bounds() -> dict[str, Any]:
    """Bindings of the library's evaluation hooks (`__evaluate_entry` / `__evaluate_exit`,
    called around every evaluation step) that enforce TIME_LIMIT, MAX_DEPTH and
    MEMORY_LIMIT for one evaluation, raising _Bound."""
    deadline = _LOCAL.deadline = time.monotonic() + TIME_LIMIT  # BoundedPattern reads it too
    depth = [0]

    def entry(expr: Any, input: Any, env: Any) -> None:
        if not getattr(env, "is_parallel_call", False):  # as the library's Timebox counts depth
            depth[0] += 1
            if depth[0] > MAX_DEPTH:
                raise _Bound(STACK_MSG)
        if time.monotonic() > deadline:
            raise _Bound(TIMEOUT_MSG)

    def exit_(expr: Any, input: Any, env: Any, result: Any) -> None:
        if not getattr(env, "is_parallel_call", False):
            depth[0] -= 1
        if _size(result) > MEMORY_LIMIT:
            raise _Bound(MEMORY_MSG)
        if time.monotonic() > deadline:
            raise _Bound(TIMEOUT_MSG)

    return {"__evaluate_entry": entry, "__evaluate_exit": exit_}


def _python_error(exc: Exception) -> str:
    """The tail of the cause for a Python exception raised inside the evaluator: arithmetic
    out of range gets the reference implementation's code (". D1001: Number out of range",
    as jsonata-js words a non-finite number); anything else ": Type: message" (no code is
    made up)."""
    if isinstance(exc, ArithmeticError):  # ZeroDivisionError, OverflowError, decimal errors
        return ". D1001: Number out of range"
    if isinstance(exc, TypeError) and "Pattern" in str(exc):
        return (": a regular expression is not a value (use it as an argument of $match, $replace, "
                "$split or $contains)")
    return f": {type(exc).__name__}: {str(exc)[:200]}"


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
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), "unknown")


def short_json(value: Any) -> str:
    """Compact JSON text of a value, as AWS quotes it in causes."""
    return json.dumps(value, separators=(",", ":"))
