"""ARNs, names and error shapes of the Step Functions API as `unumctl serve` speaks it.

Source: the AWS Step Functions API reference (StartExecution, DescribeExecution, "Common
Errors"), the ARN formats of the Step Functions developer guide, and the AWS JSON 1.0
protocol (errors are HTTP 400 with a body `{"__type": NAME, "message": TEXT}`).

    arn:aws:states:<region>:<account>:stateMachine:<machine>
    arn:aws:states:<region>:<account>:execution:<machine>:<name>

A state machine of the service is an app (unumctl/serve/service.py); an execution is a
session of that app whose id is the execution name, so execution names are restricted to
session ids (runtime.payload.SESSION_ID_RE: 1-80 of A-Z a-z 0-9 _ -, starting with a
letter or digit), a subset of the names AWS accepts.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from runtime.payload import SESSION_ID_RE

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "000000000000"  # never checked
CONTENT_TYPE = "application/x-amz-json-1.0"
TARGET_PREFIX = "AWSStepFunctions."
MAX_INPUT_BYTES = 256 * 1024  # Step Functions' limit on an execution input / task output

# state machine names: the app-name rule of the manifest (unumctl/manifest.py) with upper
# case allowed; the app is the lower-cased name
MACHINE_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9-]{2,39}$")
_MACHINE_ARN = re.compile(r"^arn:aws[a-z-]*:states:([a-z0-9-]+):(\d{12}):stateMachine:([^:]+)$")
_EXECUTION_ARN = re.compile(r"^arn:aws[a-z-]*:states:([a-z0-9-]+):(\d{12}):(?:execution|express):([^:]+):([^:]+)$")


class SfnError(Exception):
    """An API error as AWS returns it: HTTP `status` (400 for client errors) with the JSON
    body {"__type": code, "message": message}; `code` is the API reference's error name
    (e.g. ExecutionAlreadyExists, StateMachineDoesNotExist, InvalidArn)."""

    def __init__(self, code: str, message: str, status: int = 400):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status

    def body(self) -> dict[str, str]:
        return {"__type": self.code, "message": self.message}


@dataclass(frozen=True)
class Arns:
    """ARN builder and parser for one service (`region`, 12-digit `account`)."""

    region: str = DEFAULT_REGION
    account: str = DEFAULT_ACCOUNT

    def __post_init__(self) -> None:
        """ValueError naming the option when a part would make ARNs this parser refuses."""
        if not re.fullmatch(r"[a-z0-9-]{1,30}", self.region):
            raise ValueError(f"--region: {self.region[:40]!r} is not a region name (e.g. us-east-1)")
        if not re.fullmatch(r"\d{12}", self.account):
            raise ValueError(f"--account: {self.account[:40]!r} must be 12 digits (e.g. 123456789012)")

    @property
    def prefix(self) -> str:
        """`arn:aws:states:<region>:<account>`, what the ARNs start with (and the runtime's
        `$$.Execution.Id`, through runtime/asl/arns.py STATES_ARN_ENV)."""
        return f"arn:aws:states:{self.region}:{self.account}"

    def machine(self, name: str) -> str:
        return f"{self.prefix}:stateMachine:{name}"

    def execution(self, machine: str, name: str) -> str:
        return f"{self.prefix}:execution:{machine}:{name}"

    def machine_name(self, arn: Any, field: str = "stateMachineArn") -> str:
        """The machine name of a state machine ARN; SfnError InvalidArn otherwise."""
        m = _MACHINE_ARN.fullmatch(arn) if isinstance(arn, str) else None
        if m is None:
            raise SfnError("InvalidArn", f"Invalid Arn: '{field}: {str(arn)[:200]} is not a state machine ARN "
                           f"(arn:aws:states:{self.region}:{self.account}:stateMachine:NAME)'")
        return m.group(3)

    def execution_name(self, arn: Any, field: str = "executionArn") -> tuple[str, str]:
        """(machine, execution name) of an execution ARN; SfnError InvalidArn otherwise."""
        m = _EXECUTION_ARN.fullmatch(arn) if isinstance(arn, str) else None
        if m is None:
            raise SfnError("InvalidArn", f"Invalid Arn: '{field}: {str(arn)[:200]} is not an execution ARN "
                           f"(arn:aws:states:{self.region}:{self.account}:execution:MACHINE:NAME)'")
        return m.group(3), m.group(4)


def check_execution_name(name: Any) -> str:
    """An execution name usable as a session id; SfnError InvalidName otherwise."""
    if not isinstance(name, str) or not SESSION_ID_RE.fullmatch(name):
        raise SfnError("InvalidName", f"Invalid Name: '{str(name)[:100]}': unumctl serve accepts 1-80 of "
                       "A-Z a-z 0-9 _ -, starting with a letter or digit")
    return name


def check_machine_name(name: Any) -> str:
    """A state machine name usable as an app name; SfnError InvalidName otherwise."""
    if not isinstance(name, str) or not MACHINE_NAME_RE.fullmatch(name):
        raise SfnError("InvalidName", f"Invalid Name: '{str(name)[:100]}': unumctl serve accepts 3-40 of "
                       "A-Z a-z 0-9 -, starting with a letter")
    return name


def parse_json_field(text: Any, field: str, code: str = "InvalidExecutionInput") -> Any:
    """Decode a JSON-text request field (`input`, `output`); SfnError `code` when it is not a
    string of JSON at most MAX_INPUT_BYTES long (or is nested too deep to parse)."""
    if text is None:
        text = "{}"
    if not isinstance(text, str):
        raise SfnError("ValidationException", f"{field} must be a string of JSON text")
    if len(text.encode()) > MAX_INPUT_BYTES:
        raise SfnError(code, f"{field} is larger than {MAX_INPUT_BYTES} bytes")
    try:
        return json.loads(text)
    except ValueError as exc:
        raise SfnError(code, f"Invalid State Machine Execution Input: '{field}: {exc}'") from None
    except RecursionError:
        raise SfnError(code, f"Invalid State Machine Execution Input: '{field}: nested too deep'") from None


def json_text(value: Any) -> str:
    """A JSON value as the API's JSON-text fields carry it (input, output)."""
    return json.dumps(value, separators=(",", ":"))


def required(body: dict[str, Any], field: str) -> Any:
    """A required request member; SfnError ValidationException naming it when missing."""
    if body.get(field) in (None, ""):
        raise SfnError("ValidationException", f"1 validation error detected: Value null at '{field}' "
                       "failed to satisfy constraint: Member must not be null")
    return body[field]


def page(items: list[Any], body: dict[str, Any], key: str) -> dict[str, Any]:
    """One page of `items` by `maxResults` (1-1000, default 100) and `nextToken` (an offset
    this service issued): {key: [...], "nextToken"?}. SfnError InvalidToken for a bad token."""
    size = body.get("maxResults") or 100
    if not isinstance(size, int) or not 0 < size <= 1000:
        raise SfnError("ValidationException", "maxResults must be between 1 and 1000")
    token = body.get("nextToken")
    start = 0
    if token:
        if not isinstance(token, str) or not token.startswith("o-") or not token[2:].isdigit():
            raise SfnError("InvalidToken", f"Invalid Token: '{str(token)[:100]}'")
        start = int(token[2:])
    out: dict[str, Any] = {key: items[start:start + size]}
    if start + size < len(items):
        out["nextToken"] = f"o-{start + size}"
    return out
