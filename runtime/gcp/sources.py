"""Entry points of a trigger function on Cloud Functions gen2: each starts one session of
the app's entry per event of its trigger (runtime/source_start.py; docs/triggers.md "GCP").

A trigger function runs the entry function's archive with its own entry point (the bundle's
main.py re-exports both, unumctl/gcp/bundle.py) and environment UNUM_TRIGGER / UNUM_ENTRY;
gen2 allows one trigger per function, so every trigger has its own (unumctl/gcp/sources.py).
It reaches the datastore, blob store and the entry's Pub/Sub topic as the entry function
does (runtime/gcp/entry.py `GcpFunction`).

- `handle_trigger_http(request)` (functions-framework `@http`): an `http` trigger's HTTPS
  request (the body is the input; answer 202 {"session"} or, with `wait_seconds`, 200
  {"session", "result"}; 400 {"error"} for a request of the wrong shape), and a `schedule`
  trigger's Cloud Scheduler request (HTTP target: the body is the fixed input, the header
  `X-CloudScheduler-ScheduleTime` the scheduled time, Cloud Scheduler "Use authentication
  with HTTP targets" / HttpTarget reference), answered 200 so the job is not retried.
- `handle_trigger_event(cloud_event)` (`@cloud_event`): a `queue` trigger's Pub/Sub
  CloudEvent (`google.cloud.pubsub.topic.v1.messagePublished`) or a `storage` trigger's
  Eventarc Cloud Storage CloudEvent (`google.cloud.storage.object.v1.finalized`, data
  StorageObjectData); its `data` goes to runtime.sources `starts`. An error propagates, so
  functions-framework answers 500 and the delivery is retried (RETRY_POLICY_RETRY).
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any

import functions_framework

from ..source_start import ENV_ENTRY, ENV_TRIGGER, find_trigger, http_answer, start_each

__all__ = ["TriggerFunction", "handle_trigger_event", "handle_trigger_http", "http_event"]



class TriggerFunction:
    """One trigger function instance: the entry's GcpFunction (datastore, blob store, Pub/Sub
    invoker of the bundle at `bundle_dir`, configured by `env`, default os.environ) and the
    trigger UNUM_TRIGGER of its triggers.json. RuntimeError (one line) when UNUM_TRIGGER /
    UNUM_ENTRY are unset or the bundle has no such trigger."""

    def __init__(self, bundle_dir: Any = None, env: dict[str, str] | None = None):
        from .entry import BUNDLE_ROOT, GcpFunction

        env = dict(os.environ if env is None else env)
        root = BUNDLE_ROOT if bundle_dir is None else bundle_dir
        name, entry = env.get(ENV_TRIGGER), env.get(ENV_ENTRY)
        if not name or not entry:
            raise RuntimeError(f"{ENV_TRIGGER} / {ENV_ENTRY} are not set; the trigger function must be deployed "
                               "by `unumctl apply --cloud gcp`, which sets them")
        self.entry: str = entry
        self.trigger = find_trigger(root, name)
        self.fn = GcpFunction(root, env)

    def start(self, event: Any) -> list[Any]:
        """Start the sessions of `event` (runtime/source_start.py start_each)."""
        fn = self.fn

        def send(payload: dict[str, Any]) -> None:
            fn.invoker.invoke_many([(self.entry, payload)])
        return start_each(self.trigger, event, fn.ds, send, fn.bundle.options.retention, fn.blobs,
                          fn.invoker.max_payload_bytes)

    def http(self, event: dict[str, Any]) -> tuple[str, int, dict[str, str]]:
        """Answer one HTTPS request (`http_event` shape): (body, status, headers) as the
        module docstring says (runtime/source_start.py http_answer)."""
        status, body = http_answer(self.trigger, event, self.fn.ds, self.fn.blobs, self.start)
        return _answer(status, body)


_FUNCTION: TriggerFunction | None = None


def _instance() -> TriggerFunction:
    global _FUNCTION
    if _FUNCTION is None:
        _FUNCTION = TriggerFunction()
    return _FUNCTION


def http_event(method: str, path: str, headers: dict[str, str], body: str, request_id: str) -> dict[str, Any]:
    """One HTTPS request in the shape runtime.sources `starts` reads for `http` and
    `schedule` triggers (the Function URL request, payload format 2.0: runtime/sources/http.py;
    header names in lower case, so Cloud Scheduler's X-CloudScheduler-ScheduleTime is read
    by runtime/sources/schedule.py). `request_id`: the platform's id of the request (a
    request without an Idempotency-Key header starts its own session)."""
    return {"version": "2.0", "rawPath": path, "headers": {k.lower(): v for k, v in headers.items()},
            "body": body, "isBase64Encoded": False,
            "requestContext": {"requestId": request_id, "http": {"method": method, "path": path}}}


@functions_framework.http
def handle_trigger_http(request: Any) -> tuple[str, int, dict[str, str]]:
    """An `http` or `schedule` trigger's request (module docstring); (body, status, headers)."""
    headers = dict(request.headers)
    request_id = headers.get("Function-Execution-Id") or headers.get("X-Cloud-Trace-Context") or uuid.uuid4().hex
    return _instance().http(http_event(request.method, request.path, headers, request.get_data(as_text=True),
                                       request_id))


def _answer(status: int, body: dict[str, Any]) -> tuple[str, int, dict[str, str]]:
    return json.dumps(body), status, {"content-type": "application/json"}


@functions_framework.cloud_event
def handle_trigger_event(cloud_event: Any) -> None:
    """A `queue` (Pub/Sub) or `storage` (Eventarc Cloud Storage) trigger's CloudEvent
    (module docstring); raises so that the delivery is retried."""
    data = getattr(cloud_event, "data", cloud_event)
    _instance().start(data if isinstance(data, dict) else json.loads(data))
