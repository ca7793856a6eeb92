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
