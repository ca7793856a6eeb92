"""Load on `unumctl serve`: N concurrent sessions through the Step Functions API, with and
without injected faults, and a SIGKILL of the service in the middle (issue 12 item 3).

    python bench/serve_load.py [--sessions 1000] [--concurrency 48] [--faults SPEC] [--json]
    python bench/serve_load.py --kill-restart [--sessions 1000]

The service hosts two examples, copied into a fresh temporary directory (so their state,
`APP/.unum/local/dev/unum.db`, starts empty), as two state machines:

- `orders-sfn`: Choice, then a Map over 5 orders (Validate -> Choice -> Charge with Retry
  (IntervalSeconds 1) and Catch -> Pass) with its fan-in, then Summarize;
- `iot-pipeline-sfn`: a plain chain of two Tasks (Aggregate -> HvacDecide).

Sessions alternate between the two; each gets its own input (order ids, amounts and
readings derived from its number), and its expected output is computed in this process by a
pure-Python reference of the example (its handlers called directly, the state machine's
Choice/Retry/Catch/Pass steps written out below), independent of the engine.

A `unumctl serve --port P --state DIR` child process (TMPDIR short, under /tmp), then two
pools of `--concurrency` threads each, every thread with its own boto3 `stepfunctions`
client: one sends StartExecution for every session (all at once, as fast as the pool
goes), the other DescribeExecution of every started one until it ends
(each session at most every 0.25 s, or 10% of its age so far, at most 2 s: the client's
polling CPU stays small beside the service's; the client latency's resolution is that). Rounds:

- `clean`: no faults;
- `faults`: `unumctl serve --faults SPEC` (runtime/faults.py; default
  `seed=7,crash=0.05,duplicate=0.1,delay=0.2`: the four engine crash points, duplicate and
  delayed deliveries). The local platform refuses `kill`; `--kill-workers S` adds a SIGKILL
  of one random worker process of serve every S seconds (off by default: a kill on an
  invocation's last delivery attempt fails its session, as Lambda's retries would);
- `sync`: StartSyncExecution for every session (each client thread waits for its
  execution's end; no DescribeExecution);
- `kill-restart` (`--kill-restart`, alone): SIGKILL of serve once half the StartExecution
  calls are acknowledged, then serve again on the same port, APPs and state; the client
  retries the calls that failed (a StartExecution that meets ExecutionAlreadyExists checks,
  with DescribeExecution, that the execution has its input: started before the kill);
  `--kill-signal TERM` stops it cleanly instead; `kill-restart-faults` (`--rounds`) also
  injects --faults in both services.

Checks (exit 1 and one line per problem otherwise):
- every session SUCCEEDED with exactly the reference output (0 wrong results);
- every started session ends within --timeout (0 lost sessions);
- after every session ended and serve stopped (SIGTERM), each app's datastore holds nothing
  but `result` items (SqliteDatastore.dump, the adapter's listing: items and sets), its blob
  directory nothing but the blobs those results name (runtime.storage.item_blobs), and its
  durable queue is empty (0 leaked items);
- ListExecutions (paginated) of each machine lists exactly its sessions with their status,
  and GetExecutionHistory of a few runs from ExecutionStarted to ExecutionSucceeded;
- serve exits 0 on SIGTERM and printed no `database is locked` / Traceback on stderr.

Reports: sessions/s (N / (last end - first start), client clock; and the service's own,
from DescribeExecution startDate/stopDate), latency p50/p99 (client: StartExecution sent ->
DescribeExecution first saw the end, so its resolution is the poll interval; service:
stopDate - startDate), CPU seconds of serve itself, of its workers alive at the end (in
a kill-restart round: since the restart) and of this client, peak memory: the highest,
over samples every 0.5 s, of the sum of VmHWM (/proc/PID/status: each process's resident-set high-water mark) of serve and its live
descendants (the worker processes), in MB (an upper bound of the simultaneous peak: the
marks of different processes may come from different instants; a worker that exited
before a sample is not counted); the counts; and `uptime`. Numbers are reported, never
asserted beyond the checks above.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import statistics
from collections import Counter
import subprocess
import sys
import tempfile
import threading
import time
import queue
from concurrent.futures import Future
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import boto3  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.exceptions import BotoCoreError, ClientError  # noqa: E402

from runtime.local.datastore import SqliteDatastore  # noqa: E402
from runtime.payload import RESULT_KEY  # noqa: E402
from runtime.storage import item_blobs  # noqa: E402

ACCOUNT = "000000000000"
MACHINES = ("orders-sfn", "iot-pipeline-sfn")
DEFAULT_FAULTS = "seed=7,crash=0.05,duplicate=0.1,delay=0.2"
POLL_INTERVAL = 0.25  # s between two DescribeExecution of one session, at least,
POLL_AGE = 0.1        # and at least this fraction of the session's age so far,
POLL_MAX = 2.0        # up to this (s): the client's CPU stays small beside the service's
LIVE: list["Serve"] = []  # every serve started: killed on the way out if the bench fails
BAD_STDERR = ("database is locked", "Traceback", "Too many open files", "ServiceException")


# ---------------------------------------------------------------------------- the reference
def _handler(path: Path):
    spec = importlib.util.spec_from_file_location(f"ref_{path.parent.name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.handler


class _Ctx:
    instance = "reference"


class Reference:
    """The examples' outputs computed without the engine: their handlers called directly,
    the state machine's own steps (examples/orders-sfn/statemachine.json) written out."""

    def __init__(self):
        ex = ROOT / "examples"
        self.validate = _handler(ex / "orders-sfn/functions/validate/app.py")
        self.charge = _handler(ex / "orders-sfn/functions/charge/app.py")
        self.summarize = _handler(ex / "orders-sfn/functions/summarize/app.py")
        self.aggregate = _handler(ex / "iot-pipeline/functions/aggregate/app.py")
        self.hvac = _handler(ex / "iot-pipeline/functions/hvac_decide/app.py")

    def orders(self, value: dict[str, Any]) -> Any:
        results = []
        for index, order in enumerate(value["orders"]):
            doc = {"order": order, "index": index}
            try:
                doc = self.validate(doc, _Ctx())
            except Exception as exc:  # Catch InvalidOrder -> Rejected
                results.append({"id": order["id"], "status": "rejected", "error": type(exc).__name__})
                continue
            if doc["order"]["amount"] > 1000 and doc["order"].get("vip") is not True:  # NeedsReview
                results.append({"id": order["id"], "status": "review", "amount": order["amount"]})
                continue
            ctx = _Ctx()
            ctx.instance = f"ref-{order['id']}"  # one instance name for the Task's attempts, as the engine's
            for attempt in range(3):  # Retry TransientError, MaxAttempts 2
                try:
                    pay = self.charge(doc, ctx)
                    results.append({"id": order["id"], "status": "charged", "amount": pay["charged"],
                                    "note": f"card ...{pay['card_last4']}"})
                    break
                except Exception as exc:
                    if type(exc).__name__ == "TransientError" and attempt < 2:
                        continue
                    results.append({"id": order["id"], "status": "declined", "error": type(exc).__name__})
                    break
        return self.summarize({**value, "results": results}, _Ctx())

    def iot(self, value: list[dict[str, float]]) -> Any:
        return self.hvac(self.aggregate(value, _Ctx()), _Ctx())


