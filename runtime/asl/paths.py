"""JSONPath for Amazon States Language: Paths, Reference Paths and payload templates.

Source: ASL spec "Paths" / "Reference Paths" / "Payload Template" and "Input and Output
Processing" (https://states-language.net/spec.html). JSONPath evaluation uses the
jsonpath-ng library (`jsonpath_ng.ext`, which adds filter expressions; `&&`, `||` and
parentheses in filters since jsonpath-ng 1.13). `$$.` paths read the context object instead
of the state input.

Step Functions reads JSONPath as Jayway JsonPath does (AWS developer guide "Using JSONPath
paths"), which accepts a few spellings jsonpath-ng does not; `aws_dialect` rewrites them
before parsing (see its docstring).
"""

from __future__ import annotations

import copy
import functools
import re
from typing import Any, Callable

from jsonpath_ng import (Child, Descendants, Fields, Index, JSONPath, Root, Slice, This,
                         Wildcard)
from jsonpath_ng.ext import parse as _jp_parse
from jsonpath_ng.ext.filter import And, Expression, Filter, Or

from .errors import AslError

__all__ = ["aws_dialect", "exists", "is_path", "is_variable", "read", "render", "validate_path", "write"]

_INDEFINITE = re.compile(r"\*|\.\.|\[\s*\?|\[[^\]]*[:,][^\]]*\]")
_VARIABLE = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")
_QUOTED = re.compile(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"")
_COMPARISON = re.compile(r"\s*(?:==|!=|<=|>=|<|>)\s*")
# an unquoted comparison operand: everything up to a space, bracket, parenthesis, quote,
# `&&` or `||`
_BARE_WORD = re.compile(r"(?:(?!&&|\|\|)[^\s()\[\]'\"])+")
_LITERAL_WORDS = ("true", "false", "null")
MAX_PATH_DEPTH = 100  # steps (fields, indexes, filters) in one path; deeper paths are rejected
MAX_PATH_LENGTH = 4096  # characters
# jsonpath-ng node types that are JSONPath as Step Functions (Jayway) reads it; jsonpath-ng's
# own extensions (`&`, `|`, arithmetic, `len`, `sorted`, `where`, `this`...) are rejected
_NODES = (Root, Child, Fields, Index, Slice, Wildcard, Descendants, Filter, Expression, And, Or)


def _indefinite(expr: str) -> bool:
    """True when a path can select several values (wildcard, `..`, filter, slice, union);
    quoted bracket keys (`$['a*b']`, `$['a\\'b']`) are names, not operators."""
    return bool(_INDEFINITE.search(_QUOTED.sub("''", expr)))


def aws_dialect(path: str) -> str:
    """`path` rewritten from the JSONPath Step Functions accepts into the same query in the
    syntax jsonpath-ng parses; quoted strings are copied unchanged.

    - `.[` (not `..[`) becomes `[`: `$.[?(@.a==1)]` -> `$[?(@.a==1)]`, and the AWS
      developer guide's own example `$.abc.['def ghi']` -> `$.abc['def ghi']` ("Using
      JSONPath paths": bracket notation for names with special characters).
    - In a filter, an unquoted operand of `==`, `!=`, `<`, `<=`, `>`, `>=` is a string, as
      on Step Functions: `[?(@.category==home)]` -> `[?(@.category=='home')]`
      (aws-samples/serverless-account-signup-service, whose
      `"InputPath": "$..interests[?(@.category==home)]"` selects the interests whose
      category is "home"; getmoto/moto#7825, `[?(@.Name==/eggs/cooked/like)]`). The operand
      runs to the next space, bracket, parenthesis, `&&` or `||`. Numbers, `true`, `false`,
      `null` and paths (`@...`, `$...`) keep their meaning.

    `&&`, `||` and parentheses need no rewriting (jsonpath-ng >= 1.13 parses them)."""
    out: list[str] = []
    brackets: list[bool] = []  # one entry per open `[`: True when it opens a filter `[?`
    i, n = 0, len(path)
    while i < n:
        c = path[i]
        if c in "'\"":  # a quoted string: copy through its closing quote
            j = i + 1
            while j < n and path[j] != c:
                j += 2 if path[j] == "\\" else 1
            out.append(path[i:j + 1])
            i = j + 1
            continue
        if c == "." and path.startswith(".[", i) and not (i and path[i - 1] == "."):
            i += 1
            continue
        if c == "[":
            brackets.append(path[i + 1:].lstrip().startswith("?"))
        elif c == "]" and brackets:
            brackets.pop()
        if any(brackets):
            m = _COMPARISON.match(path, i)
            if m:
                out.append(m.group())
                i = m.end()
                w = _BARE_WORD.match(path, i)
                if w and w.group() not in _LITERAL_WORDS and w.group()[0] not in "@$-0123456789":
                    out.append("'" + w.group().replace("\\", "\\\\") + "'")
                    i = w.end()
                continue
        out.append(c)
        i += 1
    return "".join(out)


