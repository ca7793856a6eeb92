"""ASL intrinsic functions (`States.Format(...)` and friends) in `.$` payload-template fields.

Source: ASL spec "Intrinsic Functions" and the AWS Step Functions developer guide
"Intrinsic functions". The call text is tokenised and parsed by a small recursive-descent
parser (string literals in single quotes with `\\` escapes, numbers, null/true/false,
Paths, nested calls); nothing is passed to eval. Errors are AslError('States.Runtime') for
syntax and 'States.IntrinsicFailure' for bad arguments. Calls nest at most
MAX_DEPTH deep and a call text is at most MAX_LENGTH characters (so parsing and evaluation
never exhaust the Python stack).
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import re
import uuid
from typing import Any, Callable

from . import paths
from .errors import AslError

__all__ = ["check", "evaluate", "parse"]

MAX_DEPTH = 32  # nested calls, e.g. States.Array(States.Array(...)); AWS documents no limit
MAX_LENGTH = 65536  # characters of one call text

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<str>'(?:\\.|[^'\\])*')
    | (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<path>\$\$?(?:[A-Za-z_][A-Za-z0-9_]*)?(?:\.[^,()\s]*|\[[^\]]*\][^,()\s]*)*)
    | (?P<name>[A-Za-z][A-Za-z0-9_.]*)
    | (?P<punct>[(),])
    )""", re.VERBOSE)


def _tokens(text: str) -> list[tuple[str, str]]:
    out, pos = [], 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise AslError("States.Runtime", f"intrinsic function {_short(text)}: cannot parse at "
                           f"position {pos}: {text[pos:pos + 20]!r}")
        kind = m.lastgroup or ""  # every alternative of _TOKEN is a named group
        out.append((kind, m.group(kind)))
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return out


def _unquote(lit: str) -> str:
    body = lit[1:-1]
    return re.sub(r"\\(.)", lambda m: m.group(1), body)


class _Parser:
    def __init__(self, text: str):
        self.text = text
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def take(self, kind=None, value=None):
        tok = self.peek()
        if tok[0] is None or (kind and tok[0] != kind) or (value and tok[1] != value):
            raise AslError("States.Runtime", f"intrinsic function {_short(self.text)}: expected "
                           f"{value or kind}, got {tok[1]!r}")
        self.i += 1
        return tok

    def call(self):
        _, name = self.take("name")
        self.take("punct", "(")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise AslError("States.Runtime", f"intrinsic function {_short(self.text)}: calls nest "
                           f"more than {MAX_DEPTH} deep")
        args = []
        if self.peek() != ("punct", ")"):
            while True:
                args.append(self.arg())
                if self.peek() == ("punct", ","):
                    self.i += 1
                    continue
                break
        self.take("punct", ")")
        self.depth -= 1
        return ("call", name, args)

    def arg(self):
        kind, val = self.peek()
        if kind == "str":
            self.i += 1
            return ("lit", val)  # keep the raw literal: Format needs its escapes
        if kind == "num":
            self.i += 1
            return ("lit", float(val) if any(c in val for c in ".eE") else int(val))
        if kind == "path":
            self.i += 1
            return ("path", val)
        if kind == "name":
            if val in ("null", "true", "false"):
                self.i += 1
                return ("lit", {"null": None, "true": True, "false": False}[val])
            return self.call()
        raise AslError("States.Runtime", f"intrinsic function {_short(self.text)}: unexpected {val!r}")


def _short(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:80] + "...")


def parse(text: str):
    """Parse an intrinsic call; returns a tree ("call", name, [args]) whose args are
    ("lit", value), ("path", text) or calls. Raises AslError('States.Runtime') (one line) for
    syntax errors, calls nested deeper than MAX_DEPTH and texts longer than MAX_LENGTH."""
    if not isinstance(text, str):
        raise AslError("States.Runtime", f"intrinsic function {text!r}: must be a string")
    if len(text) > MAX_LENGTH:
        raise AslError("States.Runtime", f"intrinsic function {_short(text)}: longer than "
                       f"{MAX_LENGTH} characters")
    p = _Parser(text)
    tree = p.call()
    if p.i != len(p.toks):
        raise AslError("States.Runtime", f"intrinsic function {_short(text)}: trailing text")
    return tree