def session_input(i: int) -> tuple[str, Any]:
    """(machine, input) of session i: its own ids and numbers, the example's shape."""
    if i % 2 == 0:
        p = f"S{i}-"
        return MACHINES[0], {"orders": [
            {"id": p + "A1", "amount": 40 + i % 97, "vip": False, "card": "4111111111111111"},
            {"id": p + "A2", "amount": 2500 + i % 13, "vip": False, "card": "4111111111112222"},
            {"id": p + "A3", "amount": 2500 + i, "vip": True, "card": "4111111111113333", "flaky": True},
            {"id": p + "A4", "amount": 15, "vip": False, "card": "0000111122224444"},
            {"id": p + "A5", "amount": -(i % 5) - 1, "vip": False, "card": "4111111111115555"}]}
    rnd = random.Random(i)
    return MACHINES[1], [{f"2021-02-20T{h:02d}:30:00.000": round(rnd.uniform(0, 300), 1)} for h in range(8, 8 + 4 + i % 5)]


# ---------------------------------------------------------------------------- the service
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_apps(dest: Path) -> list[Path]:
    """The two examples (and the IR example whose code iot-pipeline-sfn shares), without state."""
    ignore = shutil.ignore_patterns(".unum", "__pycache__")
    for name in ("orders-sfn", "iot-pipeline-sfn", "iot-pipeline"):
        shutil.copytree(ROOT / "examples" / name, dest / name, ignore=ignore)
    return [dest / m for m in MACHINES]