def _check_tree(path: str, tree: Any) -> None:
    """Reject node types outside ASL's JSONPath and trees deeper than MAX_PATH_DEPTH
    (iteratively: evaluation recurses once per step)."""
    todo = [(tree, 1, False)]
    while todo:
        node, depth, in_filter = todo.pop()
        if depth > MAX_PATH_DEPTH:
            raise AslError("States.Runtime", f"Invalid JSONPath {_short_path(path)}: more than "
                           f"{MAX_PATH_DEPTH} steps")
        if isinstance(node, This) and in_filter:
            continue
        if not isinstance(node, _NODES):
            raise AslError("States.Runtime", f"Invalid JSONPath {_short_path(path)}: "
                           f"{_short_path(str(node))} is not part of ASL JSONPath")
        if isinstance(node, (Child, Descendants)):
            todo += [(node.left, depth + 1, in_filter), (node.right, depth + 1, in_filter)]
        elif isinstance(node, Filter):
            todo += [(e, depth + 1, True) for e in node.expressions]
        elif isinstance(node, (And, Or)):
            todo += [(e, depth + 1, True) for e in node.operands]
        elif isinstance(node, Expression):
            todo.append((node.target, depth + 1, True))
            if isinstance(node.value, JSONPath):  # a query operand (`@.a == @.b`); a string
                todo.append((node.value, depth + 1, True))  # literal is a str, not a node


def _short_path(path: str) -> str:
    return repr(path) if len(path) <= 80 else repr(path[:80] + "...")


@functools.lru_cache(maxsize=4096)
def _compile(path: str):
    if len(path) > MAX_PATH_LENGTH:
        raise AslError("States.Runtime", f"Invalid JSONPath {_short_path(path)}: longer than "
                       f"{MAX_PATH_LENGTH} characters")
    try:
        tree = _jp_parse(aws_dialect(path))
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng raises several exception types
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise AslError("States.Runtime", f"Invalid JSONPath {_short_path(path)}: {text}") from None
    _check_tree(path, tree)
    return tree


def _find(expr: str, target: Any) -> list[Any]:
    """All values `expr` selects in `target`; evaluation errors (a filter comparing a number
    with a string, ...) become AslError('States.Runtime')."""
    tree = _compile(expr)
    try:
        return [m.value for m in tree.find(target)]
    except Exception as exc:  # noqa: BLE001 - jsonpath-ng evaluation raises TypeError, ValueError, ...
        text = str(exc).splitlines()[0] if str(exc) else ""
        raise AslError("States.Runtime", f"The JSONPath {_short_path(expr)} cannot be evaluated: "
                       f"{type(exc).__name__}: {text}") from None


_FIELDS = re.compile(r"\$(?:\.[A-Za-z_][A-Za-z0-9_]*)+")


@functools.lru_cache(maxsize=4096)
def _field_keys(expr: str) -> tuple[str, ...] | None:
    """The keys of a path made only of `.name` steps (`$.a.b` -> ('a', 'b')), else None."""
    return tuple(expr[2:].split(".")) if _FIELDS.fullmatch(expr) else None


def is_path(text: Any) -> bool:
    """True for strings that are ASL Paths (`$`, `$.x`, `$[0]`, `$$.x`) or workflow variable
    references (`$name`, `$name.x[0]`; AWS developer guide "Passing data between states
    with variables")."""
    return isinstance(text, str) and (text == "$" or text.startswith("$.") or text.startswith("$[")
                                      or text.startswith("$$") or is_variable(text))


def is_variable(text: Any) -> bool:
    """True for a variable reference path `$name...` (name: letters, digits, `_`)."""
    return isinstance(text, str) and _VARIABLE.match(text) is not None


def split_variable(path: str) -> tuple[str, str]:
    """`$name.rest` -> ("name", "$.rest"); the rest is a Path applied to the value."""
    m = _VARIABLE.match(path)
    assert m is not None
    return m.group(1), "$" + path[m.end():]


def validate_path(path: str) -> None:
    """Raise AslError('States.Runtime') when `path` is not a JSONPath this interpreter can
    evaluate: unparsable, a jsonpath-ng extension outside ASL (`$.a&b`, `$.a|b`, arithmetic,
    `len`), more than MAX_PATH_DEPTH steps or MAX_PATH_LENGTH characters (used by the
    validator; the message is one line)."""
    if not is_path(path):
        raise AslError("States.Runtime", f"{_short_path(str(path))} is not a JSONPath starting with '$'")
    if is_variable(path):
        path = split_variable(path)[1]
    _compile(path[1:] if path.startswith("$$") else path)


