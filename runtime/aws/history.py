"""The AWS target's `Events` adapter (runtime.ports.Events, docs/observability.md "AWS").

Execution events: one JSON object per line on stdout, `{"unum": "event", ...event fields}`
(no newline inside: json.dumps without indent). Lambda sends a function's stdout and stderr
to its CloudWatch Logs group `/aws/lambda/<function name>` (`log_group`), one log event per
line, between Lambda's own `START RequestId: <id>` and `END RequestId: <id>` lines of the
same log stream (Lambda developer guide, "Working with Lambda function logs"); the reader
(unumctl/aws/history.py) finds them with FilterLogEvents. Nothing is written to the table
for an execution event.

Session index: one small item per session in the app's DynamoDB table, in partitions that
no session id can name (`#sessions/<shard>`, sort key the session id; session ids never
contain '#', runtime.payload.SESSION_ID_RE), so `unumctl sessions` lists sessions with
`SESSION_SHARDS` Query calls instead of reading logs:

    session    (S)  index_partition(session id)
    name       (S)  the session id
    function   (S)  entry function          started_at (N)  Unix s, first write wins
    input      (S)  JSON of the input up to MAX_INPUT_BYTES, else {"omitted": true,
                    "bytes": N} (or {"blob": ref} when the input came by reference)
    ended_at   (N)  Unix s, first end wins  status (S)  SUCCEEDED | FAILED | TIMED_OUT
    error, cause (S) for FAILED/TIMED_OUT (cause cut to 1,000 characters); the output stays in
                    the session's `result` item (authoritative, read by the CLI)
    expires_at (N)  the table's TTL attribute: the result's expiry (Retention.result_expiry)

The same item holds the session's `result` (`j` or `z`, runtime/aws/datastore.py layout).
A session whose entry execution creates the result (a one-function workflow, a fused
plan: docs/fusion.md) is recorded by that create itself: the engine asks `result_fields`
for the start attributes and the datastore's one UpdateItem writes them with the result,
so such a session costs one write, not two. Otherwise the create adds the result to the
record (an item holding both costs ceil(size / 1 KB) write units, so an input kept here
near MAX_INPUT_BYTES makes the result's write dearer than on its own item).

Writes: `session_started` is one UpdateItem with `if_not_exists` on every field (the end may
arrive first: a downstream function can end the session before the entry execution
records its start); `session_ended` of a session that did not succeed is one UpdateItem
with the condition `attribute_not_exists(ended_at)` (first end wins; ConditionalCheckFailed
is the expected answer for a second end and is ignored). Each is one write request unit for
items up to 1 KB (DynamoDB pricing: a write request unit per 1 KB). A SUCCEEDED end writes
nothing: the status is the session's `result` item and the end time the last event line of
the execution that ended it (unumctl/aws/history.py reads both), so a successful session
costs one index write, not two.

Event lines are kept small (CloudWatch Logs bills ingestion per byte): times are rounded to
the microsecond (t0, t1) and to the microsecond in ms (the *_ms fields), `function` is left
out when the instance name starts with it, and values the reader derives are left
out (`derived_fields`): the `request_id` of an execution's own events (and `attempt`
when 1), which the reader takes from the Lambda START line the event line follows; the
`input` of the entry execution (the session index holds it),
an `input` equal to the parent's recorded `output` (`input_of` names the parent), and the
`output` of the execution that created the SUCCEEDED result (`ends`; the result holds it).
unumctl/aws/history.py puts them back, so `describe`, `history` and `trace` read the same.

Errors: botocore ClientError from the writes propagate; the engine calls every method
through runtime.ports.emit_safely, so a failed write never fails an execution.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from collections.abc import Sequence
from typing import IO, Any

from ..ports import Events
from ..session import Retention

__all__ = ["CloudWatchEvents", "ENGINE_KINDS", "EVENT_MARKER", "EVENT_VALUE", "INDEX_PREFIX",
           "MAX_INPUT_BYTES", "SESSION_SHARDS", "event_function", "event_key", "event_line", "index_key",
           "log_group"]

EVENT_MARKER = "unum"            # key of every history line; value "event"
EVENT_VALUE = "event"
LOG_GROUP_PREFIX = "/aws/lambda/"  # Lambda's log group of a function: prefix + function name
INDEX_PREFIX = "#sessions/"      # partition of the session index (session ids cannot start with '#')
SESSION_SHARDS = 8               # index partitions (spreads writes; `sessions` queries each)
MAX_INPUT_BYTES = 4096           # larger session inputs are recorded as their size only
MAX_CAUSE_CHARS = 1000
# kinds of the events an execution records about itself (runtime/engine.py), always printed
# between its own request's START and END lines, so the reader knows their request id
ENGINE_KINDS = ("ran", "adopted", "dropped", "failed", "suspended", "crashed")


def log_group(function_name: str) -> str:
    """The CloudWatch Logs group Lambda writes function `function_name`'s output to."""
    return LOG_GROUP_PREFIX + function_name