class Serve:
    """`unumctl serve` as a child process; its stderr goes to `log`."""

    def __init__(self, apps: list[Path], state: Path, port: int, tmp: Path, log: Path,
                 faults: str | None, workers: int):
        self.log = log
        args = [sys.executable, "-m", "unumctl.cli", "serve", *map(str, apps), "--port", str(port),
                "--state", str(state), "--workers", str(workers)]
        if faults:
            args += ["--faults", faults]
        env = {**os.environ, "TMPDIR": str(tmp), "PYTHONPATH": str(ROOT)}
        with open(log, "a") as err:
            self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=err, text=True)
        line: list[str] = []
        t = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()), daemon=True)
        t.start()
        t.join(180)
        if not line or not line[0].startswith("http://127.0.0.1:"):
            self.proc.kill()
            raise SystemExit(f"serve did not start: {line}\n{log.read_text()[-3000:]}")
        self.url = line[0].strip()
        LIVE.append(self)

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 120) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def _hwm_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


class MemorySampler(threading.Thread):
    """Every 0.5 s: the sum of VmHWM over the service process tree; keeps the highest."""

    def __init__(self):
        super().__init__(daemon=True)
        self.pid: int | None = None
        self.peak_kb = 0
        self.peak_processes = 0
        self.peak_fds = self.peak_threads = 0  # of the serve process itself
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.5):
            if self.pid is None:
                continue
            pids = _descendants(self.pid)
            total = sum(_hwm_kb(p) for p in pids)
            if total > self.peak_kb:
                self.peak_kb, self.peak_processes = total, len(pids)
            try:
                self.peak_fds = max(self.peak_fds, len(os.listdir(f"/proc/{self.pid}/fd")))
                self.peak_threads = max(self.peak_threads, len(os.listdir(f"/proc/{self.pid}/task")))
            except OSError:
                pass


class WorkerKiller(threading.Thread):
    """SIGKILL one random descendant of serve every `interval` s (a crashed instance)."""

    def __init__(self, interval: float):
        super().__init__(daemon=True)
        self.interval = interval
        self.pid: int | None = None
        self.kills = 0
        self.stop = threading.Event()

    def run(self) -> None:
        rnd = random.Random(1)
        while not self.stop.wait(self.interval):
            if self.pid is None:
                continue
            workers = [p for p in _descendants(self.pid) if p != self.pid]
            if workers:
                try:
                    os.kill(rnd.choice(workers), signal.SIGKILL)
                    self.kills += 1
                except ProcessLookupError:
                    pass


