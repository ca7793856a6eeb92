"""Lambda entry point of a trigger function: `handler(event, context)` turns one event of
the trigger's source into sessions of the app's entry, one per event
(runtime/source_start.py; docs/triggers.md, "AWS").

Every trigger has its own small function (the entry function's archive, this handler,
environment variable UNUM_TRIGGER naming the trigger, UNUM_ENTRY the entry's unum name,
unumctl/aws/sources.py renders it): the entry keeps its one contract (the Unum wire payload,
asynchronous), each source gets the invocation it needs (a synchronous Function URL for
`http`, an SQS event-source mapping for `queue`), and the role of a trigger function may
only start sessions (the table runtime/aws/iam.py, caller `sources`).

Events (as Lambda delivers them; the shapes are parsed by runtime.sources `starts`):
- `http`: a Function URL request, payload format 2.0 (Lambda developer guide, "Invoking
  Lambda function URLs", request payload). The answer is 202 {"session": ID}, or with
  `wait_seconds` 200 {"session", "result"} when the session ended in time (else 202); 400
  {"error"} for a request of the wrong shape.
- `queue`: an SQS batch through an event-source mapping with `ReportBatchItemFailures`
  (Lambda developer guide, "Handling errors for an SQS event source", "Implementing partial
  batch responses"): each record starts on its own and the answer is
  {"batchItemFailures": [{"itemIdentifier": messageId}]} for the records that failed, so SQS
  redelivers only those (and moves them to the DLQ after `max_receive_count`).
- `storage` (S3 event notification), `schedule` (EventBridge Scheduler target input),
  `eventbridge` (the rule's event): an asynchronous invocation; an error propagates, so
  Lambda retries it (`maximum_retry_attempts`). Answer {"sessions": [ID, ...]}.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping

from ..engine import Options
from ..source_start import ENV_ENTRY, ENV_TRIGGER, find_trigger, http_answer, start_each
from .entry import _env, adapters

__all__ = ["handler"]

_STATE: dict[str, Any] = {}


def _setup() -> dict[str, Any]:
    if not _STATE:
        root = Path(os.environ.get("LAMBDA_TASK_ROOT") or Path(__file__).resolve().parents[2])
        meta = json.loads((root / "unum_function.json").read_text())
        ds, blobs, invoker = adapters()
        _STATE.update(trigger=find_trigger(root, _env(ENV_TRIGGER)), entry=_env(ENV_ENTRY), ds=ds,
                      blobs=blobs, invoker=invoker,
                      retention=Options.from_mapping(meta.get("options", {})).retention)
    return _STATE


def _start(st: dict[str, Any], event: Mapping[str, Any]) -> list[Any]:
    def send(payload: dict[str, Any]) -> None:
        st["invoker"].invoke_many([(st["entry"], payload)])
    return start_each(st["trigger"], event, st["ds"], send, st["retention"], st["blobs"],
                      st["invoker"].max_payload_bytes)


def _http(st: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    status, body = http_answer(st["trigger"], event, st["ds"], st["blobs"], lambda e: _start(st, e))
    return _answer(status, body)


def _answer(status: int, body: dict[str, Any]) -> dict[str, Any]:
    return {"statusCode": status, "headers": {"content-type": "application/json"}, "body": json.dumps(body)}


def _queue(st: dict[str, Any], event: dict[str, Any]) -> dict[str, Any]:
    failures = []
    for record in event.get("Records") or []:
        try:
            _start(st, {"Records": [record]})
        except Exception as exc:  # noqa: BLE001 - reported per record, SQS redelivers it
            print(f"unum trigger: record {record.get('messageId')}: {type(exc).__name__}: {exc}", file=sys.stderr)
            failures.append({"itemIdentifier": record.get("messageId", "")})
    return {"batchItemFailures": failures}


def handler(event: dict[str, Any], context: Any = None) -> dict[str, Any]:
    """Start the sessions of one event of this function's trigger (module docstring for
    the answer of each kind). Raises runtime.sources.SourceEventError for an asynchronous
    event of the wrong shape and what the datastore or the invoker raise, so Lambda retries."""
    st = _setup()
    kind = st["trigger"]["type"]
    if kind == "http":
        return _http(st, event)
    if kind == "queue":
        return _queue(st, event)
    return {"sessions": [s.session for s in _start(st, event)]}