def index_partition(session: str) -> str:
    """The session-index partition key holding `session`'s record (a stable hash shard)."""
    shard = int.from_bytes(hashlib.blake2b(session.encode(), digest_size=2).digest(), "big") % SESSION_SHARDS
    return f"{INDEX_PREFIX}{shard}"


def index_key(session: str) -> dict[str, Any]:
    """The DynamoDB key of `session`'s record: {"session": {"S": partition}, "name": {"S": id}}.
    The datastore keeps the session's `result` in the same item (runtime/aws/datastore.py)."""
    return {"session": {"S": index_partition(session)}, "name": {"S": session}}


def record_update(function: str, start: float, input: Any, expires_at: float | None) -> dict[str, Any]:
    """The session-start attributes of a record as UpdateItem parts, each `if_not_exists`
    (first write wins): {"sets": [SET clauses], "names": {...}, "values": {...}, "attrs": the
    attributes as stored, "input_kept": bool}; `input`
    as the index keeps it (the module docstring: small JSON, {"omitted", "bytes"} or a blob
    reference); `expires_at` None leaves the expiry to the writer of the result it rides with."""
    small = input if isinstance(input, dict) and set(input) == {"blob"} else _small_input(input)
    attrs = {"function": {"S": function}, "started_at": {"N": repr(float(start))},
             "input": {"S": json.dumps(small, separators=(",", ":"), default=str)}}
    rec: dict[str, Any] = {
        "sets": ["#f = if_not_exists(#f, :f)", "started_at = if_not_exists(started_at, :s)",
                 "#i = if_not_exists(#i, :i)"],
        "names": {"#f": "function", "#i": "input"},
        "values": {":f": attrs["function"], ":s": attrs["started_at"], ":i": attrs["input"]},
        "attrs": attrs,  # what the record stores (sizes: runtime/aws/datastore.py)
        "input_kept": not (isinstance(small, dict) and small.get("omitted"))}
    if expires_at is not None:
        rec["sets"].append("expires_at = if_not_exists(expires_at, :x)")
        rec["values"][":x"] = {"N": str(int(expires_at))}
    return rec


_ROUNDED = {"t0": 6, "t1": 6, "user_ms": 3, "datastore_ms": 3, "invoke_ms": 3, "runtime_ms": 3}


def event_line(event: dict[str, Any]) -> str:
    """The log line of one execution event: compact JSON, marker first, None fields left out,
    times rounded (`_ROUNDED`), `function` left out when the instance name starts with it."""
    body: dict[str, Any] = {EVENT_MARKER: EVENT_VALUE}
    inst = event.get("instance")
    for k, v in event.items():
        if v is None:
            continue
        if k in _ROUNDED and isinstance(v, float):
            v = round(v, _ROUNDED[k])
        elif k == "function" and isinstance(inst, str) and (inst == v or inst.startswith(f"{v}-Unum")):
            continue
        body[k] = v
    return json.dumps(body, separators=(",", ":"), default=str, allow_nan=False)


def event_function(event: dict[str, Any], default: str | None = None) -> str | None:
    """The function of an event read back from a line (`event_line` leaves it out when the
    instance name starts with it): its `function`, else the instance's function part."""
    if event.get("function"):
        return event["function"]
    inst = event.get("instance")
    return inst.split("-Unum", 1)[0] if isinstance(inst, str) else default


def event_key(event: dict[str, Any]) -> tuple:
    """The identity of an event (runtime.ports.Events.record): the same event recorded twice
    is kept once (the engine records the execution that ends a session early, then again)."""
    return tuple(event.get(k) for k in ("session", "instance", "kind", "request_id", "attempt", "t0"))


def _small_input(value: Any) -> Any:
    text = json.dumps(value, separators=(",", ":"), default=str)
    if len(text.encode()) > MAX_INPUT_BYTES:
        return {"omitted": True, "bytes": len(text.encode())}
    return value