# ---------------------------------------------------------------------------- the client
class Client:
    """`n` boto3 stepfunctions clients for `url`, made up front (so that no call times a
    client's creation); each pool thread takes its own on first use (thread-local)."""

    def __init__(self, url: str, n: int):
        self.url = url
        self._local = threading.local()
        self._spare: list[Any] = []
        self._lock = threading.Lock()
        self.make(n)

    def make(self, n: int) -> None:
        session = boto3.session.Session()
        clients = [session.client(
            "stepfunctions", endpoint_url=self.url, region_name="us-east-1", aws_access_key_id="bench",
            aws_secret_access_key="bench",
            config=Config(retries={"max_attempts": 1}, connect_timeout=10, read_timeout=600,
                          max_pool_connections=2, inject_host_prefix=False)) for _ in range(n)]
        with self._lock:
            self._spare = clients

    def sfn(self):
        c = getattr(self._local, "client", None)
        if c is None:
            with self._lock:
                c = self._spare.pop() if self._spare else None
            if c is None:  # a thread beyond the pool's (the main thread's final checks)
                self.make(1)
                with self._lock:
                    c = self._spare.pop()
            self._local.client = c
        return c


class Pool:
    """`n` threads running submitted calls in order; submit() returns a Future. One pool
    sends the StartExecution calls, another the DescribeExecution calls, so that an
    execution's end is seen when it happens, not after every start."""

    def __init__(self, n: int):
        self._q: queue.SimpleQueue = queue.SimpleQueue()
        self._threads = [threading.Thread(target=self._run, daemon=True) for _ in range(n)]
        for th in self._threads:
            th.start()

    def submit(self, fn: Any, *args: Any) -> Future:
        f: Future = Future()
        self._q.put((f, fn, args))
        return f

    def _run(self) -> None:
        while True:
            f, fn, args = self._q.get()
            if fn is None:
                return
            try:
                f.set_result(fn(*args))
            except BaseException as exc:  # noqa: BLE001  (raised by Future.result())
                f.set_exception(exc)

    def __enter__(self) -> "Pool":
        return self

    def __exit__(self, *exc: Any) -> None:
        for _ in self._threads:
            self._q.put((None, None, ()))
        for th in self._threads:
            th.join()


def machine_arn(m: str) -> str:
    return f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{m}"


