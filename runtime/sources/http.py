"""HTTP triggers (`type: http`): the session an HTTP request asks for.

Event shape, as delivered to the entry function: the Lambda function URL request, the API
Gateway HTTP API payload format 2.0: {"version": "2.0", "rawPath", "headers" (names in
lower case), "body", "isBase64Encoded", "requestContext": {"requestId", "http":
{"method", "path"}}} (https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html,
"Request payload"). The GCP adapter and `unumctl serve` hand a request over in the same
shape.

The key is `http:<Idempotency-Key header>` when the request has one (a client's retry of a
request names the session it started; Stripe's and the IETF draft's header,
https://datatracker.ietf.org/doc/draft-ietf-httpapi-idempotency-key-header/), else
`http-request:<requestContext.requestId>`: every request without the header starts its own
session. The input is the body, parsed as JSON when it is JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .base import SourceEventError, Start, decoded_body, field_of, text_of

__all__ = ["IDEMPOTENCY_HEADER", "http_starts"]

IDEMPOTENCY_HEADER = "idempotency-key"


def http_starts(name: str, event: Mapping[str, Any]) -> list[Start]:
    """The one Start of an HTTP request for trigger `name`. SourceEventError for a request
    of another shape (no headers object, a body that is not a string, neither an
    Idempotency-Key header nor a request id)."""
    where = f"triggers.{name}: http event"
    headers = field_of(event, "headers", where, dict)
    lower = {str(k).lower(): v for k, v in headers.items()}
    body = event.get("body")
    if body is not None and not isinstance(body, str):
        raise SourceEventError(f"{where}.body: expected a string")
    value = decoded_body(text_of(body, bool(event.get("isBase64Encoded")), f"{where}.body"))
    rc = _object(event.get("requestContext"))
    http = _object(rc.get("http"))
    ctx: dict[str, Any] = {"trigger": name, "source": "http", "method": http.get("method"),
                           "path": event.get("rawPath", http.get("path"))}
    key = lower.get(IDEMPOTENCY_HEADER)
    if isinstance(key, str) and key:
        ctx["idempotency_key"] = key
        return [Start(f"http:{key}", value, ctx)]
    request_id = rc.get("requestId")
    if not isinstance(request_id, str) or not request_id:
        raise SourceEventError(f"{where}: neither an Idempotency-Key header nor requestContext.requestId")
    return [Start(f"http-request:{request_id}", value, ctx)]


def _object(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
