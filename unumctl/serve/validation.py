"""ValidateStateMachineDefinition: the compiler's verdict on a definition (unumctl/asl:
validate() then the compilation against the Lambda functions `serve` hosts, what
CreateStateMachine runs) as AWS's diagnostics.

Source: the Step Functions API reference, ValidateStateMachineDefinition (request
`definition`, `type`, `severity`, `maxResults`; response `result` OK | FAIL, `diagnostics`,
`truncated`) and ValidateStateMachineDefinitionDiagnostic (`severity` ERROR | WARNING,
`code`, `message`, `location`; error codes INVALID_JSON_DESCRIPTION, MISSING_DESCRIPTION,
SCHEMA_VALIDATION_FAILED, INVALID_RESOURCE, ...). AWS notes that clients should rely on
`result` only, not on the count, order or wording of diagnostics.

The compiler stops at the first error, so a FAIL has exactly one ERROR diagnostic; there
are no WARNING diagnostics. Its `location` is the JSON pointer of the field the compiler's
message names (`States.Check.Choices[0]` -> `/States/Check/Choices/0`, state names with dots
resolved against the definition); its code is INVALID_RESOURCE when that field is a Task's
`Resource` (an unknown Lambda function, an integration the compiler refuses),
SCHEMA_VALIDATION_FAILED otherwise.
"""

from __future__ import annotations

import json
from typing import Any

from runtime.errors import IRError

from ..asl import resolver
from ..asl.compiler import compile_definition

__all__ = ["diagnostics"]

SOURCE = "definition"  # what the compiler's messages start with


def pointer(where: str, doc: Any) -> str:
    """The JSON pointer (RFC 6901) of the compiler's field path `where` (`States.A.B[0].C`)
    in `doc`, matching the longest key at each object so that keys containing '.' or '['
    resolve; the part that matches nothing is appended as one segment."""
    out: list[str] = []
    node, rest = doc, where
    while rest:
        if rest.startswith("["):
            end = rest.find("]")
            if end < 0 or not rest[1:end].isdigit():
                break
            out.append(rest[1:end])
            node = node[int(rest[1:end])] if isinstance(node, list) and int(rest[1:end]) < len(node) else None
            rest = rest[end + 1:].removeprefix(".")
            continue
        if not isinstance(node, dict):
            break
        keys = [k for k in node if isinstance(k, str) and rest.startswith(k)
                and (len(rest) == len(k) or rest[len(k)] in ".[")]
        if not keys:
            break
        key = max(keys, key=len)
        out.append(key)
        node = node[key]
        rest = rest[len(key):].removeprefix(".")
    if rest:
        out.append(rest)
    return "/" + "/".join(s.replace("~", "~0").replace("/", "~1") for s in out)


def diagnostics(definition: str, functions: dict[str, dict[str, Any]]) -> list[dict[str, str]]:
    """The diagnostics of ASL text `definition` compiled against `functions` (function name
    -> manifest spec dict with `code`): [] when CreateStateMachine would accept it, else one
    {"severity": "ERROR", "code", "message", "location"?}."""
    if not definition.strip():
        return [{"severity": "ERROR", "code": "MISSING_DESCRIPTION", "message": "the definition is empty"}]
    try:
        doc = json.loads(definition)
    except ValueError as exc:
        return [{"severity": "ERROR", "code": "INVALID_JSON_DESCRIPTION", "message": f"not JSON: {exc}"}]
    except RecursionError:
        return [{"severity": "ERROR", "code": "INVALID_JSON_DESCRIPTION", "message": "nested too deep"}]
    try:
        compile_definition(doc, resolver(functions), sorted(functions), source=SOURCE)
    except IRError as exc:
        text = str(exc).splitlines()[0]
        body = text.removeprefix(f"{SOURCE}: ")
        where, sep, message = body.partition(": ")
        if not sep:
            return [{"severity": "ERROR", "code": "SCHEMA_VALIDATION_FAILED", "message": text}]
        loc = pointer(where, doc) if where != "(top)" else "/"
        code = "INVALID_RESOURCE" if loc.endswith("/Resource") else "SCHEMA_VALIDATION_FAILED"
        return [{"severity": "ERROR", "code": code, "message": message, "location": loc}]
    return []