def run_round(kind: str, args: argparse.Namespace, ref: Reference) -> dict[str, Any]:
    """One round (clean, faults or kill-restart) on a fresh copy of the apps."""
    n = args.sessions
    base = Path(tempfile.mkdtemp(prefix="sl-", dir="/tmp"))
    tmp = base / "t"
    tmp.mkdir()
    apps = copy_apps(base / "apps")
    state, log = base / "state", base / "serve.log"
    port = free_port()
    faults = args.faults if kind in ("faults", "kill-restart-faults") else None
    sessions = {f"load-{i}": session_input(i) for i in range(n)}
    expected = {s: (ref.orders(v) if m == MACHINES[0] else ref.iot(v)) for s, (m, v) in sessions.items()}

    mem = MemorySampler()
    mem.start()
    killer = WorkerKiller(args.kill_workers) if kind == "faults" and args.kill_workers else None
    srv = Serve(apps, state, port, tmp, log, faults, args.workers)
    mem.pid = srv.proc.pid
    if killer:
        killer.pid = srv.proc.pid
        killer.start()
    client = Client(srv.url, 2 * args.concurrency)
    lock = threading.Lock()
    acked = threading.Event()
    t_sent: dict[str, float] = {}
    started: set[str] = set()
    ended: dict[str, dict[str, Any]] = {}
    t_end: dict[str, float] = {}
    errors: list[str] = []
    call_s: dict[str, list[float]] = {"StartExecution": [], "StartSyncExecution": [], "DescribeExecution": []}
    counts: dict[str, Any] = {"running_at_kill": 0, "ended_at_kill": 0, "start_retries": 0, "already_existed": 0}
    retried_by: Counter[str] = Counter()  # why the retried StartExecution calls failed
    restarting = threading.Event()
    restarted = threading.Event()

    def start(name: str) -> None:
        machine, value = sessions[name]
        body = json.dumps(value)
        t_sent[name] = time.time()
        while True:
            try:
                c0 = time.perf_counter()
                if kind == "sync":
                    r = client.sfn().start_sync_execution(stateMachineArn=machine_arn(machine), name=name, input=body)
                    with lock:
                        call_s["StartSyncExecution"].append(time.perf_counter() - c0)
                        ended[name], t_end[name] = r, time.time()
                    break
                client.sfn().start_execution(stateMachineArn=machine_arn(machine), name=name, input=body)
                with lock:
                    call_s["StartExecution"].append(time.perf_counter() - c0)
                break
            except ClientError as exc:
                if exc.response["Error"]["Code"] == "ExecutionAlreadyExists" and restarted.is_set():
                    d = client.sfn().describe_execution(
                        executionArn=f"arn:aws:states:us-east-1:{ACCOUNT}:execution:{machine}:{name}")
                    if json.loads(d["input"]) == value:
                        counts["already_existed"] += 1
                        break  # registered before the kill; it ran or runs on
                if exc.response["Error"]["Code"] == "ServiceUnavailable" and restarting.is_set():
                    with lock:
                        counts["start_retries"] += 1
                        retried_by[exc.response["Error"]["Code"]] += 1
                    restarted.wait(300)  # serve is stopping (SIGTERM): asked again once it runs again
                    time.sleep(0.05)
                    continue
                with lock:
                    errors.append(f"{name}: StartExecution: {exc}")
                return
            except BotoCoreError as exc:
                if not kind.startswith("kill-restart") or not (restarting.is_set() or restarted.is_set()):
                    with lock:
                        errors.append(f"{name}: StartExecution: {exc}")
                    return
                with lock:
                    counts["start_retries"] += 1
                    retried_by[type(exc).__name__] += 1
                restarted.wait(300)
                time.sleep(0.05)
        with lock:
            started.add(name)
            if kind.startswith("kill-restart") and len(started) >= n // 2:
                acked.set()

    def describe(name: str) -> None:
        machine = sessions[name][0]
        try:
            c0 = time.perf_counter()
            d = client.sfn().describe_execution(
                executionArn=f"arn:aws:states:us-east-1:{ACCOUNT}:execution:{machine}:{name}")
            with lock:
                call_s["DescribeExecution"].append(time.perf_counter() - c0)
        except (BotoCoreError, ClientError) as exc:
            if kind.startswith("kill-restart") and (restarting.is_set() or restarted.is_set()):
                return  # down while it restarts; asked again
            with lock:
                errors.append(f"{name}: DescribeExecution: {exc}")
            return
        if d["status"] != "RUNNING":
            with lock:
                ended[name] = d
                t_end[name] = time.time()

    def restart() -> None:
        nonlocal srv
        acked.wait()
        restarting.set()
        with lock:
            counts["running_at_kill"] = len(started - set(ended))
            counts["ended_at_kill"] = len(ended)
        srv.stop(getattr(signal, f"SIG{args.kill_signal}"))
        time.sleep(0.2)
        srv = Serve(apps, state, port, tmp, log, faults, args.workers)
        mem.pid = srv.proc.pid
        restarted.set()

    t0 = time.time()
    cpu0 = time.process_time()
    deadline = time.monotonic() + args.timeout
    restarter = threading.Thread(target=restart, daemon=True) if kind.startswith("kill-restart") else None
    if restarter:
        restarter.start()
    with Pool(args.concurrency) as pool, Pool(args.concurrency) as pollers:
        starts = [pool.submit(start, s) for s in sessions]
        in_flight: dict[str, Any] = {}
        last_poll: dict[str, float] = {}
        while time.monotonic() < deadline:
            now, wall = time.monotonic(), time.time()
            with lock:
                todo = [s for s in started if s not in ended]
            for s in todo:
                f = in_flight.get(s)
                every = min(POLL_MAX, max(POLL_INTERVAL, POLL_AGE * (wall - t_sent[s])))
                if (f is None or f.done()) and now - last_poll.get(s, 0.0) >= every:
                    last_poll[s] = now
                    in_flight[s] = pollers.submit(describe, s)
            if all(f.done() for f in starts) and len(ended) >= len(started):
                break
            time.sleep(0.05)
        for f in starts:
            f.result()
    t_last = max(t_end.values(), default=time.time())
    if restarter:
        restarter.join(5)

    # quiesce: the queue of each app empties (duplicates and late deliveries finish), then stop
    dbs = [a / ".unum" / "local" / "dev" / "unum.db" for a in apps]
    drain_deadline = time.monotonic() + 60
    while time.monotonic() < drain_deadline and any(_queued(db) for db in dbs):
        time.sleep(0.2)
    listing = check_listing(client, sessions, ended)
    cpu = {"serve": _cpu_s(srv.proc.pid), "workers": round(sum(_cpu_s(p) for p in _descendants(srv.proc.pid)
                                                               if p != srv.proc.pid), 1),
           "client": round(time.process_time() - cpu0, 1)}
    rc = srv.stop(signal.SIGTERM)
    mem.stop.set()
    if killer:
        killer.stop.set()

    problems = list(errors[:20]) + listing
    if len(errors) > 20:
        problems.append(f"... {len(errors) - 20} more client errors")
    lost = sorted(set(sessions) - set(ended))
    not_started = sorted(set(sessions) - started)
    wrong = []
    for s, d in ended.items():
        out = json.loads(d["output"]) if d.get("output") else None
        if d["status"] != "SUCCEEDED" or out != expected[s]:
            wrong.append(s)
            if len(wrong) <= 5:
                problems.append(f"{s}: {d['status']} {d.get('error', '')} {str(d.get('cause', ''))[:300]} "
                                f"output {str(out)[:200]} != expected {str(expected[s])[:200]}")
    if lost:
        problems.append(f"{len(lost)} session(s) did not end within {args.timeout:g} s: {lost[:5]}")
    if not_started:
        problems.append(f"{len(not_started)} session(s) never acknowledged by StartExecution: {not_started[:5]}")
    leaks = {}
    for app, db in zip(apps, dbs):
        leaks[app.name] = leaked(db, app / ".unum" / "local" / "dev" / "blobs")
    n_leaked = sum(len(v) for v in leaks.values())
    for app, found in leaks.items():
        if found:
            problems.append(f"{app}: {len(found)} leaked: {found[:5]}")
    if rc != 0:
        problems.append(f"serve exited {rc} on SIGTERM")
    text = log.read_text(errors="replace")
    for bad in BAD_STDERR:
        if bad in text:
            line = next(ln for ln in text.splitlines() if bad in ln)
            problems.append(f"serve stderr has {bad!r} ({text.count(bad)} times), e.g. {line[:300]}")

    client_lat = sorted(t_end[s] - t_sent[s] for s in ended if s in t_sent)
    service_lat = sorted((d["stopDate"] - d["startDate"]).total_seconds() for d in ended.values()
                         if d.get("stopDate") and d.get("startDate"))
    svc_span = None
    if ended:
        svc_span = (max(d["stopDate"] for d in ended.values()) - min(d["startDate"] for d in ended.values())
                    ).total_seconds()
    report = {
        "round": kind, "sessions": n, "concurrency": args.concurrency, "workers": args.workers,
        "faults": faults, "kill_workers_every_s": args.kill_workers if killer else None,
        "worker_kills": killer.kills if killer else 0,
        "wall_s": round(t_last - t0, 2),
        "sessions_per_s": round(len(ended) / (t_last - t0), 2) if ended else 0.0,
        "sessions_per_s_service": round(len(ended) / svc_span, 2) if svc_span else None,
        "latency_client_s": _pcts(client_lat), "latency_service_s": _pcts(service_lat),
        "api_call_s": {op: _pcts(sorted(v)) for op, v in call_s.items()},
        "describe_calls": len(call_s["DescribeExecution"]),
        "peak_rss_mb": round(mem.peak_kb / 1024, 1), "peak_processes": mem.peak_processes,
        "cpu_s": cpu, "serve_peak_fds": mem.peak_fds, "serve_peak_threads": mem.peak_threads,
        "succeeded": sum(1 for d in ended.values() if d["status"] == "SUCCEEDED"),
        "wrong_results": len(wrong), "lost_sessions": len(lost), "leaked_items": n_leaked,
        "client_errors": len(errors), "serve_exit": rc, "uptime": _uptime(), "problems": problems,
        **({"kill": {**counts, "retried_by": dict(retried_by)}, "kill_signal": args.kill_signal}
           if kind.startswith("kill-restart") else {}),
    }
    if not problems and not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    else:
        report["kept"] = str(base)
    return report


