"""Lambda entry points: `lambda_handler` for every Unum function and `error_handler` for the
app's on-failure destination.

`lambda_handler(event, context)`: `event` is the Unum wire payload (runtime/payload.py); the
engine is built once per execution environment from the bundle next to this file and the
environment variables the rendered Terraform sets (runtime/aws/__init__.py). Exceptions
other than user errors (which the engine records as the session's failure) propagate, so
Lambda retries the asynchronous invocation (`maximum_retry_attempts`) and then sends the
event to the on-failure destination.

History (runtime.ports.Events, runtime/aws/history.py): with `runtime.history` full or
session-only, the engine gets a CloudWatchEvents adapter (event lines on stdout, the session
index in the table); each execution is recorded with Lambda's request id
(`context.aws_request_id`, kept by Lambda's own retries of an asynchronous event) and the
delivery attempt the error handler's re-invocations carry. The error handler records its
re-invocations (`retried`), the give-up (`gave_up`) and the session's end.

`error_handler(event, context)`: receives Lambda's destination record for an invocation that
failed every platform attempt (Lambda developer guide, "Adding a destination": fields
`requestContext.functionArn`, `requestContext.approximateInvokeCount`, `requestPayload`,
`responsePayload`). It records the failure for the session (item `failure/<instance>`),
and re-invokes the function while the total number of delivery attempts is below
UNUM_MAX_DELIVERY_ATTEMPTS (the manifest's runtime.max_delivery_attempts); after that it
records the session as FAILED (runtime/session.py `give_up`) and ends it.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from ..asl.arns import STATES_ARN_ENV, states_arn_of_function
from ..errors import UnumError
from ..payload import DELIVERY_ATTEMPTS, check_session_id
from ..platform_events import record_platform_event
from ..ports import emit_safely
from ..session import Retention, give_up, session_status
from . import (ENV_BLOB_PREFIX, ENV_BUCKET, ENV_FUNCTION_PREFIX, ENV_MAX_ATTEMPTS,
               ENV_HISTORY, ENV_RESULT_RETENTION, ENV_TABLE)
from .datastore import DynamoDBDatastore, S3BlobStore
from .history import CloudWatchEvents
from .invoker import LambdaInvoker
from .pins import SessionPins

__all__ = ["error_handler", "lambda_handler"]

ATTEMPTS_KEY = DELIVERY_ATTEMPTS  # payload field of error-handler re-invocations (not inherited)
_ENGINE = None


def _env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        raise RuntimeError(f"environment variable {name} is not set; the function must be deployed "
                           "by `unumctl apply --cloud aws`, which sets it")
    return value


def adapters() -> tuple[DynamoDBDatastore, S3BlobStore, LambdaInvoker]:
    """The datastore, blob store and invoker configured by the environment (the invoker
    pins each session to its version when the function belongs to one: pins.py)."""
    ds = DynamoDBDatastore(_env(ENV_TABLE))
    return (ds, S3BlobStore(_env(ENV_BUCKET), os.environ.get(ENV_BLOB_PREFIX, "s/")),
            LambdaInvoker(os.environ.get(ENV_FUNCTION_PREFIX, ""), pins=SessionPins.from_env(ds)))


def _engine():
    global _ENGINE
    if _ENGINE is None:
        from ..bundle import load_bundle

        root = Path(os.environ.get("LAMBDA_TASK_ROOT") or Path(__file__).resolve().parents[2])
        ds, blobs, invoker = adapters()
        bundle = load_bundle(root)
        level = bundle.options.history
        events = None
        if level != "off":
            events = CloudWatchEvents(ds.client, ds.table, level, bundle.options.retention)
        _ENGINE = bundle.engine(ds, invoker, blobs, events=events)
    return _ENGINE


def _delivery(event: Any, context: Any) -> dict[str, Any]:
    """What the history records of this delivery: Lambda's request id and the attempt
    (1 + the attempts of earlier error-handler rounds; Lambda's own retries of the same
    event keep the request id, and the reader numbers them from the log's START lines)."""
    base = event.get(ATTEMPTS_KEY, 0) if isinstance(event, dict) else 0
    return {"attempt": (int(base) if isinstance(base, int) else 0) + 1,
            "request_id": getattr(context, "aws_request_id", None)}


def lambda_handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Run one execution of a Unum invocation; returns {"status", "session", "instance"}.
    The first call notes the region and account of the function's ARN for the ASL context
    object (runtime/asl/arns.py)."""
    if STATES_ARN_ENV not in os.environ:
        prefix = states_arn_of_function(getattr(context, "invoked_function_arn", None))
        if prefix:
            os.environ[STATES_ARN_ENV] = prefix
    out = _engine().handle(event, _delivery(event, context))
    return {"status": out.status, "session": out.session, "instance": out.instance,
            "detail": out.detail}


def error_handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Handle one on-failure destination record (see the module docstring).

    Returns {"action": "reinvoked"|"failed"|"ignored", ...}."""
    ctx = event.get("requestContext") or {}
    payload = event.get("requestPayload")
    arn = str(ctx.get("functionArn", ""))
    function = arn.split(":function:")[-1].split(":")[0] if ":function:" in arn else arn
    if not isinstance(payload, dict) or not payload.get("Session") or not function:
        print(f"unum error handler: record without a session payload: {json.dumps(event)[:500]}",
              file=sys.stderr)
        return {"action": "ignored"}
    try:
        session = check_session_id(payload["Session"])
    except UnumError as exc:
        print(f"unum error handler: {exc}", file=sys.stderr)
        return {"action": "ignored"}
    attempts = int(payload.get(ATTEMPTS_KEY, 0)) + int(ctx.get("approximateInvokeCount", 1))
    response = event.get("responsePayload") or {}
    error = str(response.get("errorType") or ctx.get("condition") or "Unum.InvocationFailed")
    cause = str(response.get("errorMessage") or "")
    prefix = os.environ.get(ENV_FUNCTION_PREFIX, "")
    unum_name = function[len(prefix):] if prefix and function.startswith(prefix) else function
    ds, blobs, invoker = adapters()
    now = time.time()
    retention = Retention(result=int(os.environ.get(ENV_RESULT_RETENTION, str(7 * 86400))))
    level = os.environ.get(ENV_HISTORY, "full")
    events = CloudWatchEvents(ds.client, ds.table, level, retention) if level != "off" else None
    instance = f"{unum_name}@{attempts}"
    ds.put(session, f"failure/{instance}", {"error": error, "cause": cause[:2000],
                                            "attempts": attempts}, retention.result_expiry(now))
    max_attempts = int(os.environ.get(ENV_MAX_ATTEMPTS, "3"))
    request_id = str(ctx.get("requestId") or "") or None
    if attempts < max_attempts:
        invoker.invoke_many([(unum_name, {**payload, ATTEMPTS_KEY: attempts})])
        record_platform_event(events, "retried", unum_name, payload, attempts + 1, f"{error}: {cause}",
                              error, request_id, now, log=_log)
        return {"action": "reinvoked", "session": session, "attempts": attempts}
    reason = f"{unum_name} failed {attempts} delivery attempts; last: {error}: {cause}"
    result = give_up(ds, blobs, session, unum_name, "Unum.RetriesExhausted", reason, retention, now)
    record_platform_event(events, "gave_up", unum_name, payload, attempts, reason, error, request_id, now,
                          log=_log)
    if events is not None:
        emit_safely(events.session_ended, session, session_status(result), now, result, log=_log)
    return {"action": "failed", "session": session, "attempts": attempts}


def _log(msg: str) -> None:
    print(f"unum error handler: {msg}", file=sys.stderr)

