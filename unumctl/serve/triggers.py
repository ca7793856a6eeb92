"""The triggers of the apps `unumctl serve` hosts (the manifest's `triggers:`, docs/triggers.md):
every kind runs here, and every event goes through the one delivery path:

    runtime.sources.starts(trigger, event) -> Starts
    -> session id = SessionId.for_key(runtime.sources.session_key(trigger, start))
    -> the client's start on the service (unumctl/serve/client.py `start`: StartExecution
       with that name, what unumctl.client.Client.start runs when a serve hosts the app)

so an event delivered again names its session, and StartExecution of a name seen with the
same input starts nothing new (the session registry decides).

- http: `POST http://127.0.0.1:PORT/apps/APP/triggers/NAME`, the body the input; answers
  202 {"session"} at once, or with `wait_seconds` up to that long for the result: 200
  {"session", "status": "SUCCEEDED", "result"}, 500 {"session", "status", "error", "cause"}
  for a session that did not succeed, 202 {"session"} when it is still running. The
  `Idempotency-Key` header names the session (runtime/sources/http.py).
- queue: the same URL sends a message (the body) to the trigger's local queue
  (unumctl/serve/trigger_queue.py): 200 {"messageId"}; a delivery thread receives batches of
  `batch_size` and starts one session per message; a message whose start failed is
  delivered again after the visibility timeout, and after `max_receive_count` receives it
  goes to the dead-letter queue.
- schedule: a thread fires at the expression's times (unumctl/serve/scheduler.py) from
  serve's start on (no catching up on times passed while serve was stopped).
- storage: a thread polls the watched directory `<app>/.unum/local/<stage>/storage/NAME/`
  (unumctl/serve/watcher.py).
- eventbridge: the same URL takes a PutEvents entry {"Source", "DetailType", "Detail"}
  and, when the trigger's pattern matches the event, starts its session; patterns of exact
  values only (nested fields included), other operators are refused on serve in one line.

Only the APPs given on the command line run triggers (a machine created through the API
has no manifest of its own). The session context of a Start is not passed to the session.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from werkzeug.wrappers import Request, Response

from runtime.payload import SessionId
from runtime.sources import SourceEventError, Start, session_key, starts
from runtime.sources.queue import LOCAL_QUEUE_SOURCE

from ..targets import TargetError
from ..triggers import Trigger
from . import client
from .scheduler import next_fire
from .service import Machine, Service
from .trigger_queue import QUEUES_FILE, LocalQueue
from .watcher import DirectoryWatcher

__all__ = ["Delivered", "STORAGE_DIR", "TriggerHost", "pattern_matches"]

STORAGE_DIR = "storage"    # <state>/storage/<trigger>/: a storage trigger's watched directory
VISIBILITY_TIMEOUT = 30.0  # s a received queue message stays invisible (SQS's default)
SCHEDULE_ATTEMPTS = 3      # tries of a schedule firing whose start failed
MAX_BODY = 1024 * 1024     # bytes of an HTTP trigger's request (serve's request limit)
# an EXPRESS execution runs as a new session whatever its name (service.start_execution)
EXPRESS_REFUSED = ("not run: the app's workflow.type is EXPRESS, whose executions are not unique by "
                   "name, so a redelivered event would start a second session; use STANDARD")

Delivered = tuple[Start, SessionId | None, str | None]  # (start, its session or None, error or None)


def pattern_matches(pattern: dict[str, Any], event: Any) -> bool:
    """Whether EventBridge event pattern `pattern` of exact values matches `event`: each
    field's value (or, for an array, one of its elements) is one of the listed values,
    nested objects match nested fields
    (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html)."""
    if not isinstance(event, dict):
        return False
    for key, cond in pattern.items():
        value = event.get(key)
        if isinstance(cond, dict):
            if not pattern_matches(cond, value):
                return False
        elif not any(v in cond for v in (value if isinstance(value, list) else [value])):
            return False
    return True


def _exact_only(pattern: dict[str, Any]) -> bool:
    return all(_exact_only(c) if isinstance(c, dict) else not any(isinstance(v, (dict, list)) for v in c)
               for c in pattern.values())


class TriggerHost:
    """Runs the triggers of the command-line apps of `svc` (a started Service whose URL is
    published). `poll`: seconds between scans of queues and directories; `clock`: Unix s."""

    def __init__(self, svc: Service, poll: float = 0.5, visibility: float = VISIBILITY_TIMEOUT,
                 clock: Callable[[], float] = time.time):
        self.svc, self.poll, self.visibility, self.clock = svc, poll, visibility, clock
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._queues: dict[str, LocalQueue] = {}  # app name -> its stage's local queue
        self._queues_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Start the threads of every schedule, queue and storage trigger; one line on
        stderr for a trigger serve cannot run (its other triggers run)."""
        for m in self.svc.machines():
            if m.created_here:
                continue
            for t in m.app.triggers:
                why = self._unrunnable(m, t)
                if why:
                    print(f"unumctl: serve: {m.app.name}: triggers.{t.name}: {why}", file=sys.stderr)
                    continue
                runner = {"schedule": self._run_schedule, "queue": self._run_queue,
                          "storage": self._run_storage}.get(t.type)
                if runner is not None:
                    th = threading.Thread(target=self._loop, args=(runner, m, t), daemon=True,
                                          name=f"trigger-{m.app.name}-{t.name}")
                    self._threads.append(th)
                    th.start()

    def close(self) -> None:
        """Stop the threads (a delivery in progress finishes) and close the queues."""
        self._stop.set()
        for th in self._threads:
            th.join(10)
        for q in self._queues.values():
            q.close()

    @staticmethod
    def _unrunnable(m: Machine, t: Trigger) -> str | None:
        """Why serve does not run trigger `t` of machine `m`, or None."""
        if m.type == "EXPRESS":
            return EXPRESS_REFUSED
        if t.type == "eventbridge" and not _exact_only(t.options["pattern"]):
            return "serve matches event patterns of exact values only; this one is not run here"
        if t.type == "schedule":
            try:
                next_fire(t.options["expression"], t.options["timezone"], datetime.now(timezone.utc))
            except ValueError as exc:
                return f"not run on serve: {exc}"
        return None

    def _loop(self, runner: Callable[..., Any], m: Machine, t: Trigger) -> None:
        try:
            runner(m, t)
        except Exception as exc:  # noqa: BLE001  (a trigger's thread reports and ends; serve goes on)
            print(f"unumctl: serve: {m.app.name}: triggers.{t.name} stopped: {exc}", file=sys.stderr)

    # ------------------------------------------------------------------ the one delivery path
    def deliver(self, m: Machine, trigger: Trigger, event: dict[str, Any]) -> list[Delivered]:
        """Start the sessions `event` asks for under `trigger` of machine `m`: for each
        Start, (start, session id, None) when its session was started or exists with that
        input, (start, session id or None, one-line error) otherwise. SourceEventError for
        an event of the wrong shape."""
        record = self._record(m)
        out: list[Delivered] = []
        for s in starts(trigger.to_dict(), event):
            sid = SessionId.for_key(session_key(trigger.name, s))
            try:
                client.start(record, s.input, sid)
                out.append((s, sid, None))
            except TargetError as exc:
                out.append((s, sid, str(exc)))
        return out

    def _record(self, m: Machine) -> dict[str, Any]:
        """The service record of machine `m` (what `running_service` reads from its state
        directory) that unumctl/serve/client.py addresses."""
        return {"url": self.svc.url, "machine": m.name, "machineArn": self.svc.arns.machine(m.name)}

    def _report(self, m: Machine, t: Trigger, done: list[Delivered]) -> None:
        for s, _, err in done:
            if err:
                print(f"unumctl: serve: {m.app.name}: triggers.{t.name}: {s.key}: {err}", file=sys.stderr)

    # ------------------------------------------------------------------ background kinds
    def _run_schedule(self, m: Machine, t: Trigger) -> None:
        after = datetime.fromtimestamp(self.clock(), timezone.utc)
        while True:
            when = next_fire(t.options["expression"], t.options["timezone"], after)
            if when is None or self._stop.wait(max(0.0, when.timestamp() - self.clock())):
                return
            event = {"scheduled_time": when.strftime("%Y-%m-%dT%H:%M:%SZ")}
            for _ in range(SCHEDULE_ATTEMPTS):  # a firing that failed to start is retried
                done = self.deliver(m, t, event)
                self._report(m, t, done)
                if not any(err for *_, err in done) or self._stop.wait(self.poll):
                    break
            after = when

    def queue(self, m: Machine) -> LocalQueue:
        """The local queue of machine `m`'s app stage (opened on first use)."""
        with self._queues_lock:
            q = self._queues.get(m.app.name)
            if q is None:
                q = self._queues[m.app.name] = LocalQueue(m.runner.state / QUEUES_FILE)
            return q

    def drain_queue(self, m: Machine, t: Trigger) -> int:
        """Deliver one batch of queue trigger `t`'s messages; returns how many were received.
        A message whose start failed stays (delivered again after the visibility timeout)
        or, at its `max_receive_count`-th receive, goes to the dead-letter queue."""
        q = self.queue(m)
        batch = q.receive(t.name, t.options["batch_size"], self.clock(), self.visibility)
        if not batch:
            return 0
        event = {"Records": [{"messageId": mid, "body": body, "eventSource": LOCAL_QUEUE_SOURCE,
                              "attributes": {"ApproximateReceiveCount": str(n), "SentTimestamp": str(int(sent * 1000))}}
                             for mid, body, n, sent in batch]}
        try:
            done = self.deliver(m, t, event)
        except SourceEventError as exc:  # cannot happen for records built here; keep them for a retry
            print(f"unumctl: serve: {m.app.name}: triggers.{t.name}: {exc}", file=sys.stderr)
            return len(batch)
        self._report(m, t, done)
        failed = {s.item_id for s, _, err in done if err}
        q.delete(t.name, [mid for mid, *_ in batch if mid not in failed])
        q.dead_letter(t.name, [mid for mid, _, n, _ in batch if mid in failed and n >= t.options["max_receive_count"]])
        return len(batch)

    def _run_queue(self, m: Machine, t: Trigger) -> None:
        while not self._stop.is_set():
            if not self.drain_queue(m, t):
                self._stop.wait(self.poll)

    def watched_dir(self, m: Machine, t: Trigger) -> Path:
        """Storage trigger `t`'s watched directory (created 0700 when missing). OSError
        when it or its parent is a symbolic link."""
        d = m.runner.state / STORAGE_DIR / t.name
        for p in (d.parent, d):
            if p.is_symlink():
                raise OSError(f"{p}: is a symbolic link; remove it (serve watches a directory of its own)")
            p.mkdir(exist_ok=True, mode=0o700)
        return d

    def _run_storage(self, m: Machine, t: Trigger) -> None:
        watcher = DirectoryWatcher(self.watched_dir(m, t), t.name)
        while not self._stop.wait(self.poll):
            for event in watcher.poll():
                done = self.deliver(m, t, event)
                self._report(m, t, done)
                if any(err for *_, err in done):
                    watcher.forget(event["name"])  # delivered again at the next poll

    # ------------------------------------------------------------------ HTTP
    def handle(self, req: Request, app: str, name: str) -> Response:
        """`POST /apps/APP/triggers/NAME` (sfn_api.SfnApi routes it here after its Host and
        Origin checks): an http trigger's request, a message for a queue trigger, a PutEvents
        entry for an eventbridge trigger. 404 for an unknown app or trigger, 405 for a
        schedule or storage trigger, 409 for one serve does not run, 400 for a bad body."""
        m = self.svc.by_app(app)
        trigger = next((t for t in (m.app.triggers if m is not None and not m.created_here else [])
                        if t.name == name), None)
        if m is None or trigger is None:
            return _json(404, {"error": f"no trigger {name!r} of an app {app!r} served here"})
        why = self._unrunnable(m, trigger)
        if why:
            return _json(409, {"error": f"triggers.{name}: {why}"})
        if req.method != "POST":
            return _json(405, {"error": "POST to this URL"})
        if (req.content_length or 0) > MAX_BODY:
            return _json(413, {"error": f"the body is over {MAX_BODY} bytes"})
        data = req.get_data(cache=False)
        try:
            if trigger.type == "http":
                return self._http(m, trigger, req, data)
            if trigger.type == "queue":
                mid = self.queue(m).send(trigger.name, data.decode("utf-8"), self.clock())
                return _json(200, {"messageId": mid})
            if trigger.type == "eventbridge":
                return self._put_event(m, trigger, data)
        except (UnicodeDecodeError, ValueError) as exc:
            return _json(400, {"error": str(exc).splitlines()[0][:300]})
        where = ("copy files into " + str(self.watched_dir(m, trigger))) if trigger.type == "storage" \
            else "it fires at its expression's times"
        return _json(405, {"error": f"triggers.{name} is a {trigger.type} trigger: {where}"})

    def _http(self, m: Machine, t: Trigger, req: Request, data: bytes) -> Response:
        try:
            body, b64 = data.decode("utf-8"), False
        except UnicodeDecodeError:
            body, b64 = base64.b64encode(data).decode(), True
        event = {"version": "2.0", "rawPath": req.path, "headers": {k.lower(): v for k, v in req.headers.items()},
                 "body": body, "isBase64Encoded": b64,
                 "requestContext": {"requestId": str(uuid.uuid4()), "http": {"method": req.method, "path": req.path}}}
        (_, sid, err), = self.deliver(m, t, event)
        if err:
            return _json(409 if "ExecutionAlreadyExists" in err else 400, {"session": sid, "error": err})
        wait = t.options["wait_seconds"]
        if not wait:
            return _json(202, {"session": sid})
        try:
            item = client.wait(self._record(m), str(sid), wait)
        except TargetError:
            return _json(202, {"session": sid})
        if item.get("status") == "SUCCEEDED":
            return _json(200, {"session": sid, "status": "SUCCEEDED", "result": item.get("v")})
        return _json(500, {"session": sid, "status": item.get("status"), "error": item.get("error"),
                           "cause": item.get("cause")})

    def _put_event(self, m: Machine, t: Trigger, data: bytes) -> Response:
        entry = json.loads(data)
        if not isinstance(entry, dict) or not isinstance(entry.get("Source"), str) \
                or not isinstance(entry.get("DetailType"), str):
            raise ValueError('give a PutEvents entry {"Source": "...", "DetailType": "...", "Detail": {...}}')
        detail = entry.get("Detail", {})
        event = {"version": "0", "id": str(uuid.uuid4()), "detail-type": entry["DetailType"],
                 "source": entry["Source"], "account": self.svc.arns.account, "region": self.svc.arns.region,
                 "time": datetime.fromtimestamp(self.clock(), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                 "resources": list(entry.get("Resources") or []),
                 "detail": json.loads(detail) if isinstance(detail, str) else detail}
        if not pattern_matches(t.options["pattern"], event):
            return _json(200, {"EventId": event["id"], "matched": False})
        (_, sid, err), = self.deliver(m, t, event)
        return _json(400 if err else 200, {"EventId": event["id"], "matched": True, "session": sid,
                                           **({"error": err} if err else {})})


def _json(status: int, body: dict[str, Any]) -> Response:
    return Response(json.dumps(body), status, content_type="application/json")