def check_listing(client: Client, sessions: dict[str, tuple[str, Any]], ended: dict[str, Any]) -> list[str]:
    """ListExecutions (paginated) of each machine names exactly its sessions with the status
    DescribeExecution saw; GetExecutionHistory of 3 ended sessions per machine runs from
    ExecutionStarted to ExecutionSucceeded. Returns the problems."""
    problems = []
    sfn = client.sfn()
    for m in MACHINES:
        listed = {e["name"]: e["status"] for page in sfn.get_paginator("list_executions").paginate(
            stateMachineArn=machine_arn(m), PaginationConfig={"PageSize": 1000}) for e in page["executions"]}
        want = {s: ended[s]["status"] if s in ended else "RUNNING" for s, (mm, _) in sessions.items() if mm == m}
        if listed != want:
            diff = sorted(set(listed.items()) ^ set(want.items()))[:5]
            problems.append(f"ListExecutions of {m}: {len(listed)} listed, {len(want)} expected; differ: {diff}")
        for s in [s for s in want if s in ended][:3]:
            types = [e["type"] for e in sfn.get_execution_history(
                executionArn=f"arn:aws:states:us-east-1:{ACCOUNT}:execution:{m}:{s}", maxResults=1000)["events"]]
            if not types or types[0] != "ExecutionStarted" or types[-1] != "ExecutionSucceeded":
                problems.append(f"GetExecutionHistory of {s}: {types[:3]} ... {types[-3:]}")
    return problems


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a live process has used (/proc/PID/stat)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)
    except (OSError, ValueError, IndexError):
        return 0.0


