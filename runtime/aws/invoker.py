"""`Invoker` on AWS Lambda: asynchronous `Invoke` with `InvocationType='Event'`.

Source: Lambda API reference, Invoke (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html):
an asynchronous invocation returns 202 once the event is queued; "For asynchronous
invocations, the maximum payload size is 1 MB" (6 MB synchronous). The deprecated
InvokeAsync keeps 256 KB ("For larger payloads, for up to 1MB, use Invoke"); this module
uses Invoke. A fan-out's calls are issued concurrently from
a thread pool and `invoke_many` returns only when every call was accepted (seed 001 §5.2
blames one-at-a-time invocation for fan-out latency; docs/architecture.md §4).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from ..ports import Invoker
from .datastore import _client
from .pins import SessionPins

__all__ = ["ASYNC_PAYLOAD_LIMIT", "LambdaInvoker"]

# Lambda Invoke, InvocationType Event: "the maximum payload size is 1 MB" (API_Invoke.html,
# module docstring). The page does not say whether 1 MB is 10**6 or 2**20 bytes: the smaller
# is used, so that no invocation is refused for its size (values between the two go by
# reference).
ASYNC_PAYLOAD_LIMIT = 1_000_000
_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=int(os.environ.get("UNUM_INVOKE_THREADS", "32")),
                                   thread_name_prefix="unum-invoke")
    return _POOL


class InvokeRejected(Exception):
    """Lambda did not accept an asynchronous invocation (status other than 202)."""


class LambdaInvoker(Invoker):
    """Invoke `<function_prefix><Function>` asynchronously; with `pins`, qualified by the
    version of the session's app version (runtime/aws/pins.py).

    `max_payload_bytes` leaves 16 KB of the 1 MB async limit for the payload envelope
    (session, fan-out frames, parents); larger values go by reference (Data.Source='blob').
    Raises InvokeRejected or botocore ClientError (the caller's own invocation then fails
    and is retried by Lambda, which re-invokes with identical, harmless duplicates)."""

    max_payload_bytes = ASYNC_PAYLOAD_LIMIT - 16 * 1024

    def __init__(self, function_prefix: str, client=None, pins: SessionPins | None = None):
        self.prefix = function_prefix
        self.client = client or _client("lambda")
        self.pins = pins  # the version each session's invocations run (pins.py); None: $LATEST

    def _one(self, function: str, payload: dict[str, Any]) -> None:
        body = json.dumps(payload, separators=(",", ":")).encode()
        if len(body) > ASYNC_PAYLOAD_LIMIT:
            raise InvokeRejected(f"payload for {self.prefix}{function} is {len(body)} bytes, above "
                                 f"the {ASYNC_PAYLOAD_LIMIT}-byte async invoke limit")
        args: dict[str, Any] = {"FunctionName": self.prefix + function, "InvocationType": "Event", "Payload": body}
        qualifier = self.pins.qualifier(str(payload.get("Session")), function) if self.pins else None
        if qualifier:
            args["Qualifier"] = qualifier
        resp = self.client.invoke(**args)
        if resp.get("StatusCode") != 202:
            raise InvokeRejected(f"Invoke {self.prefix}{function}{':' + qualifier if qualifier else ''}: "
                                 f"status {resp.get('StatusCode')}")

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        if delay:
            import time
            time.sleep(delay)
        if len(calls) == 1:
            self._one(*calls[0])
            return
        futures = [_pool().submit(self._one, fn, payload) for fn, payload in calls]
        errors = [f.exception() for f in futures]  # waits for every call
        for e in errors:
            if e is not None:
                raise e
