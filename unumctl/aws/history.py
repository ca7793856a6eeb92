"""The AWS target's execution history (HistoryReader over runtime/aws/history.py's writes).

Sources (docs/observability.md "AWS"):
- the session index in the app's DynamoDB table (partitions `#sessions/<shard>`, Query per
  shard, GetItem per session) for `sessions` and the session records;
- each session's `result` item (GetItem, strongly consistent; S3 when the value is large):
  authoritative for the status and the output or error, as on local;
- CloudWatch Logs, FilterLogEvents on each function's group `/aws/lambda/<function>` over
  the session's time window (start - 5 s to end + 5 min, or now while running; for one
  session from `entry_lookback` earlier still: entry attempts killed before the start was
  recorded, and what they invoked, ran before it): the history's
  JSON event lines, Lambda's START / END / REPORT lines and the functions' own output.
  FilterLogEvents is paged until a page carries no `nextToken`: CloudWatch may answer pages
  with no events that still carry one (the search goes on over the group's streams), so an
  empty page is not the end. `history`, `describe` and `sessions` ask only for the lines they
  read, with the filter pattern HISTORY_PATTERN (any of the terms `RequestId:`, Lambda's
  platform lines, and `unum`, the history's event lines; OR syntax `?term`, CloudWatch Logs
  "Filter pattern syntax for metric filters, subscription filters, filter log events, and
  Live Tail", https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/FilterAndPatternSyntax.html);
  `logs` reads every line (the functions' own output can be anything). Every line is still
  matched here, so an endpoint that ignores the pattern (moto) gives the same answer.

What the log adds to the engine's events, as Lambda records it: Lambda's retries of an
asynchronous event keep its request id, so the k-th `START RequestId: R` of R is delivery
attempt k (added to the attempt the engine recorded, which counts error-handler rounds); a
later attempt is a `retried` event (with the failure of the previous one), and an attempt
killed (its REPORT says `Status: error`) that recorded no crash itself is a `crashed`
event: after its other events when it was killed after writing them (Lambda still counts
the attempt as failed and retries it), spanning the attempt when it wrote none. Output
lines belong to the request whose START precedes them in the same stream, and a request
to the session and invocation its event line names. Lambda does not report duplicate
deliveries: they appear only as their own `adopted` / `dropped` executions.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable
from typing import Any

from runtime.aws.history import (
    ENGINE_KINDS,
    event_function,
    EVENT_MARKER,
    EVENT_VALUE,
    INDEX_PREFIX,
    SESSION_SHARDS,
    event_key,
    index_key,
    log_group,
)
from runtime.session import read_result, session_status

from ..targets import TargetError
from ..observe.reader import (
    STARTS,
    STATUSES,
    HistoryReader,
    UnknownSession,
    description,
)

__all__ = ["AwsHistoryReader", "HISTORY_PATTERN"]

BEFORE_S = 5.0          # log window: from the session start minus this
# Lambda's waits before the retries of a failed asynchronous event: a minute before the
# first, two before the second ("How Lambda handles errors and retries with asynchronous
# invocation", https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)
LAMBDA_RETRY_WAITS_S = (60.0, 120.0)
MAX_LAMBDA_TIMEOUT_S = 900.0  # a function whose timeout the reader was not told
AFTER_END_S = 300.0     # ... to its end plus this (late duplicates), or now while running
LOGS_WINDOW_S = 86400.0  # `logs` without --session: the last day
_START = re.compile(r"^START RequestId: (\S+)")
_END = re.compile(r"^END RequestId: (\S+)")
_REPORT = re.compile(r"^REPORT RequestId: (\S+)")
_CRASH = re.compile(r"^RequestId: (\S+) Error: (.*)$")
_EVENT_PREFIX = '{"' + EVENT_MARKER + '":'
# the lines the history reads: Lambda's START/END/REPORT and crash lines all hold
# "RequestId:", the history's event lines the key "unum" (EVENT_MARKER); `?` = any of them
HISTORY_PATTERN = f'?"RequestId:" ?"{EVENT_MARKER}"'


class AwsHistoryReader(HistoryReader):
    """History of one deployed app. `ds`: its DynamoDBDatastore, `blobs`: its S3BlobStore,
    `logs`: a boto3 CloudWatch Logs client, `functions`: Unum function name -> deployed
    name (the error handler included under its own name), `timeouts`: Unum function name
    -> its Lambda timeout in seconds (the manifest's; MAX_LAMBDA_TIMEOUT_S for one not
    given: `entry_lookback`). Raises botocore ClientError for AWS failures (the CLI shows
    one line)."""

    def __init__(self, ds: Any, blobs: Any, logs: Any, functions: dict[str, str], clock=time.time,
                 timeouts: dict[str, float] | None = None):
        self.ds = ds
        self.blobs = blobs
        self.logs_client = logs
        self.functions = functions
        self.clock = clock
        self.timeouts = timeouts or {}

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> AwsHistoryReader:
        """The reader of `app` as deployed (`unumctl outputs APP --cloud aws`: table, bucket,
        function names), with the region, profile and endpoints of `unumctl invoke --cloud
        aws` (unumctl/aws/target.py). Raises TargetError when it is not deployed."""
        from .names import ERROR_HANDLER
        from .target import AwsTarget

        target = AwsTarget(app, **options)
        out = target.outputs()
        ds, blobs = target._stores(out)
        functions = {k: v["name"] for k, v in (out.get("functions") or {}).items()}
        if out.get("error_handler"):
            functions[ERROR_HANDLER] = out["error_handler"]
        if not functions:
            raise TargetError(f"{app.name}: the deployment's outputs name no functions; run: "
                              f"unumctl apply {app.root} --cloud aws")
        timeouts = {name: float(spec.timeout) for name, spec in app.manifest.functions.items()}
        return cls(ds, blobs, target.client("logs"), functions, timeouts=timeouts)

    # ------------------------------------------------------------------ DynamoDB
    def _index_rows(self) -> list[dict[str, Any]]:
        rows = []
        for shard in range(SESSION_SHARDS):
            kwargs: dict[str, Any] = {
                "TableName": self.ds.table, "ConsistentRead": True,
                "KeyConditionExpression": "#s = :p", "ExpressionAttributeNames": {"#s": "session"},
                "ExpressionAttributeValues": {":p": {"S": f"{INDEX_PREFIX}{shard}"}}}
            while True:
                page = self.ds.client.query(**kwargs)
                rows += [_index_row(i) for i in page.get("Items", []) if _is_record(i)]
                if "LastEvaluatedKey" not in page:
                    break
                kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]
        return rows

    def _index(self, session: str) -> dict[str, Any] | None:
        item = self.ds.client.get_item(TableName=self.ds.table, ConsistentRead=True, Key=index_key(session))
        return _index_row(item["Item"]) if _is_record(item.get("Item")) else None

    def _result(self, session: str) -> dict[str, Any] | None:
        return read_result(self.ds, self.blobs, session)

    def _exists(self, session: str) -> bool:
        page = self.ds.client.query(TableName=self.ds.table, Limit=1, KeyConditionExpression="#s = :p",
                                    ExpressionAttributeNames={"#s": "session"},
                                    ExpressionAttributeValues={":p": {"S": session}})
        return bool(page.get("Items"))

    # ------------------------------------------------------------------ CloudWatch Logs
    def _lines(self, start: float, end: float, functions: Iterable[str] | None = None,
               pattern: str | None = HISTORY_PATTERN) -> list[dict[str, Any]]:
        """Every log event of the functions' groups in [start, end] (Unix s) that matches
        the CloudWatch filter `pattern` (None: every line): dicts {function, group, stream,
        t, id, message}, each stream's events in order. Pages until no `nextToken`."""
        out = []
        for fn in (functions if functions is not None else self.functions):
            group = log_group(self.functions[fn])
            kwargs: dict[str, Any] = {"logGroupName": group, "startTime": int(start * 1000),
                                      "endTime": int(end * 1000) + 1}
            if pattern:
                kwargs["filterPattern"] = pattern
            while True:
                try:
                    page = self.logs_client.filter_log_events(**kwargs)
                except self.logs_client.exceptions.ResourceNotFoundException:
                    break  # nothing ran (or logged) yet
                for e in page.get("events", []):
                    out.append({"function": fn, "group": group, "stream": e["logStreamName"],
                                "t": e["timestamp"] / 1000, "id": e.get("eventId"), "message": e["message"]})
                token = page.get("nextToken")
                if not token:  # an empty page with a token is not the end (see the module doc)
                    break
                kwargs["nextToken"] = token
        seq = {id(e): i for i, e in enumerate(out)}
        out.sort(key=lambda e: (e["group"], e["stream"], e["t"], seq[id(e)]))
        return out

    def _parse(self, lines: list[dict[str, Any]]) -> _Parsed:
        p = _Parsed()
        # delivery attempt k of a request id: its START lines in time order (across streams)
        starts = sorted((ln["t"], i, m.group(1)) for i, ln in enumerate(lines)
                        if (m := _START.match(ln["message"])))
        k_of: dict[int, int] = {}
        for _, i, rid in starts:
            p.starts[rid] = p.starts.get(rid, 0) + 1
            k_of[i] = p.starts[rid]
        current: dict[tuple[str, str], dict[str, Any] | None] = {}  # the running attempt of a stream
        last: dict[tuple[str, str], dict[str, Any]] = {}
        for i, ln in enumerate(lines):
            key = (ln["group"], ln["stream"])
            msg = ln["message"].rstrip("\n")
            a = current.get(key)
            rid = a["rid"] if a is not None else None
            if m := _START.match(msg):
                a = current[key] = last[key] = {"rid": m.group(1), "k": k_of[i], "t0": ln["t"], "t1": None,
                                                "function": ln["function"], "events": 0, "error": None,
                                                "crashed": False}
                p.attempts.append(a)
            elif m := _END.match(msg):
                current[key] = None
            elif (m := _REPORT.match(msg) or _CRASH.match(msg)) and key in last \
                    and last[key]["rid"] == m.group(1):
                b = last[key]
                if msg.startswith("REPORT"):
                    b["t1"] = ln["t"]
                    current[key] = None
                    if "Status: error" in msg and b["error"] is None:
                        b["error"] = msg.split("Error Type: ")[-1].strip() if "Error Type: " in msg else "error"
                else:
                    b["detail"] = m.group(2)
                    b["t_crash"] = ln["t"]
            elif msg.startswith(_EVENT_PREFIX):
                try:
                    ev = json.loads(msg)
                except ValueError:
                    ev = None
                if not isinstance(ev, dict) or ev.pop(EVENT_MARKER, None) != EVENT_VALUE:
                    p.output.append((ln, a))
                    continue
                if "request_id" not in ev and a is not None and ev.get("kind") in ENGINE_KINDS:
                    ev["request_id"] = rid  # left out by the writer: the request it is printed in
                if (ek := event_key(ev)) in p.keys:
                    continue  # the same event written twice is kept once (the first)
                ev["function"] = event_function(ev, ln["function"])
                p.keys.add(ek)
                if a is not None and ev.get("request_id") == rid:
                    a["events"] += 1
                    ev["attempt"] = int(ev.get("attempt") or 1) + a["k"] - 1
                    if ev.get("kind") in STARTS + ("dropped", "crashed"):
                        a.update(session=ev.get("session"), instance=ev.get("instance"),
                                 base=int(ev["attempt"]) - a["k"] + 1)
                        if ev.get("kind") == "crashed":
                            a["error"] = a["error"] or ev.get("error")
                            a["crashed"] = True
                p.events.append(ev)
                if ev.get("request_id") and ev.get("session"):
                    p.owner.setdefault(ev["request_id"], (ev["session"], ev.get("instance"), ev.get("function")))
            else:
                p.output.append((ln, a))
        return p

    def _window(self, rec: dict[str, Any] | None, result: dict[str, Any] | None) -> tuple[float, float]:
        now = self.clock()
        start = (rec or {}).get("started_at") or (rec or {}).get("ended_at") or now - LOGS_WINDOW_S
        end = (rec or {}).get("ended_at")
        return start - BEFORE_S, min(now, end + AFTER_END_S) if end is not None else now

    def entry_lookback(self, rec: dict[str, Any] | None) -> float:
        """Seconds the logs of session record `rec` are read from before its window
        (`_session_window`): the recorded start is the clock of the entry execution that
        recorded it, and attempts of the same entry event that were killed before recording
        it (and the continuations they invoked first) ran up to Lambda's retry waits plus
        one entry timeout per earlier attempt before it (LAMBDA_RETRY_WAITS_S; the timeout
        from `timeouts`). Without them the history loses those crashes, retries and
        executions, and numbers the retry attempt 1. 0 for a record with no entry function."""
        fn = (rec or {}).get("function")
        if not fn:
            return 0.0
        timeout = self.timeouts.get(fn, MAX_LAMBDA_TIMEOUT_S)
        return sum(LAMBDA_RETRY_WAITS_S) + len(LAMBDA_RETRY_WAITS_S) * timeout

    def _session_window(self, rec: dict[str, Any] | None, result: dict[str, Any] | None) -> tuple[float, float]:
        """The log window of one session's history (Unix s): `_window` from
        `entry_lookback` earlier."""
        lo, hi = self._window(rec, result)
        return lo - self.entry_lookback(rec), hi

    def _session_events(self, session: str, p: _Parsed) -> list[dict[str, Any]]:
        events = [e for e in p.events if e.get("session") == session]
        by_rid: dict[str, list[dict[str, Any]]] = {}
        for a in p.attempts:
            by_rid.setdefault(a["rid"], []).append(a)
        for rid, attempts in by_rid.items():
            owner = p.owner.get(rid)
            if owner is None or owner[0] != session:
                continue
            base = next((a["base"] for a in attempts if "base" in a), 1)
            attempts.sort(key=lambda a: a["k"])
            previous: list[dict[str, Any] | None] = [None, *attempts[:-1]]
            for prev, a in zip(previous, attempts):
                common = {"session": session, "instance": owner[1], "function": owner[2],
                          "request_id": rid, "attempt": base + a["k"] - 1}
                if a["t1"] is not None and a["error"] and not a["crashed"]:
                    # killed (REPORT Status: error) and not recorded by the engine: before it
                    # wrote its event (the crash spans the attempt), or after (its `ran`,
                    # `adopted`, ... is in the log, and Lambda still failed and retries it)
                    t0 = a["t0"] if a["events"] == 0 else a.get("t_crash") or a["t1"]
                    events.append({**common, "kind": "crashed", "t0": t0, "t1": a["t1"],
                                   "error": a["error"], "detail": a.get("detail") or a["error"]})
                if prev is not None:
                    why = ": ".join(x for x in (prev.get("error"), prev.get("detail")) if x) \
                        or "the previous attempt failed"
                    events.append({**common, "kind": "retried", "t0": a["t0"], "t1": None,
                                   "error": prev.get("error"), "detail": f"Lambda retry: {why}"[:2000]})
        events.sort(key=lambda e: (e.get("t0") or 0))
        return events

    # ------------------------------------------------------------------ HistoryReader
    def sessions(self, status=None, limit=None):
        if status is not None and status not in STATUSES:
            raise ValueError(f"--status: {status!r} must be one of {', '.join(STATUSES)}")
        now = self.clock()
        rows = []
        for r in self._index_rows():
            st = r.get("status")
            if st is None:
                st = session_status(self._result(r["session"]))
            if status is not None and st != status:
                continue
            rows.append({**r, "status": st})
        rows.sort(key=lambda r: (-(r.get("started_at") or r.get("ended_at") or 0), r["session"]))
        rows = rows[:limit] if limit is not None else rows
        invocations: dict[str, set] = {r["session"]: set() for r in rows}
        last: dict[str, float] = {}
        if rows:
            lo = min(self._window(r, None)[0] for r in rows)
            hi = max(self._window(r, None)[1] for r in rows)
            for e in self._parse(self._lines(lo, hi)).events:
                if e.get("session") in invocations and e.get("kind") in STARTS:
                    invocations[e["session"]].add(e.get("instance"))
                if e.get("session") in invocations:
                    last[e["session"]] = max(last.get(e["session"], 0.0), _event_time(e))
        out = []
        for r in rows:
            start, end = r.get("started_at"), r.get("ended_at")  # end None: running, or its record was lost
            if end is None and r["status"] != "RUNNING":
                end = last.get(r["session"])  # a SUCCEEDED end is not indexed (runtime/aws/history.py)
            dur = end if end is not None else (now if r["status"] == "RUNNING" else None)
            out.append({"session": r["session"], "status": r["status"], "start": start, "end": end,
                        "duration": (dur - start) if dur is not None and start is not None else None,
                        "invocations": len(invocations[r["session"]])})
        return out

    def describe(self, session):
        rec = self._index(session)
        result = self._result(session)
        if rec is None and result is None and not self._exists(session):
            raise UnknownSession(session)
        events = self._derived(self._session_events(session, self._parse(self._lines(*self._session_window(rec, result)))),
                               rec, result) if rec is not None else []
        rec = rec or {}
        end = rec.get("ended_at")
        if end is None and result is not None and events:
            end = max(_event_time(e) for e in events)  # a SUCCEEDED end is not indexed
        return description(
            session, status=session_status(result) if result is not None else (rec.get("status") or "RUNNING"),
            function=rec.get("function"), start=rec.get("started_at"), end=end,
            input=rec.get("input"), outcome=result, finished=result is not None, events=events,
            indexed=bool(rec), now=self.clock())

    def history(self, session):
        rec = self._index(session)
        if rec is None:
            if self._result(session) is None and not self._exists(session):
                raise UnknownSession(session)
            return []  # runtime.history off: no index, no event lines
        events = self._session_events(session, self._parse(self._lines(*self._session_window(rec, None))))
        return self._derived(events, rec, self._result(session))

    @staticmethod
    def _derived(events: list[dict[str, Any]], rec: dict[str, Any] | None,
                 result: dict[str, Any] | None) -> list[dict[str, Any]]:
        """`events` with the values the writer left out put back (runtime/aws/history.py):
        the entry execution's `input` from the session index `rec`, an `input_of` input from
        that instance's recorded output, an `ends` output from the SUCCEEDED `result`."""
        for e in events:
            if ("input" not in e and rec is not None and rec.get("input") is not None
                    and e.get("instance") == rec.get("function") and e.get("payload_bytes", 1 << 30) <= 2048):
                e["input"] = rec["input"]
            if ("output" not in e and e.get("ends") and e.get("kind") == "ran" and result is not None
                    and result.get("status") == "SUCCEEDED" and result.get("instance") == e.get("instance")
                    and e.get("checkpoint_bytes", 1 << 30) <= 4096):
                e["output"] = result.get("v")
        outputs = {e.get("instance"): e["output"] for e in events if "output" in e}
        for e in events:
            parent = e.pop("input_of", None)
            e.pop("ends", None)
            if "input" not in e and parent in outputs:
                e["input"] = outputs[parent]
        return events

    def logs(self, session=None, function=None, after=None):
        if function is not None and function not in self.functions:
            raise ValueError(f"--function: {function!r} is not a function of this app "
                             f"({', '.join(sorted(self.functions))})")
        if session is not None:
            lo, hi = self._session_window(self._index(session), None)
        else:
            hi = self.clock()
            lo = hi - LOGS_WINDOW_S
        p = self._parse(self._lines(lo, hi, [function] if function else None, pattern=None))
        seen: set = set(after or ())
        base = {a["rid"]: a["base"] for a in p.attempts if "base" in a}
        rows = []
        for ln, a in p.output:
            if ln["id"] in seen:
                continue
            owner = p.owner.get(a["rid"]) if a is not None else None
            if session is not None and (owner is None or owner[0] != session):
                continue
            if owner is None and a is not None and a["t1"] is None:
                continue  # still running: its event line will name the session
            seen.add(ln["id"])
            rows.append({"session": owner[0] if owner else None, "function": ln["function"],
                         "instance": owner[1] if owner else None,
                         "attempt": base.get(a["rid"], 1) + a["k"] - 1 if a is not None else None,
                         "t": ln["t"], "line": ln["message"]})
        rows.sort(key=lambda r: r["t"])
        return rows, seen

    def ended(self, session):
        return self._result(session) is not None


