"""The local target's FaaS platform: worker processes, an async invoke queue, retries, faults.

Like Lambda: each function runs in its own processes ("instances", one invocation at a time,
started on demand up to `workers_per_function`), invocations are queued and delivered at
least once, a crashed delivery is retried up to `max_attempts` times and then recorded as
the session's failure (as Lambda's on-failure destination would). With a FaultSpec, the
dispatcher also duplicates and delays deliveries (seeded, see runtime.local.faults).

All scheduling state is owned by one dispatcher thread; the CLI thread talks to it through
a locked inbox.
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import json
import os
import secrets
import selectors
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from collections import Counter, deque
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Listener
from pathlib import Path
from typing import Any

from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.local.faults import FaultSpec
from runtime.payload import RESULT_KEY
from runtime.session import Retention, give_up

WORKER = Path(__file__).with_name("worker.py")


@dataclass
class _Msg:
    id: int
    fn: str
    payload: dict[str, Any]
    key: str
    attempt: int = 1


@dataclass
class _Worker:
    fn: str
    proc: subprocess.Popen
    conn: Connection | None = None
    busy: _Msg | None = None
    last_used: float = field(default_factory=time.monotonic)


class PlatformError(Exception):
    """The local platform cannot run (a worker failed to start, the dispatcher died)."""


def extract_bundles(artifacts: dict[str, Path], dest: Path) -> dict[str, Path]:
    """Unpack each function's zip under `dest/<zip stem>/` (once) and return the directories."""
    out = {}
    for fn, zpath in artifacts.items():
        target = dest / Path(zpath).stem
        if not (target / "unum_entry.py").exists():
            tmp = Path(tempfile.mkdtemp(dir=dest, prefix=".x-"))
            with zipfile.ZipFile(zpath) as zf:
                zf.extractall(tmp)
            shutil.rmtree(target, ignore_errors=True)
            tmp.rename(target)
        out[fn] = target
    return out


