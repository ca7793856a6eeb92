"""`unumctl invoke` through a running `unumctl serve` (its Step Functions API, stdlib HTTP):
no platform is started, the service's warm workers run the session.

Used by the local target (unumctl/local/target.py) when the app's state directory holds the
record of a live service (service.running_service) and no --faults are asked for.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from runtime.session import failure_item

from ..targets import TargetError
from .shapes import CONTENT_TYPE, TARGET_PREFIX, json_text

__all__ = ["call", "execution_arn", "result", "send_trigger", "start", "wait"]


def call(url: str, op: str, body: dict[str, Any], timeout: float = 30.0) -> dict[str, Any]:
    """One API call; returns the response object. Raises TargetError `Code: message` for an
    API error or when the service does not answer."""
    req = urllib.request.Request(url + "/", data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": CONTENT_TYPE, "X-Amz-Target": TARGET_PREFIX + op})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            err = json.loads(exc.read())
            raise TargetError(f"{err.get('__type')}: {err.get('message')}") from None
        except ValueError:
            raise TargetError(f"unumctl serve at {url}: HTTP {exc.code}") from None
    except OSError as exc:
        raise TargetError(f"unumctl serve at {url} does not answer ({exc}); stop it or remove its record") from None


def item_of(desc: dict[str, Any], where: str = "?") -> dict[str, Any] | None:
    """The session result item (runtime/session.py shape) of a DescribeExecution response,
    or None while it runs; a failure's "instance" is `where` (the API does not say which
    invocation failed: `unumctl describe APP SESSION` does)."""
    status = desc.get("status")
    if status == "RUNNING":
        return None
    if status == "SUCCEEDED":
        return {"status": "SUCCEEDED", "v": json.loads(desc.get("output") or "null")}
    return failure_item(where, desc.get("error") or "", desc.get("cause") or "")


def execution_arn(record: dict[str, Any], session: str) -> str:
    """The execution ARN of `session` on the state machine of service record `record`."""
    return record["machineArn"].replace(":stateMachine:", ":execution:") + f":{session}"


def start(record: dict[str, Any], value: Any, session: str) -> bool:
    """Start session `session` with `value` on the service of `record` (StartExecution);
    returns False when it exists with the same input (nothing started). TargetError for
    another input (ExecutionAlreadyExists) or when the service does not answer."""
    url = record["url"]
    try:
        call(url, "StartExecution", {"stateMachineArn": record["machineArn"], "name": session,
                                     "input": json_text(value)})
        return True
    except TargetError as exc:
        if not str(exc).startswith("ExecutionAlreadyExists"):
            raise
    desc = call(url, "DescribeExecution", {"executionArn": execution_arn(record, session)})
    if json.loads(desc.get("input") or "null") != json.loads(json_text(value)):
        raise TargetError(f"--session: session {session} already exists with a different input "
                          "(ExecutionAlreadyExists); use a new --session id, or the same input to "
                          "resume it") from None
    return False


def result(record: dict[str, Any], session: str) -> dict[str, Any] | None:
    """The result item of `session` on the service of `record` (DescribeExecution), None
    while it runs."""
    return item_of(call(record["url"], "DescribeExecution", {"executionArn": execution_arn(record, session)}),
                   record.get("machine", "?"))


def wait(record: dict[str, Any], session: str, timeout: float) -> dict[str, Any]:
    """Poll DescribeExecution until `session` ends; its result item. TargetError after
    `timeout` s (it keeps running there)."""
    deadline = time.monotonic() + timeout
    delay = 0.005
    while True:
        item = result(record, session)
        if item is not None:
            return item
        if time.monotonic() > deadline:
            raise TargetError(f"session {session} has no result after {timeout:.0f} s; it keeps running in "
                              f"unumctl serve ({record['url']})")
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def send_trigger(record: dict[str, Any], app: str, trigger: str, body: bytes,
                 idempotency_key: str | None = None, timeout: float = 960.0) -> tuple[int, dict[str, Any]]:
    """POST `body` to trigger `trigger` of app `app` on the service of `record`
    (`/apps/APP/triggers/NAME`, unumctl/serve/triggers.py), with an `Idempotency-Key`
    header when given: (HTTP status, response object). TargetError when the service does
    not answer. `timeout` covers an http trigger's longest wait (900 s)."""
    headers = {"Content-Type": "application/json"}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    req = urllib.request.Request(f"{record['url']}/apps/{app}/triggers/{trigger}", data=body, method="POST",
                                 headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as exc:
        try:
            return exc.code, json.loads(exc.read() or b"{}")
        except ValueError:
            return exc.code, {"error": f"HTTP {exc.code}"}
    except OSError as exc:
        raise TargetError(f"unumctl serve at {record['url']} does not answer ({exc})") from None