class _Parsed:
    """What one read of the log groups says: engine/platform events, delivery attempts
    (one per START line), output lines with their request id, request id -> (session,
    instance, function)."""

    def __init__(self):
        self.events: list[dict[str, Any]] = []
        self.attempts: list[dict[str, Any]] = []
        self.starts: dict[str, int] = {}
        self.keys: set = set()
        self.output: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        self.owner: dict[str, tuple[str, str | None, str | None]] = {}


def _event_time(e: dict[str, Any]) -> float:
    """When an event ended (its t1, else its t0; Unix s)."""
    return float(e.get("t1") or e.get("t0") or 0.0)


def _is_record(item: dict[str, Any] | None) -> bool:
    """Whether a session-index item holds a session record, not only the session's result
    (the datastore keeps the result in the same item: runtime/aws/datastore.py; with
    `runtime.history: off` nothing else is written there)."""
    return item is not None and any(k in item for k in ("function", "started_at", "ended_at"))


def _index_row(item: dict[str, Any]) -> dict[str, Any]:
    def num(k):
        return float(item[k]["N"]) if k in item else None

    inp = item.get("input", {}).get("S")
    return {"session": item["name"]["S"], "function": item.get("function", {}).get("S"),
            "started_at": num("started_at"), "ended_at": num("ended_at"),
            "status": item.get("status", {}).get("S"), "error": item.get("error", {}).get("S"),
            "cause": item.get("cause", {}).get("S"), "input": json.loads(inp) if inp else None}
