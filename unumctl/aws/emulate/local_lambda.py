"""A local stand-in for Lambda's Invoke API, for `unumctl emulate aws`, tests and benchmarks.

moto cannot execute Lambda functions without Docker, so this serves
`POST /2015-03-31/functions/{FunctionName}/invocations` (Lambda API reference, Invoke) on
127.0.0.1 and runs each function's BUILT AWS archive through its Lambda handler in worker
processes (unumctl/aws/emulate/lambda_worker.py), one invocation at a time per process, as Lambda
execution environments do. Point boto3 at it with AWS_ENDPOINT_URL_LAMBDA. Functions are
given up front (`functions`) or found when first invoked (`_resolve`, which a subclass
overrides: lambda_front.py reads them from moto); a request that is not an Invoke goes to
`_http_other` (404 here; lambda_front.py forwards it to moto).

Asynchronous semantics follow Lambda's: `X-Amz-Invocation-Type: Event` is answered 202 once
queued; a failed execution (handler error or process crash) is retried up to
`max_retry_attempts` times, then the destination record is sent to the `on_failure`
function. With a fault spec (runtime/faults.py `FaultSpec`: `duplicate`, `kill`,
`max_kill_ms`) it also duplicates deliveries and kills executions at random points (SIGKILL
after a seeded delay), never on an event's last platform attempt; a kill lands only while
the request it was drawn for runs (stats `kills_armed`, `kills_missed`).

Logs, as Lambda's: each event has a request id (`context.aws_request_id`) that Lambda's
retries of it keep; each worker's stderr (the handler's output and the END / REPORT lines
it writes per request, after the START line the emulator writes) goes to CloudWatch Logs, group `/aws/lambda/<function>`, one
stream per worker (unumctl/aws/emulate/local_logs.py), on the logs endpoint of `base_env`
(AWS_ENDPOINT_URL_LOGS or AWS_ENDPOINT_URL: moto in the tests; without one the lines are
only counted, never sent to a real account). A killed execution gets Lambda's
`REPORT ... Status: error  Error Type: Runtime.ExitError` line. Lines are also echoed to
this process's stderr, except the history's JSON event lines.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from runtime.faults import FaultSpec

from .local_logs import LogForwarder, stream_name

__all__ = ["LocalFunctionSpec", "LocalLambda", "function_of", "unpack"]

WORKER = Path(__file__).with_name("lambda_worker.py")
_PATH_RE = re.compile(r"^/2015-03-31/functions/(?P<fn>[^/]+)/invocations")


@dataclass
class LocalFunctionSpec:
    """One emulated function: unpacked bundle dir, handler, environment, async config."""

    bundle_dir: Path
    handler: str
    env: dict[str, str]
    max_retry_attempts: int = 2
    on_failure: str | None = None
    timeout: float = 60.0
    memory: int = 128
    version: str = "$LATEST"   # the function version it runs (a published version number)


@dataclass
class _Event:
    fn: str
    payload: Any
    key: str
    attempt: int = 1
    sync: "queue.Queue[dict[str, Any]] | None" = None
    rid: str = field(default_factory=lambda: str(uuid.uuid4()))  # Lambda's request id


@dataclass
class _Proc:
    proc: subprocess.Popen
    stream: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)
    reported: set = field(default_factory=set)   # request ids whose REPORT line was read
    spec: "LocalFunctionSpec | None" = None       # what the process runs (a new spec: a new process)
    seen: threading.Condition = field(default_factory=threading.Condition)
    pump: threading.Thread | None = None


def function_of(key: str) -> str:
    """The function name of a served key (`NAME`, or `NAME:VERSION` for a published version)."""
    return key.split(":", 1)[0]


def unpack(zip_path: Path, dest_root: Path) -> Path:
    """Unpack an archive once under `dest_root/<zip stem>` and return the directory."""
    dest = Path(dest_root) / Path(zip_path).stem
    if not (dest / ".unpacked").exists():
        with zipfile.ZipFile(zip_path) as zf:
            zf.extractall(dest)
        (dest / ".unpacked").write_text("")
    return dest


class LocalLambda:
    """The emulator. `functions`: deployed name -> LocalFunctionSpec; `base_env`: environment
    of every worker (credentials, region, endpoints); `concurrency`: processes per function.
    Use as a context manager; `url` is the endpoint for AWS_ENDPOINT_URL_LAMBDA (the workers
    get it unless `base_env` names another)."""

    def __init__(self, functions: dict[str, LocalFunctionSpec], base_env: dict[str, str],
                 concurrency: int = 3, faults: FaultSpec | None = None, retry_delay: float = 0.01):
        self.functions = functions
        self.base_env = base_env
        self.concurrency = concurrency
        self.faults = faults
        self.retry_delay = retry_delay
        self.stats: Counter[str] = Counter()
        # (function, ms) per execution: the handler's own duration as the worker measured it
        # (Lambda's REPORT Duration), or the wall time of a killed execution
        self.durations: list[tuple[str, float]] = []
        self._queues: dict[str, queue.Queue[_Event | None]] = {f: queue.Queue() for f in functions}
        self._inflight = 0
        self._lock = threading.Lock()
        self._seq = 0
        self._threads: list[threading.Thread] = []
        self._procs: list[_Proc] = []
        self._stopping = False
        self.logs = LogForwarder(_logs_client(base_env))
        emu = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                if _PATH_RE.match(self.path):
                    emu._http_invoke(self)
                else:
                    emu._http_other(self)

            do_GET = do_PUT = do_DELETE = do_PATCH = do_HEAD = lambda self: emu._http_other(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "LocalLambda":
        t = threading.Thread(target=self.server.serve_forever, daemon=True)
        t.start()
        self._threads.append(t)
        self._entered = True
        for fn in self.functions:
            self._start_slots(fn)
        return self

    def _start_slots(self, fn: str) -> None:
        for _ in range(self.concurrency):
            w = threading.Thread(target=self._slot, args=(fn,), daemon=True)
            w.start()
            self._threads.append(w)

    def add_function(self, name: str, spec: LocalFunctionSpec) -> None:
        """Serve `name` with `spec` from now on: a new function gets its queue and slots; a
        changed spec (new code or configuration) is run by new worker processes from the
        next event on (the old ones finish their current event and exit)."""
        with self._lock:
            new = name not in self.functions
            if not new and self.functions[name] == spec:
                return
            self.functions[name] = spec
            if new:
                self._queues[name] = queue.Queue()
        if new and getattr(self, "_entered", False):
            self._start_slots(name)

    def _resolve(self, name: str, qualifier: str | None = None) -> str | None:
        """Called for an Invoke of function `name` with `qualifier` (a version number or alias,
        Invoke's `Qualifier`; None or `$LATEST`: the unpublished function): the key it is
        served under (after add_function), None when it is not served. Here: the functions
        given up front only, unqualified."""
        return name if name in self.functions and qualifier in (None, "", "$LATEST") else None

    def _http_other(self, h: BaseHTTPRequestHandler) -> None:
        """A request that is not an Invoke: 404 here (lambda_front.py forwards it)."""
        if h.command != "HEAD":
            h.rfile.read(int(h.headers.get("Content-Length") or 0))
        self._reply(h, 404, {"Type": "User", "message": f"not served by this emulator: {h.command} {h.path}"},
                    {"x-amzn-ErrorType": "ResourceNotFoundException"})

    def __exit__(self, *exc) -> None:
        self._stopping = True
        self.server.shutdown()
        self.server.server_close()
        for q in self._queues.values():
            for _ in range(self.concurrency):
                q.put(None)
        for p in list(self._procs):
            try:
                p.proc.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
        for p in list(self._procs):
            try:
                p.proc.wait(3)
            except subprocess.TimeoutExpired:
                p.proc.kill()
                p.proc.wait()
            if p.pump is not None:
                p.pump.join(2)
        self.logs.close()
        for k, v in self.logs.stats.items():
            self.stats[k] = v

    # ------------------------------------------------------------------ API
    def invoke(self, fn: str, payload: Any) -> None:
        """Queue an asynchronous invocation (as Invoke with InvocationType=Event)."""
        key = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        copies = 1
        if self.faults is not None and self.faults.hit("duplicate", key):
            copies = 2
            self.stats["duplicated"] += 1
        for c in range(copies):  # a duplicated delivery is a request of its own
            self._put(_Event(fn, payload, f"{key}:{c}"))

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until nothing is queued or running and the log lines so far are sent to
        CloudWatch Logs; TimeoutError otherwise."""
        deadline = time.monotonic() + timeout
        while self._inflight > 0:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self._inflight} invocation(s) still in flight after {timeout} s")
            time.sleep(0.01)
        self.logs.flush()
        for k, v in self.logs.stats.items():
            self.stats[k] = v

    def _put(self, ev: _Event, delay: float = 0.0) -> None:
        with self._lock:
            self._inflight += 1
        if delay:
            threading.Timer(delay, self._queues[ev.fn].put, args=(ev,)).start()
        else:
            self._queues[ev.fn].put(ev)

    def _done(self) -> None:
        with self._lock:
            self._inflight -= 1

    # ------------------------------------------------------------------ HTTP
    def _http_invoke(self, h: BaseHTTPRequestHandler) -> None:
        m = _PATH_RE.match(h.path)
        body = h.rfile.read(int(h.headers.get("Content-Length") or 0))
        name = urllib.parse.unquote(m.group("fn")) if m else ""  # botocore quotes `:` and `$` (fn:$LATEST)
        if ":function:" in name:
            name = name.split(":function:")[1]
        # the qualifier: in the name (`fn:3`) or Invoke's `Qualifier` query parameter
        query = urllib.parse.parse_qs(urllib.parse.urlsplit(h.path).query).get("Qualifier", [])
        name, _, qualifier = name.partition(":")
        qualifier = qualifier or (query[0] if query else "")
        key = self._resolve(name, qualifier or None)
        if key is None:
            shown = f"{name}:{qualifier}" if qualifier else name
            return self._reply(h, 404, {"Type": "User", "message": f"Function not found: {shown}"},
                               {"x-amzn-ErrorType": "ResourceNotFoundException"})
        name = key
        try:
            payload = json.loads(body or b"{}")
        except ValueError:
            return self._reply(h, 400, {"Type": "User", "message": "Could not parse request body into json"},
                               {"x-amzn-ErrorType": "InvalidRequestContentException"})
        self.stats[f"invoke:{name}"] += 1
        if h.headers.get("X-Amz-Invocation-Type", "RequestResponse") == "Event":
            self.invoke(name, payload)
            return self._reply(h, 202, None, {})
        sync: queue.Queue[dict[str, Any]] = queue.Queue()
        self._put(_Event(name, payload, "sync", attempt=10**6, sync=sync))
        out = sync.get()
        headers = {} if out.get("ok") else {"X-Amz-Function-Error": "Unhandled"}
        return self._reply(h, 200, out.get("result") if out.get("ok") else
                           {"errorType": out.get("errorType"), "errorMessage": out.get("errorMessage")}, headers)

    @staticmethod
    def _reply(h: BaseHTTPRequestHandler, code: int, obj: Any, headers: dict[str, str]) -> None:
        data = b"" if obj is None else json.dumps(obj).encode()
        h.send_response(code)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)

    # ------------------------------------------------------------------ execution
    def _spawn(self, fn: str) -> _Proc:
        spec = self.functions[fn]
        env = {**os.environ, "AWS_ENDPOINT_URL_LAMBDA": self.url, **self.base_env, **spec.env,
               "AWS_LAMBDA_FUNCTION_NAME": function_of(fn),
               # Lambda's reserved variable: the version being executed (same page)
               "AWS_LAMBDA_FUNCTION_VERSION": spec.version,
               # Lambda's reserved variable, the function's configured memory (Lambda Developer
               # Guide, "Defined runtime environment variables", https://docs.aws.amazon.com/lambda/
               # latest/dg/configuration-envvars.html#configuration-envvars-runtime); context.memory_limit_in_mb
               # and the REPORT line's Memory Size read it (lambda_worker.py)
               "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(spec.memory),
               "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.Popen([sys.executable, str(WORKER), str(spec.bundle_dir), spec.handler],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=env, cwd=str(spec.bundle_dir), bufsize=1,
                                errors="replace")
        p = _Proc(proc, stream_name(), spec=spec)
        p.pump = threading.Thread(target=self._pump, args=(p, fn), daemon=True)
        p.pump.start()
        first = json.loads(proc.stdout.readline() or '{"fatal": "worker exited"}')  # type: ignore[union-attr]
        if "fatal" in first:
            proc.wait()
            raise RuntimeError(f"{fn}: {first['fatal']}")
        self._procs.append(p)
        self.stats["cold_starts"] += 1
        return p

    def _slot(self, fn: str) -> None:
        p: _Proc | None = None
        q = self._queues[fn]
        while True:
            ev = q.get()
            if ev is None:
                return
            spec = self.functions[fn]
            try:
                if p is not None and p.spec is not spec:  # add_function changed it: retire
                    try:
                        p.proc.stdin.close()  # type: ignore[union-attr]
                    except OSError:
                        pass
                    p = None
                if p is None or p.proc.poll() is not None:
                    p = self._spawn(fn)
                out = self._run(p, fn, ev, spec)
            except Exception as exc:  # noqa: BLE001 - spawn failure counts as a failed attempt
                out = {"ok": False, "errorType": "Runtime.Unknown", "errorMessage": str(exc)}
                p = None
            if out.get("crashed"):
                p = None
            self._finish(ev, spec, out)

    def _pump(self, p: _Proc, fn: str) -> None:
        """Forward the worker's stderr lines to its log stream (and echo them here). Never
        stops reading before EOF: a worker blocked on a full stderr pipe would hang."""
        for line in p.proc.stderr:  # type: ignore[union-attr]
            line = line.rstrip("\n")
            try:
                self.logs.add(function_of(fn), p.stream, line)
                if not line.startswith('{"unum":'):
                    sys.stderr.write(line + "\n")
            except Exception:  # noqa: BLE001  (echo/forwarding is best effort)
                self.logs.stats["log_errors"] += 1
            if line.startswith("REPORT RequestId: "):
                with p.seen:
                    p.reported.add(line.split()[2])
                    p.seen.notify_all()

    def _run(self, p: _Proc, fn: str, ev: _Event, spec: LocalFunctionSpec) -> dict[str, Any]:
        timer = None
        last = ev.attempt > spec.max_retry_attempts
        f = self.faults
        # the seeded kill is for this request only: a timer that fires as the request ends
        # (Timer.cancel does not stop a callback already under way) must not kill the worker
        # in its next request, which may be an event's last attempt or a sync call
        armed = {"live": True, "fired": False}
        guard = threading.Lock()

        def kill() -> None:
            with guard:
                if armed["live"]:
                    armed["fired"] = True
                    p.proc.kill()
                else:
                    self.stats["kills_missed"] += 1  # the request ended first
        if f is not None and not last and ev.sync is None and f.hit("kill", ev.key, ev.attempt):
            delay = f.draw("kill_ms", ev.key, ev.attempt) * f.max_kill_ms / 1000
            timer = threading.Timer(delay, kill)
            timer.start()
            self.stats["kills_armed"] += 1
        req = {"id": ev.key, "event": ev.payload, "deadline_ms": time.time() * 1000 + spec.timeout * 1000,
               "request_id": ev.rid}
        self.logs.add(function_of(fn), p.stream, f"START RequestId: {ev.rid} Version: {spec.version}")
        t0 = time.perf_counter()
        try:
            p.proc.stdin.write(json.dumps(req) + "\n")  # type: ignore[union-attr]
            p.proc.stdin.flush()  # type: ignore[union-attr]
            line = p.proc.stdout.readline()  # type: ignore[union-attr]
        except (BrokenPipeError, OSError):
            line = ""
        finally:
            with guard:
                armed["live"] = False
            if timer is not None:
                timer.cancel()
            self.stats[f"ms:{fn}"] += int((time.perf_counter() - t0) * 1000) + 1
            self.stats[f"runs:{fn}"] += 1
        ms = (time.perf_counter() - t0) * 1000
        if line and armed["fired"]:  # killed after it answered: the answer stands, the worker is gone
            p.proc.wait()
        if not line:
            p.proc.kill()
            p.proc.wait()
            if p.pump is not None:
                p.pump.join(2)  # the killed worker's last lines first
            self.logs.add(function_of(fn), p.stream, f"RequestId: {ev.rid} Error: Runtime exited with error: signal: killed")
            self.logs.add(function_of(fn), p.stream, f"REPORT RequestId: {ev.rid}\tDuration: {ms:.2f} ms\tBilled Duration: "
                                        f"{int(ms) + 1} ms\tMemory Size: {spec.memory} MB\tMax Memory Used: 0 MB\t"
                                        "Status: error\tError Type: Runtime.ExitError")
            self.stats["crashes"] += 1
            self.durations.append((fn, ms))
            return {"ok": False, "crashed": True, "errorType": "Runtime.ExitError",
                    "errorMessage": f"RequestId: {ev.rid} Error: Runtime exited with error: signal: killed"}
        out = json.loads(line)
        self.durations.append((fn, float(out.get("ms", ms))))
        with p.seen:  # the request's log lines are read before it counts as done
            p.seen.wait_for(lambda: ev.rid in p.reported, timeout=2)
            p.reported.discard(ev.rid)
        return out

    def _finish(self, ev: _Event, spec: LocalFunctionSpec, out: dict[str, Any]) -> None:
        self.stats["executions"] += 1
        if ev.sync is not None:
            ev.sync.put(out)
            self._done()
            return
        if not out.get("ok"):
            self.stats["failed_attempts"] += 1
            if ev.attempt <= spec.max_retry_attempts:
                self.stats["retries"] += 1
                self._put(_Event(ev.fn, ev.payload, ev.key, ev.attempt + 1, rid=ev.rid),
                          self.retry_delay * ev.attempt)
            elif spec.on_failure and not self._stopping:
                self.stats["on_failure"] += 1
                record = {"version": "1.0", "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
                          "requestContext": {"requestId": ev.rid, "condition": "RetriesExhausted",
                                             "functionArn": "arn:aws:lambda:us-east-1:123456789012:function:"
                                                            f"{function_of(ev.fn)}:{spec.version}",
                                             "approximateInvokeCount": ev.attempt},
                          "requestPayload": ev.payload,
                          "responseContext": {"statusCode": 200, "executedVersion": spec.version,
                                              "functionError": "Unhandled"},
                          "responsePayload": {"errorType": out.get("errorType"),
                                              "errorMessage": out.get("errorMessage")}}
                self._put(_Event(spec.on_failure, record, ev.key + ":dest"))
        self._done()


def _logs_client(base_env: dict[str, str]):
    """A CloudWatch Logs client on the logs endpoint named in `base_env` (moto), else None
    (lines are counted, never sent: the emulator must not write to a real account)."""
    url = base_env.get("AWS_ENDPOINT_URL_LOGS") or base_env.get("AWS_ENDPOINT_URL")
    if not url:
        return None
    import boto3

    return boto3.client("logs", endpoint_url=url, region_name=base_env.get("AWS_REGION") or
                        base_env.get("AWS_DEFAULT_REGION") or "us-east-1",
                        aws_access_key_id=base_env.get("AWS_ACCESS_KEY_ID"),
                        aws_secret_access_key=base_env.get("AWS_SECRET_ACCESS_KEY"),
                        aws_session_token=base_env.get("AWS_SESSION_TOKEN"))