class CloudWatchEvents(Events):
    """Events adapter of a Lambda function: event lines on `out` (stdout, which Lambda sends
    to CloudWatch Logs) and the session index in DynamoDB table `table` through `client`
    (a boto3 DynamoDB client; the datastore's). `level`: runtime.history; `retention`: the
    app's expiry policy (runtime/session.py): index items live as long as the result."""

    derived_fields = True  # runtime.ports.Events: see the module docstring

    def __init__(self, client: Any, table: str, level: str = "full", retention: Retention = Retention(),
                 out: IO[str] | None = None, clock=time.time):
        self.client = client
        self.table = table
        self.level = level
        self.retention = retention
        self.out = out
        self.clock = clock
        self._written: dict[tuple, None] = {}  # recent event keys (a repeat is not written again)
        self._indexed: tuple[str, str] | None = None  # (session, entry function) whose input is indexed

    def record(self, events: Sequence[dict[str, Any]]) -> None:
        lines = []
        for e in events:
            key = event_key(e)
            if key in self._written:
                continue
            self._written[key] = None
            lines.append(event_line(self._without_derived(e)) + "\n")
        while len(self._written) > 256:
            del self._written[next(iter(self._written))]
        if lines:
            out = self.out or sys.stdout
            out.write("".join(lines))
            out.flush()

    def _without_derived(self, e: dict[str, Any]) -> dict[str, Any]:
        """`e` without the values the reader derives (module docstring)."""
        drop = set()
        if e.get("kind") in ENGINE_KINDS:  # written inside its own request's START..END lines
            drop.add("request_id")
            if e.get("attempt") == 1:
                drop.add("attempt")
        if "input" in e and (e.get("input_of") or (e.get("session"), e.get("instance")) == self._indexed):
            drop.add("input")
        if "output" in e and e.get("ends") and e.get("kind") == "ran":
            drop.add("output")
        return {k: v for k, v in e.items() if k not in drop} if drop else e

    def _key(self, session: str) -> dict[str, Any]:
        return index_key(session)

    def session_started(self, session: str, function: str, start: float, input: Any) -> None:
        rec = record_update(function, start, input, self.retention.result_expiry(self.clock()))
        self.client.update_item(TableName=self.table, Key=self._key(session),
                                UpdateExpression="SET " + ", ".join(rec["sets"]),
                                ExpressionAttributeNames=rec["names"], ExpressionAttributeValues=rec["values"])
        if rec["input_kept"]:
            self._indexed = (session, function)  # this execution's event needs no input of its own

    def result_fields(self, session: str, function: str, start: float, input: Any) -> dict[str, Any] | None:
        """The record's session-start attributes (`record_update`), written by the datastore
        with the result it creates (runtime/aws/datastore.py `_create_result`): a session
        whose entry execution ends it costs one write (runtime.ports.Events)."""
        rec = record_update(function, start, input, None)  # the result sets the expiry
        if rec["input_kept"]:
            self._indexed = (session, function)
        return {k: rec[k] for k in ("sets", "names", "values", "attrs")}

    def session_ended(self, session: str, status: str, end: float, result: dict[str, Any]) -> None:
        if status == "SUCCEEDED":
            return  # read back from `result` and the event lines (module docstring)
        names = {"#st": "status"}
        values: dict[str, Any] = {":e": {"N": repr(float(end))}, ":st": {"S": status},
                                  ":x": {"N": str(int(self.retention.result_expiry(self.clock())))}}
        expr = "SET ended_at = :e, #st = :st, expires_at = :x"
        if status != "SUCCEEDED":
            expr += ", #er = :er, #ca = :ca"
            names.update({"#er": "error", "#ca": "cause"})
            values[":er"] = {"S": str(result.get("error") or status)}
            values[":ca"] = {"S": str(result.get("cause") or "")[:MAX_CAUSE_CHARS]}
        try:
            self.client.update_item(TableName=self.table, Key=self._key(session), UpdateExpression=expr,
                                    ConditionExpression="attribute_not_exists(ended_at)",
                                    ExpressionAttributeNames=names, ExpressionAttributeValues=values)
        except Exception as exc:  # noqa: BLE001  (botocore ClientError; boto3 not imported here)
            code = getattr(exc, "response", {}).get("Error", {}).get("Code")
            if code != "ConditionalCheckFailedException":
                raise
