"""ARNs, names and error shapes of the Step Functions API as `unumctl serve` speaks it.

Source: the AWS Step Functions API reference (StartExecution, DescribeExecution, "Common
Errors"), the ARN formats of the Step Functions developer guide, and the AWS JSON 1.0
protocol (errors are HTTP 400 with a body `{"__type": NAME, "message": TEXT}`).

    arn:aws:states:<region>:<account>:stateMachine:<machine>
    arn:aws:states:<region>:<account>:execution:<machine>:<name>

A state machine of the service is an app (unumctl/serve/service.py) whose app name is
derived from the machine name (app_name_of), so machine names follow AWS's rule (API
reference, CreateStateMachine `name` / StateMachineListItem `name`: 1-80 characters, none of
white space, `< > { } [ ]`, `? *`, `" # % \\ ^ | ~ ` $ & , ; : /`, control characters
U+0000-001F, U+007F-009F, U+FFFE-FFFF, surrogates U+D800-DFFF). An execution is a session
of that app: execution names follow the same rule (API reference, StartExecution `name`),
and session_of maps one to its session id (runtime.payload.SESSION_ID_RE: 1-80 of
A-Z a-z 0-9 _ -, starting with a letter or digit): the name itself when it is one.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any

from runtime.payload import SESSION_ID_RE

__all__ = ["Arns", "CONTENT_TYPE", "SfnError", "TARGET_PREFIX", "app_name_of", "check_execution_name",
           "check_machine_name", "check_tags", "json_text", "page", "parse_json_field", "required",
           "session_of"]

DEFAULT_REGION = "us-east-1"
DEFAULT_ACCOUNT = "000000000000"  # never checked
CONTENT_TYPE = "application/x-amz-json-1.0"
TARGET_PREFIX = "AWSStepFunctions."
MAX_INPUT_BYTES = 256 * 1024  # Step Functions' limit on an execution input / task output

# state machine names as AWS accepts them (Step Functions API reference, CreateStateMachine
# `name`): 1-80 characters, none of white space, brackets, wildcards, the special characters
# below, control characters, U+FFFE-FFFF, surrogates
MACHINE_NAME_RE = re.compile("^[^\\s<>{}\\[\\]?*\"#%\\\\^|~`$&,;:/\u0000-\u001f\u007f-\u009f"
                             "\ufffe\uffff\ud800-\udfff]{1,80}$")
APP_NAME_RE = re.compile(r"^[a-z][a-z0-9-]{2,39}$")  # the manifest's app rule (unumctl/manifest.py)
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
    """An execution name as AWS accepts it (StartExecution `name`: the rule of MACHINE_NAME_RE);
    SfnError InvalidName otherwise."""
    if not isinstance(name, str) or not MACHINE_NAME_RE.fullmatch(name):
        raise SfnError("InvalidName", f"Invalid Name: {str(name)[:100]!r}: an execution name is 1-80 "
                       "characters without white space, brackets < > { } [ ], wildcards ? *, special "
                       "characters \" # % \\ ^ | ~ ` $ & , ; : / or control characters")
    return name


def session_of(name: str) -> str:
    """The session id of execution `name`: the name when it is a session id
    (SESSION_ID_RE), else its A-Z a-z 0-9 _ - (other characters as '-', at most 52, `x`
    in front when it does not start with a letter or digit) and 16 hex digits of a SHA-256
    of the name. The service records the names that are not their session id
    (service.py NAMES) to list them."""
    if SESSION_ID_RE.fullmatch(name):
        return name
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", name)[:52]
    if not base[:1].isascii() or not base[:1].isalnum():
        base = "x" + base[:51]
    return f"{base}-{hashlib.sha256(name.encode()).hexdigest()[:16]}"


def check_machine_name(name: Any) -> str:
    """A state machine name as AWS accepts it (MACHINE_NAME_RE); SfnError InvalidName otherwise."""
    if not isinstance(name, str) or not MACHINE_NAME_RE.fullmatch(name):
        raise SfnError("InvalidName", f"Invalid Name: {str(name)[:100]!r}: a state machine name is 1-80 "
                       "characters without white space, brackets < > { } [ ], wildcards ? *, special "
                       "characters \" # % \\ ^ | ~ ` $ & , ; : / or control characters")
    return name


def app_name_of(machine: str, revision: int = 1) -> str:
    """The app name (manifest rule: 3-40 of a-z 0-9 -, starting with a letter) of revision
    `revision` (1, 2, ... one per UpdateStateMachine) of state machine `machine`: the name
    itself for revision 1 of a name that is already a valid app name (so `$$.StateMachine.Name`
    reads it unchanged), else its letters, digits and '-' lower-cased (at most 31, `m-` in
    front when it does not start with a letter) and 8 hex digits of a SHA-256 of name and
    revision, so that names differing only in case or in characters an app name cannot hold
    stay distinct machines. Also the name of its directory under STATE/machines."""
    if revision == 1 and APP_NAME_RE.fullmatch(machine):
        return machine
    base = re.sub(r"[^a-z0-9-]+", "-", machine.lower()).strip("-")
    if not base[:1].isalpha() or not base.isascii():
        base = "m-" + base
    digest = hashlib.sha256(f"{machine}\0{revision}".encode()).hexdigest()[:8]
    return f"{base[:31].rstrip('-')}-{digest}"


# Tags (Step Functions API reference, Tag and TagResource): key 1-128 and value 0-256
# characters of Unicode letters, digits, white space and `_ . : / = + - @`. At most
# MAX_TAGS per resource: TooManyTags ("You've exceeded the number of tags allowed for a
# resource", TagResource). The number is in the developer guide's Quotas, "Restrictions
# related to tagging", which the text read for this did not include: 50 is the per-resource
# tag limit other AWS services document (e.g. CloudWatch Logs' TooManyTagsException: "A
# resource can have no more than 50 tags"); check it against that section.
MAX_TAGS = 50
_TAG_SYMBOLS = frozenset("_.:/=+-@")


class TooManyTags(SfnError):
    """TooManyTags, with the `resourceName` member the API reference gives it."""

    def __init__(self, arn: str):
        super().__init__("TooManyTags", f"Too many tags: '{arn}' would have more than {MAX_TAGS}")
        self.arn = arn

    def body(self) -> dict[str, str]:
        return {**super().body(), "resourceName": self.arn}


def _tag_text(text: Any, field: str, low: int, high: int) -> str:
    if (not isinstance(text, str) or not low <= len(text) <= high
            or not all(c.isalpha() or c.isdigit() or c.isspace() or c in _TAG_SYMBOLS for c in text)):
        raise SfnError("ValidationException", f"tag {field} {str(text)[:140]!r} must be {low}-{high} characters of "
                       "letters, digits, white space and _ . : / = + - @")
    return text


def check_tags(tags: Any, current: dict[str, str], arn: str) -> dict[str, str]:
    """`current` with the request's `tags` ([{"key", "value"}]) added or replaced; SfnError
    ValidationException for a malformed tag, TooManyTags past MAX_TAGS."""
    if not isinstance(tags, list):
        raise SfnError("ValidationException", "tags must be a list of {key, value}")
    out = dict(current)
    for t in tags:
        if not isinstance(t, dict):
            raise SfnError("ValidationException", "tags must be a list of {key, value}")
        out[_tag_text(t.get("key"), "key", 1, 128)] = _tag_text(t.get("value", ""), "value", 0, 256)
    if len(out) > MAX_TAGS:
        raise TooManyTags(arn)
    return out


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