def read(path: str, data: Any, context: Any = None) -> Any:
    """Evaluate an ASL Path. `$$...` reads `context`. A definite path returns its single
    value; a path with wildcards, slices or filters returns the list of matches.

    A variable reference `$name...` reads the workflow variables, found on `context` as its
    `variables` attribute (see runtime.asl.machine).

    Raises AslError('States.Runtime') when a definite path matches nothing or a variable is
    not defined."""
    if is_variable(path):
        name, rest = split_variable(path)
        variables = getattr(context, "variables", None) or {}
        if name not in variables:
            raise AslError("States.Runtime", f"The variable reference '{path}' could not be "
                           f"resolved: variable '${name}' is not defined")
        return read(rest, variables[name], None)
    if path == "$":  # the default InputPath/OutputPath of every state
        return data
    if path.startswith("$$"):
        target, expr = context, path[1:]
        if hasattr(target, "materialize"):
            target = target.materialize()
    else:
        target, expr = data, path
    if expr == "$":
        return target
    keys = _field_keys(expr)
    if keys is not None:  # `$.a.b` on objects: plain lookups (the common case, 10x faster)
        cur = target
        for k in keys:
            if not isinstance(cur, dict) or k not in cur:
                break
            cur = cur[k]
        else:
            return cur
    matches = _find(expr, target)
    if _indefinite(expr):
        return matches
    if not matches:
        raise AslError("States.Runtime", f"The JSONPath '{path}' could not be found in the input "
                       f"'{_short(target)}'")
    return matches[0]


def exists(path: str, data: Any, context: Any = None) -> bool:
    """True when `path` selects something (Choice `IsPresent`)."""
    try:
        val = read(path, data, context)
    except AslError:
        return False
    return not (_indefinite(path) and val == [])


@functools.lru_cache(maxsize=4096)
def _ref_steps(path: str) -> tuple[Any, ...]:
    """The steps of Reference Path `path`: field names (str) and indexes (int)."""
    steps: list[Any] = []

    def flatten(node) -> None:
        if isinstance(node, Root):
            return
        left, right = getattr(node, "left", None), getattr(node, "right", None)
        if left is not None and right is not None:
            flatten(left)
            flatten(right)
        elif isinstance(node, Fields) and len(node.fields) == 1:
            steps.append(node.fields[0])
        elif isinstance(node, Index) and len(node.indices) == 1:
            steps.append(int(node.indices[0]))
        else:
            raise AslError("States.Runtime", f"ResultPath {path!r} must be a reference path "
                           "(fields and indexes only)")

    flatten(_compile(path))
    return tuple(steps)


def write(path: str, data: Any, value: Any) -> Any:
    """Apply a ResultPath: return a copy of `data` with `value` placed at the Reference Path
    `path` (creating objects on the way). `$` replaces the whole input.

    Raises AslError('States.Runtime') for non-definite paths or when a step crosses a
    non-object."""
    if path == "$":
        return value
    steps = _ref_steps(path)
    out = _copy(data)
    if not isinstance(out, dict) and steps and isinstance(steps[0], str):
        raise AslError("States.Runtime", f"Invalid path '{path}': the input is not an object, "
                       f"so ResultPath cannot set a field in {_short(data)!r}")
    cur = out
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        if isinstance(step, str):
            if not isinstance(cur, dict):
                raise AslError("States.Runtime", f"Invalid path '{path}': cannot set field "
                               f"{step!r} in a non-object")
            if last:
                cur[step] = value
            else:
                if not isinstance(cur.get(step), (dict, list)):
                    cur[step] = {}
                cur = cur[step]
        else:
            if not isinstance(cur, list) or not -len(cur) <= step < len(cur):
                raise AslError("States.Runtime", f"Invalid path '{path}': index {step} out of range")
            if last:
                cur[step] = value
            else:
                cur = cur[step]
    return out


def render(template: Any, data: Any, context: Any,
           intrinsic: Callable[[str, Any, Any], Any]) -> Any:
    """Evaluate a payload template (Parameters, ResultSelector, ItemSelector): keys ending in
    `.$` take the value of a Path (on `data` or `$$` context) or of an intrinsic function
    call; other values are copied, nested objects and arrays rendered recursively."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for k, v in template.items():
            if k.endswith(".$"):
                if not isinstance(v, str):
                    raise AslError("States.Runtime", f"field {k!r}: the value of a '.$' field must "
                                   f"be a path or intrinsic function, got {v!r}")
                if is_path(v):
                    out[k[:-2]] = read(v, data, context)
                else:
                    out[k[:-2]] = intrinsic(v, data, context)
            else:
                out[k] = render(v, data, context, intrinsic)
        return out
    if isinstance(template, list):
        return [render(v, data, context, intrinsic) for v in template]
    return template


def _copy(value: Any) -> Any:
    """A deep copy of a JSON value (objects and arrays copied, scalars shared); several
    times faster than copy.deepcopy, which keeps a memo for arbitrary object graphs."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return copy.deepcopy(value)


def _short(value: Any) -> str:
    import json
    text = json.dumps(value, separators=(",", ":"))
    return text if len(text) <= 200 else text[:200] + "..."