def check(text: str) -> None:
    """Static check used by the validator: `text` parses, names known functions (AWS
    developer guide "Intrinsic functions") and its path arguments are valid JSONPaths.
    Raises AslError('States.Runtime') with a one-line message."""
    todo = [parse(text)]
    while todo:
        _, name, args = todo.pop()
        if name != "States.Format" and name not in _FUNCS:
            raise AslError("States.Runtime", f"unknown intrinsic function {name!r} in {_short(text)}")
        for a in args:
            if a[0] == "call":
                todo.append(a)
            elif a[0] == "path":
                paths.validate_path(a[1])


def evaluate(text: str, data: Any, context: Any) -> Any:
    """Evaluate the intrinsic call `text` against the state input `data` and `$$` `context`."""
    return _eval(parse(text), data, context, text)


def _value(node, data, context, text):
    kind = node[0]
    if kind == "lit":
        v = node[1]
        return _unquote(v) if isinstance(v, str) else v
    if kind == "path":
        return paths.read(node[1], data, context)
    return _eval(node, data, context, text)


def _fail(name: str, msg: str) -> AslError:
    return AslError("States.IntrinsicFailure", f"{name}: {msg}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) or (isinstance(v, float) and v.is_integer())


def _format(template_node, args, data, context, text):
    if template_node[0] == "lit" and isinstance(template_node[1], str):
        raw = template_node[1][1:-1]
    else:
        raw = _value(template_node, data, context, text)
        if not isinstance(raw, str):
            raise _fail("States.Format", "the first argument must be a string")
        raw = raw.replace("\\", "\\\\")
    out, i, k = [], 0, 0
    while i < len(raw):
        ch = raw[i]
        if ch == "\\" and i + 1 < len(raw):
            out.append(raw[i + 1])
            i += 2
            continue
        if raw.startswith("{}", i):
            if k >= len(args):
                raise _fail("States.Format", "more placeholders than arguments")
            v = args[k]
            k += 1
            out.append(_to_text(v))
            i += 2
            continue
        out.append(ch)
        i += 1
    if k != len(args):
        raise _fail("States.Format", f"{len(args)} arguments for {k} placeholders")
    return "".join(out)


def _to_text(v: Any) -> str:
    """How States.Format renders an argument (as AWS's Java implementation: strings raw,
    objects `{k=v, k2=v2}`, arrays `[a, b]`)."""
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_to_text(x)}" for k, x in v.items()) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_to_text(x) for x in v) + "]"
    return json.dumps(v)


def _eval(node, data, context, text):
    _, name, argn = node
    if name == "States.Format":
        if not argn:
            raise _fail(name, "needs a template")
        args = [_value(a, data, context, text) for a in argn[1:]]
        return _format(argn[0], args, data, context, text)
    args = [_value(a, data, context, text) for a in argn]
    fn = _FUNCS.get(name)
    if fn is None:
        raise AslError("States.Runtime", f"unknown intrinsic function {name!r} in {text!r}")
    try:
        return fn(*args)
    except AslError:
        raise
    except Exception as exc:  # noqa: BLE001 - an intrinsic's Python error is its States.Runtime failure
        raise _fail(name, f"{type(exc).__name__}: {exc}") from None


def _array_partition(arr, size):
    if not isinstance(arr, list) or not _is_int(size) or size <= 0:
        raise _fail("States.ArrayPartition", "expects an array and a positive integer chunk size")
    size = int(size)
    return [arr[i:i + size] for i in range(0, len(arr), size)]


def _array_range(start, end, step):
    if not all(_is_int(x) for x in (start, end, step)) or step == 0:
        raise _fail("States.ArrayRange", "expects integer start, end and a non-zero step")
    start, end, step = int(start), int(end), int(step)
    out = list(range(start, end + (1 if step > 0 else -1), step))
    if len(out) > 1000:
        raise _fail("States.ArrayRange", "the result has more than 1000 items")
    return out