class LocalPlatform:
    """Runs bundles on this machine. Use as a context manager.

    `state`: directory holding `unum.db` and `blobs/`; `bundles`: function -> unpacked
    bundle directory. Raises PlatformError when workers cannot start."""

    def __init__(self, state: Path, bundles: dict[str, Path], *, max_attempts: int = 3,
                 faults: FaultSpec | None = None, workers_per_function: int = 2,
                 max_workers: int = 160, retry_delay: float = 0.005, quiet: bool = False):
        self.state = Path(state)
        self.bundles = bundles
        self.max_attempts = max_attempts
        self.faults = faults
        self.workers_per_function = workers_per_function
        self.max_workers = max_workers
        self.retry_delay = retry_delay
        self.quiet = quiet
        self.db_path = self.state / "unum.db"
        self.blob_dir = self.state / "blobs"
        self.ds = SqliteDatastore(self.db_path)
        self.blobs = FileBlobStore(self.blob_dir)
        self.stats: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._seq = itertools.count()
        self._queues: dict[str, deque[_Msg]] = {fn: deque() for fn in bundles}
        self._timers: list[tuple[float, int, _Msg]] = []
        self._workers: dict[int, _Worker] = {}       # pid -> worker
        self._by_conn: dict[Connection, _Worker] = {}
        self._idle: dict[str, deque[_Worker]] = {fn: deque() for fn in bundles}
        self._broken: dict[str, str] = {}
        self._lock = threading.Lock()
        self._inbox: deque[tuple[str, dict[str, Any]]] = deque()
        self._new_conns: list[Connection] = []
        self._stop = threading.Event()
        self._inflight = 0
        self._error: BaseException | None = None
        self._tmp = Path(tempfile.mkdtemp(prefix="unum-local-"))
        self._authkey = secrets.token_bytes(16)
        self._listener = Listener(str(self._tmp / "platform.sock"), family="AF_UNIX",
                                  authkey=self._authkey)
        self._wake_r, self._wake_w = os.pipe()
        self._sel = selectors.DefaultSelector()  # persistent: registering 100 fds per loop is slow
        self._sel.register(self._wake_r, selectors.EVENT_READ, None)
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> "LocalPlatform":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> None:
        self.ds.purge_expired()
        for target in (self._accept_loop, self._dispatch_loop):
            t = threading.Thread(target=target, daemon=True, name=target.__name__)
            t.start()
            self._threads.append(t)

    def close(self) -> None:
        self._stop.set()
        self._wake()
        for w in list(self._workers.values()):
            try:
                if w.conn is not None:
                    w.conn.send(("stop",))
            except OSError:
                pass
        deadline = time.monotonic() + 3
        for w in list(self._workers.values()):
            try:
                w.proc.wait(max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
        try:  # unblock a pending accept() (a raw connect never waits for the handshake)
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(self._listener.address))
        except OSError:
            pass
        for t in self._threads:
            t.join(timeout=2)
        try:
            self._listener.close()
        except OSError:
            pass
        os.close(self._wake_r)
        os.close(self._wake_w)
        shutil.rmtree(self._tmp, ignore_errors=True)
        self.ds.close()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    # ------------------------------------------------------------------ client API
    def invoke(self, function: str, payload: dict[str, Any]) -> None:
        """Queue an asynchronous invocation of `function` (as the platform's Invoke API)."""
        if function not in self.bundles:
            raise PlatformError(f"unknown function {function!r}")
        with self._lock:
            self._inbox.append((function, payload))
            self._inflight += 1
        self._wake()

    def result(self, session: str) -> dict[str, Any] | None:
        """The session's result item ({"status": "SUCCEEDED"|"FAILED", ...}) or None."""
        item = self.ds.get(session, RESULT_KEY)
        if item is not None and "blob" in item:
            item = dict(item)
            item["v"] = json.loads(self.blobs.get(session, item.pop("blob")))
        return item

    def wait_result(self, session: str, timeout: float = 600.0) -> dict[str, Any]:
        """Block until the session has a result; raises TimeoutError or PlatformError."""
        deadline = time.monotonic() + timeout
        delay = 0.001
        while True:
            item = self.result(session)
            if item is not None:
                return item
            if self._error is not None:
                raise PlatformError(f"local platform stopped: {self._error}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"session {session} has no result after {timeout:.0f} s")
            time.sleep(delay)
            delay = min(delay * 2, 0.02)

    def wait_idle(self, timeout: float = 60.0) -> None:
        """Block until no invocation is queued, delayed or running."""
        deadline = time.monotonic() + timeout
        while self._inflight > 0:
            if self._error is not None:
                raise PlatformError(f"local platform stopped: {self._error}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"{self._inflight} invocation(s) still in flight after {timeout:.0f} s")
            time.sleep(0.002)

    def worker_pids(self) -> list[int]:
        return [w.proc.pid for w in self._workers.values()]

    # ------------------------------------------------------------------ threads
    def _accept_loop(self) -> None:
        while not self._stop.is_set():
            try:
                conn = self._listener.accept()
            except (OSError, EOFError):
                return
            except Exception:  # authentication failure of a stray client
                continue
            with self._lock:
                self._new_conns.append(conn)
            self._wake()

    def _dispatch_loop(self) -> None:
        pending: list[Connection] = []  # accepted, not yet "ready"
        last_check = 0.0
        try:
            while not self._stop.is_set():
                with self._lock:
                    for conn in self._new_conns:
                        pending.append(conn)
                        self._sel.register(conn.fileno(), selectors.EVENT_READ, conn)
                    self._new_conns.clear()
                    inbox = list(self._inbox)
                    self._inbox.clear()
                for fn, payload in inbox:
                    self._enqueue_new(fn, payload)
                    self._inflight -= 1  # _enqueue_new counted its own copies
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, msg = heapq.heappop(self._timers)
                    self._queues[msg.fn].append(msg)
                if now - last_check > 0.2:  # deaths also show up as EOF on the connection
                    self._check_workers()
                    last_check = now
                self._dispatch()
                timeout = 0.05
                if self._timers:
                    timeout = max(0.0, min(timeout, self._timers[0][0] - time.monotonic()))
                for key, _ in self._sel.select(timeout):
                    conn = key.data
                    if conn is None:
                        os.read(self._wake_r, 4096)
                        continue
                    try:
                        while conn.poll():
                            self._on_message(conn, conn.recv(), pending)
                    except (EOFError, OSError):
                        self._on_disconnect(conn, pending)
        except BaseException as exc:  # surface to waiting clients
            self._error = exc
            raise

    # ------------------------------------------------------------------ scheduling
    def _enqueue_new(self, fn: str, payload: dict[str, Any]) -> None:
        key = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        copies = 1
        if self.faults is not None and self.faults.hit("duplicate", key):
            copies = 2
            self.stats["duplicated"] += 1
        for c in range(copies):
            msg = _Msg(next(self._ids), fn, payload, f"{key}:{c}")
            self._inflight += 1
            delay = 0.0
            if self.faults is not None and self.faults.hit("delay", msg.key):
                delay = self.faults.draw("delay_ms", msg.key) * self.faults.max_delay_ms / 1000
                self.stats["delayed"] += 1
            self._schedule(msg, delay)

    def _schedule(self, msg: _Msg, delay: float) -> None:
        if delay > 0:
            heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), msg))
        else:
            self._queues[msg.fn].append(msg)

    def _dispatch(self) -> None:
        for fn, q in self._queues.items():
            if fn in self._broken:
                while q:
                    self._give_up(q.popleft(), f"Unum.FunctionLoadError: {self._broken[fn]}")
                continue
            idle = self._idle[fn]
            while q and idle:
                w = idle.popleft()
                msg = q.popleft()
                w.busy = msg
                w.last_used = time.monotonic()
                try:
                    w.conn.send(("run", msg.id, msg.payload, msg.attempt))  # type: ignore[union-attr]
                    self.stats["deliveries"] += 1
                except OSError:
                    w.busy = None
                    q.appendleft(msg)
            if q:
                n = sum(1 for w in self._workers.values() if w.fn == fn)
                starting = sum(1 for w in self._workers.values() if w.fn == fn and w.conn is None)
                if n < self.workers_per_function and starting == 0:
                    self._spawn(fn)

    def _spawn(self, fn: str) -> None:
        if len(self._workers) >= self.max_workers:
            idle = [w for w in self._workers.values() if w.conn is not None and w.busy is None and w.fn != fn]
            if not idle:
                return
            victim = min(idle, key=lambda w: w.last_used)
            self._retire(victim)
        env = {"db": str(self.db_path), "blobs": str(self.blob_dir),
               "faults": self.faults.encode() if self.faults else "", "max_attempts": self.max_attempts}
        try:
            err = sys.__stderr__.fileno() if sys.__stderr__ else None
        except (AttributeError, ValueError, OSError):
            err = None
        proc = subprocess.Popen([sys.executable, str(WORKER), str(self._listener.address),
                                 self._authkey.hex(), str(self.bundles[fn]), json.dumps(env)],
                                stdin=subprocess.DEVNULL, stdout=err, cwd=str(self.bundles[fn]))
        self._workers[proc.pid] = _Worker(fn, proc)
        self.stats["workers_started"] += 1

    def _retire(self, w: _Worker) -> None:
        try:
            w.conn.send(("stop",))  # type: ignore[union-attr]
        except OSError:
            pass
        self._forget(w)

    def _unregister(self, conn: Connection) -> None:
        try:
            self._sel.unregister(conn.fileno())
        except (KeyError, ValueError, OSError):
            pass

    def _forget(self, w: _Worker) -> None:
        self._workers.pop(w.proc.pid, None)
        if w.conn is not None:
            self._by_conn.pop(w.conn, None)
            self._unregister(w.conn)
        try:
            self._idle[w.fn].remove(w)
        except ValueError:
            pass

    def _check_workers(self) -> None:
        for w in list(self._workers.values()):
            if w.proc.poll() is not None:  # the process died (e.g. os._exit in user code)
                self._forget(w)
                if w.busy is not None:
                    self._crashed(w.busy, f"worker process exited with code {w.proc.returncode}")
                    w.busy = None

    def _on_message(self, conn: Connection, msg: tuple, pending: list[Connection]) -> None:
        kind = msg[0]
        if kind == "ready":
            pending.remove(conn)
            w = self._workers.get(msg[1])
            if w is None:
                conn.close()
                return
            w.conn = conn
            self._by_conn[conn] = w
            self._idle[w.fn].append(w)
        elif kind == "fatal":
            if conn in pending:
                pending.remove(conn)
            w = self._workers.get(msg[1])
            fn = w.fn if w is not None else "?"
            self._broken[fn] = msg[2]
            print(f"unumctl: function {fn} failed to load: {msg[2]}", file=sys.stderr)
        elif kind == "invoke":
            _, calls, delay = msg
            for fn, payload in calls:
                if delay:
                    self._inflight += 1
                    heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq),
                                                  _Msg(next(self._ids), fn, payload, "delayed")))
                else:
                    self._enqueue_new(fn, payload)
        elif kind in ("done", "crash"):
            w = self._by_conn[conn]
            done = w.busy
            w.busy = None
            self._idle[w.fn].append(w)
            if done is None:
                return
            if kind == "done":
                self.stats[f"outcome_{msg[2]}"] += 1
                self._inflight -= 1
            else:
                self._crashed(done, msg[2])

    def _on_disconnect(self, conn: Connection, pending: list[Connection]) -> None:
        self._unregister(conn)
        if conn in pending:
            pending.remove(conn)
        w = self._by_conn.get(conn)
        if w is not None:
            self._forget(w)
            if w.busy is not None:
                self._crashed(w.busy, "worker disconnected")

    def _crashed(self, msg: _Msg, detail: str) -> None:
        self.stats["crashes"] += 1
        if not self.quiet and not detail.startswith("InjectedCrash"):
            print(f"unumctl: {msg.fn} attempt {msg.attempt} crashed: {detail}", file=sys.stderr)
        if msg.attempt >= self.max_attempts:
            self._give_up(msg, f"Unum.RetriesExhausted: {msg.fn} failed {msg.attempt} delivery "
                               f"attempts; last: {detail.splitlines()[0]}")
            return
        msg.attempt += 1
        self.stats["redeliveries"] += 1
        self._schedule(msg, self.retry_delay * msg.attempt)

    def _give_up(self, msg: _Msg, reason: str) -> None:
        """Record the session as failed (the on-failure destination of Lambda async invoke)."""
        self._inflight -= 1
        session = msg.payload.get("Session")
        if not session:
            return
        error, _, cause = reason.partition(": ")
        give_up(self.ds, self.blobs, session, msg.fn, error, cause, Retention(), time.time())
