"""The ARNs a machine sees of itself in the context object (`$$.Execution.Id`,
`$$.StateMachine.Id`, `$$.Execution.RoleArn`; ASL spec "Context Object").

Step Functions ARNs are `arn:<partition>:states:<region>:<account>:execution:<machine>:<name>`
(AWS General Reference, "Amazon Resource Names"). The region and account come from the
environment variable STATES_ARN_ENV, set by the platform that runs the function:
runtime/aws/entry.py from the Lambda context's `invoked_function_arn`, `unumctl serve` from
its --region/--account, so that `$$.Execution.Id` equals the executionArn StartExecution
returned. Without it (local invoke, gcp): DEFAULT_STATES_ARN.
"""

from __future__ import annotations

import os
import re
from typing import Any

__all__ = ["DEFAULT_STATES_ARN", "STATES_ARN_ENV", "parse_function_name", "role_arn",
           "states_arn_of_function", "states_arn_prefix"]

STATES_ARN_ENV = "UNUM_STATES_ARN"  # arn:<partition>:states:<region>:<account>
DEFAULT_STATES_ARN = "arn:aws:states:us-east-1:000000000000"
_STATES = re.compile(r"arn:(aws[a-z-]*):states:([a-z0-9-]{1,30}):(\d{12})")
_FUNCTION = re.compile(r"arn:(aws[a-z-]*):lambda:([a-z0-9-]{1,30}):(\d{12}):function:[^:]+(:[^:]+)?")


def states_arn_prefix() -> str:
    """`arn:<partition>:states:<region>:<account>` from STATES_ARN_ENV when it has that
    shape, else DEFAULT_STATES_ARN."""
    value = os.environ.get(STATES_ARN_ENV, "")
    return value if _STATES.fullmatch(value) else DEFAULT_STATES_ARN


def role_arn(prefix: str) -> str:
    """The `$$.Execution.RoleArn` reported for a states ARN prefix (same partition and
    account; the role is never used): `arn:<partition>:iam::<account>:role/unum`."""
    m = _STATES.fullmatch(prefix) or _STATES.fullmatch(DEFAULT_STATES_ARN)
    assert m is not None  # DEFAULT_STATES_ARN matches
    return f"arn:{m.group(1)}:iam::{m.group(3)}:role/unum"


def states_arn_of_function(function_arn: object) -> str | None:
    """The states ARN prefix of the region and account of a Lambda function ARN
    (`arn:aws:lambda:eu-west-1:123456789012:function:F[:qualifier]` ->
    `arn:aws:states:eu-west-1:123456789012`), None for anything else."""
    m = _FUNCTION.fullmatch(function_arn) if isinstance(function_arn, str) else None
    return f"arn:{m.group(1)}:states:{m.group(2)}:{m.group(3)}" if m else None


# Lambda's FunctionName: a name, a partial ARN `123456789012:function:NAME` or a full ARN
# `arn:aws:lambda:REGION:ACCOUNT:function:NAME`, each optionally followed by `:QUALIFIER`,
# a version number or alias or `$LATEST` (Lambda API Reference, Invoke, "FunctionName": "You
# can append a version number or alias to any of the formats"; its pattern, simplified). The
# region and account are not checked: Step Functions takes a definition whose FunctionName has
# placeholders there (`arn:aws:lambda:REGION:ACCOUNT_ID:function:F`) and only the name matters.
_FUNCTION_NAME = re.compile(
    r"(?:arn:aws[a-zA-Z-]*:lambda:[^:]*:[^:]*:function:|[^:]+:function:|function:)?"
    r"(?P<name>[a-zA-Z0-9_.-]+)(?::(?P<qualifier>\$LATEST|[a-zA-Z0-9_-]+))?")


def parse_function_name(ref: Any) -> tuple[str, str | None] | None:
    """(function name, qualifier or None) of a Lambda FunctionName or function ARN in any
    form Lambda's Invoke takes: `MyFn`, `MyFn:$LATEST`, `MyFn:prod`, `MyFn:3`,
    `123456789012:function:MyFn[:q]`, `arn:aws:lambda:us-east-1:123456789012:function:MyFn[:q]`.
    None when `ref` has none of these shapes."""
    m = _FUNCTION_NAME.fullmatch(ref) if isinstance(ref, str) else None
    return (m.group("name"), m.group("qualifier")) if m else None