def _array_get_item(arr, index):
    if not isinstance(arr, list) or not _is_int(index):
        raise _fail("States.ArrayGetItem", "expects an array and an integer index")
    index = int(index)
    if not 0 <= index < len(arr):
        raise _fail("States.ArrayGetItem", f"index {index} out of bounds for length {len(arr)}")
    return arr[index]


def _array_unique(arr):
    if not isinstance(arr, list):
        raise _fail("States.ArrayUnique", "expects an array")
    out: list[Any] = []
    seen: set[str] = set()
    for v in arr:
        key = json.dumps(v, sort_keys=True)
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _b64encode(s):
    if not isinstance(s, str):
        raise _fail("States.Base64Encode", "expects a string")
    if len(s) > 10000:
        raise _fail("States.Base64Encode", "input exceeds 10,000 characters")
    return base64.b64encode(s.encode()).decode()


def _b64decode(s):
    if not isinstance(s, str):
        raise _fail("States.Base64Decode", "expects a string")
    if len(s) > 10000:
        raise _fail("States.Base64Decode", "input exceeds 10,000 characters")
    return base64.b64decode(s).decode()


_HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


def _hash(value, algorithm):
    if algorithm not in _HASHES:
        raise _fail("States.Hash", f"algorithm {algorithm!r} not in {', '.join(_HASHES)}")
    if value is None:
        raise _fail("States.Hash", "the data is null")
    text = value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if len(text) > 10000:
        raise _fail("States.Hash", "input exceeds 10,000 characters")
    return hashlib.new(_HASHES[algorithm], text.encode()).hexdigest()


def _json_merge(a, b, deep):
    if deep is not False:
        raise _fail("States.JsonMerge", "only shallow merge (false) is supported")
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise _fail("States.JsonMerge", "expects two JSON objects")
    return {**a, **b}


def _round(name: str, v: Any) -> int:
    """Numbers are rounded half up (Java Math.round), as AWS does for MathAdd/MathRandom."""
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise _fail(name, f"expects numbers, got {v!r}")
    return int(math.floor(v + 0.5)) if isinstance(v, float) else v


def _math_random(start, end, seed=None):
    start, end = _round("States.MathRandom", start), _round("States.MathRandom", end)
    rng = random.Random(_round("States.MathRandom", seed)) if seed is not None else random
    return rng.randrange(start, end)


def _math_add(a, b):
    return _round("States.MathAdd", a) + _round("States.MathAdd", b)


def _string_split(s, delims):
    if not isinstance(s, str) or not isinstance(delims, str):
        raise _fail("States.StringSplit", "expects two strings")
    if not delims:
        return [s]
    parts = re.split("|".join(re.escape(c) for c in delims), s)
    return [p for p in parts if p != ""]


def _string_to_json(s):
    if not isinstance(s, str):
        raise _fail("States.StringToJson", "expects a string")
    if not s.strip():
        return None
    return json.loads(s)


def _array_contains(arr, v):
    if not isinstance(arr, list):
        raise _fail("States.ArrayContains", "expects an array")
    return v in arr


def _array_length(arr):
    if not isinstance(arr, list):
        raise _fail("States.ArrayLength", "expects an array")
    return len(arr)


_FUNCS: dict[str, Callable[..., Any]] = {
    "States.StringToJson": _string_to_json,
    "States.JsonToString": lambda v: json.dumps(v, separators=(",", ":")),
    "States.Array": lambda *a: list(a),
    "States.ArrayPartition": _array_partition,
    "States.ArrayContains": _array_contains,
    "States.ArrayRange": _array_range,
    "States.ArrayGetItem": _array_get_item,
    "States.ArrayLength": _array_length,
    "States.ArrayUnique": _array_unique,
    "States.Base64Encode": _b64encode,
    "States.Base64Decode": _b64decode,
    "States.Hash": _hash,
    "States.JsonMerge": _json_merge,
    "States.MathRandom": _math_random,
    "States.MathAdd": _math_add,
    "States.StringSplit": _string_split,
    "States.UUID": lambda: str(uuid.uuid4()),
}