def _queued(db: Path) -> int:
    try:
        con = sqlite3.connect(db, timeout=30)
        try:
            return con.execute("SELECT count(*) FROM local_queue").fetchone()[0]
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def leaked(db: Path, blob_root: Path) -> list[str]:
    """What the datastore holds beyond the results: items and sets other than `result`
    (SqliteDatastore.dump), blobs not named by a result, queued invocations."""
    ds = SqliteDatastore(db)
    try:
        out = []
        keep: dict[str, set[Path]] = {}
        for session, names in sorted(ds.dump().items()):
            out += [f"{session}/{n}" for n in names if n != RESULT_KEY]
            if RESULT_KEY in names:
                keep[session] = {blob_root / session / k for k in item_blobs(ds.get(session, RESULT_KEY))}
        if blob_root.is_dir():
            for p in sorted(blob_root.rglob("*")):
                if p.is_file():
                    session = p.relative_to(blob_root).parts[0]
                    if p not in keep.get(session, set()):
                        out.append(f"blob {p.relative_to(blob_root)}")
        queued = ds.db.execute("SELECT session, function FROM local_queue").fetchall()
        out += [f"queued {s}/{f}" for s, f in queued]
        return out
    finally:
        ds.close()


def _pcts(xs: list[float]) -> dict[str, float] | None:
    if not xs:
        return None
    def q(p: float) -> float:
        return round(xs[min(len(xs) - 1, int(p * len(xs)))], 3)
    return {"p50": q(0.5), "p99": q(0.99), "max": round(xs[-1], 3), "mean": round(statistics.fmean(xs), 3)}


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return "?"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=1000, help="sessions per round (default 1000)")
    ap.add_argument("--concurrency", type=int, default=48, help="client threads that start executions, and as "
                    "many that poll them; each thread its own boto3 client (default 48)")
    ap.add_argument("--workers", type=int, default=2, help="serve --workers (processes per function)")
    ap.add_argument("--faults", default=DEFAULT_FAULTS, help=f"fault spec of the faults round (default {DEFAULT_FAULTS})")
    ap.add_argument("--rounds", default="clean,faults", help="comma-separated: clean, faults, sync "
                    "(StartSyncExecution, no polling), kill-restart, kill-restart-faults (default clean,faults)")
    ap.add_argument("--kill-restart", action="store_true", help="only the SIGKILL-and-restart round (same as "
                    "--rounds kill-restart; kill-restart-faults also injects --faults in both services)")
    ap.add_argument("--kill-signal", default="KILL", choices=("KILL", "TERM"),
                    help="the signal of the kill-restart rounds (default KILL)")
    ap.add_argument("--kill-workers", type=float, default=0.0, metavar="S",
                    help="faults round: SIGKILL a random worker of serve every S seconds (default off)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for every session to end")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    ap.add_argument("--keep", action="store_true", help="keep each round's directory (kept anyway on a problem)")
    args = ap.parse_args(argv)
    rounds = ["kill-restart"] if args.kill_restart else [r.strip() for r in args.rounds.split(",") if r.strip()]
    for r in rounds:
        if r not in ("clean", "faults", "sync", "kill-restart", "kill-restart-faults"):
            ap.error(f"--rounds: {r!r} is not clean, faults, sync, kill-restart or kill-restart-faults")
    ref = Reference()
    reports = []
    try:
        for r in rounds:
            rep = run_round(r, args, ref)
            reports.append(rep)
            if not args.json:
                _print(rep)
    finally:
        for s in LIVE:
            if s.proc.poll() is None:
                s.proc.kill()
                s.proc.wait()
    ok = all(not r["problems"] for r in reports)
    if args.json:
        print(json.dumps({"ok": ok, "rounds": reports}, indent=2))
    return 0 if ok else 1


