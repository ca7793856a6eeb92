"""Quoting manifest values for Terraform's native syntax (HCL).

Every value of the manifest that reaches a rendered `.tf` file goes through `hcl_value`, so it
arrives as a literal and never as syntax: a quoted string with `"` and `\\` escaped, control
characters as `\\uNNNN`, and the template sequences `${` and `%{` doubled to `$${` and `%%{`
(HCL's escapes for a literal `${` and `%{`, which would otherwise interpolate, e.g.
`${file("~/.aws/credentials")}`). Source: HCL native syntax specification, "Template
Expressions" and "String Literals"
(https://github.com/hashicorp/hcl/blob/main/hclsyntax/spec.md#template-expressions).

Names Terraform itself parses (a backend type, block argument names) cannot be quoted: they
must match `IDENTIFIER` (checked by `hcl_identifier`; a strict subset of HCL's identifiers,
without `-`).
"""

from __future__ import annotations

import math
import re
from typing import Any

__all__ = ["HclValueError", "hcl_fragment", "hcl_identifier", "hcl_value"]

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


class HclValueError(ValueError):
    """A value that cannot be written into Terraform as a literal (message names the value)."""


def hcl_string(s: str) -> str:
    """`s` as an HCL quoted string literal, inert: no interpolation or directive survives."""
    out = []
    for ch in s:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    text = "".join(out).replace("${", "$${").replace("%{", "%%{")
    return f'"{text}"'


def hcl_fragment(s: str) -> str:
    """`s` escaped for use inside an HCL quoted string (hcl_string without the quotes), e.g.
    after an interpolation the template writes itself: `"${path.root}/<fragment>"`."""
    return hcl_string(s)[1:-1]


def hcl_value(v: Any) -> str:
    """An HCL literal for a JSON-like value: str, bool, int, finite float, None, list, dict
    (dict keys are quoted strings). Raises HclValueError for anything else (e.g. NaN, bytes)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise HclValueError(f"{v!r} is not a finite number")
        return repr(v)
    if isinstance(v, str):
        return hcl_string(v)
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(hcl_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{hcl_string(str(k))} = {hcl_value(x)}" for k, x in v.items()) + " }"
    raise HclValueError(f"{type(v).__name__} value {str(v)[:40]!r} cannot be written to Terraform")


def hcl_identifier(name: Any) -> bool:
    """True when `name` is an HCL identifier (letters, digits, `_`, not starting with a digit)."""
    return isinstance(name, str) and IDENTIFIER.fullmatch(name) is not None