def _print(r: dict[str, Any]) -> None:
    print(f"== {r['round']}: {r['sessions']} sessions, {r['concurrency']} client threads, serve --workers "
          f"{r['workers']}" + (f", faults {r['faults']}" if r["faults"] else "")
          + (f", {r['worker_kills']} worker kills" if r["worker_kills"] else ""))
    print(f"   {r['sessions_per_s']} sessions/s (service clock: {r['sessions_per_s_service']}), "
          f"wall {r['wall_s']} s")
    print(f"   latency client {r['latency_client_s']}")
    print(f"   latency service {r['latency_service_s']}")
    for op, v in r["api_call_s"].items():
        if v:
            print(f"   {op} call {v}")
    print(f"   {r['describe_calls']} DescribeExecution calls")
    print(f"   peak memory {r['peak_rss_mb']} MB (sum of VmHWM over {r['peak_processes']} processes); serve: "
          f"{r['serve_peak_fds']} open files, {r['serve_peak_threads']} threads at most")
    print(f"   CPU seconds: serve {r['cpu_s']['serve']} (API and dispatchers), its live workers "
          f"{r['cpu_s']['workers']}, this client {r['cpu_s']['client']}")
    print(f"   succeeded {r['succeeded']}, wrong results {r['wrong_results']}, lost sessions "
          f"{r['lost_sessions']}, leaked items {r['leaked_items']}, client errors {r['client_errors']}, "
          f"serve exit {r['serve_exit']}")
    if r.get("kill"):
        k = r["kill"]
        print(f"   SIG{r['kill_signal']} with {k['running_at_kill']} acknowledged sessions running ({k['ended_at_kill']} ended); "
              f"{k['start_retries']} StartExecution calls failed {k['retried_by']} and were retried after the restart "
              f"({k['already_existed']} met ExecutionAlreadyExists with their input: registered before the kill)")
    print(f"   uptime: {r['uptime']}")
    for p in r["problems"]:
        print(f"   PROBLEM: {p}")
    if r.get("kept"):
        print(f"   kept for inspection: {r['kept']}")
    sys.stdout.flush()


if __name__ == "__main__":
    sys.exit(main())
