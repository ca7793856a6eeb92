"""The local target's FaaS platform: worker processes, an async invoke queue, retries, faults.

Like Lambda: each function runs in its own processes ("instances", one invocation at a time,
started on demand up to `workers_per_function`), invocations are queued durably (the
`local_queue` table of the app's SQLite file, runtime.local.queue) and delivered at least
once, a failed delivery is retried up to `max_attempts` times and then recorded as the
session's failure (as Lambda's on-failure destination would). A failed delivery is a crash
of the instance, an execution that overruns the function's `timeout` (the instance is
killed: `Unum.Timeout`) or one that exceeds its `memory` (`Runtime.OutOfMemory`, enforced by
an address-space limit in the worker). With a FaultSpec, the dispatcher also duplicates and
delays deliveries (seeded, see runtime.faults) and kills instances (SIGKILL) at seeded random
points of an execution, as a crash (`kill`), a timeout (`timeout`) or the OOM killer (`oom`).

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
import sqlite3
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
from runtime.errors import UnumError
from runtime.faults import KILL_POINTS, FaultSpec
from runtime.local.history import SqliteHistory
from runtime.local.queue import DurableQueue, SessionExistsError, new_owner
from runtime.payload import VersionId, check_session_id
from runtime.platform_events import record_platform_event
from runtime.ports import emit_safely
from runtime.session import Retention, end, finish, give_up, read_result, session_status

from ..deploy import names
from .versions import VersionStore, version_id

WORKER = Path(__file__).with_name("worker.py")
MEMORY_HEADROOM_MB = 64  # address space for the interpreter, runtime and libraries (docs/local.md)
INIT_TIMEOUT = 60.0      # seconds a new instance may take to import its code (Lambda: 10 s)
TMP_PREFIX = "unum-local-"
# The platform copies the WAL into the database file from a thread of its own every
# CHECKPOINT_INTERVAL s (a checkpoint copies pages and fsyncs: 60% of the commit time of an
# instance that ran it itself); its instances checkpoint only past WAL_SAFETY_PAGES pages
# (4 KiB each), in case the thread falls behind. Durability is the WAL's either way.
CHECKPOINT_INTERVAL = 0.1
WAL_SAFETY_PAGES = 16_384
COLLECT_INTERVAL = 2.0  # s between two collections of retired versions (unumctl/local/versions.py)

Pool = tuple[str, str]  # (version, function): the instances of one function of one version

__all__ = ["FunctionLimits", "LocalPlatform", "PlatformError", "SessionExistsError", "extract_bundles"]


@dataclass(frozen=True)
class FunctionLimits:
    """A function's limits on the local target, from the manifest: `timeout` seconds per
    execution, `memory` MB (None: unlimited)."""

    timeout: float | None = None
    memory: int | None = None


@dataclass
class _Msg:
    id: int
    fn: str
    payload: dict[str, Any]
    key: str
    attempt: int = 1
    qid: int | None = None  # its row in the durable queue
    pool: Pool = ("", "")   # the version and function whose instances run it


@dataclass
class _Worker:
    fn: str
    proc: subprocess.Popen
    conn: Connection | None = None
    busy: _Msg | None = None
    last_used: float = field(default_factory=time.monotonic)
    started: float = field(default_factory=time.monotonic)
    deadline: float | None = None  # monotonic time at which the busy execution times out
    task_timer: tuple | None = None  # an armed Task timeout: (monotonic deadline, msg id, seconds,
    #                                  session, key, outcome, expires_at), see runtime.local.entry.Watchdog
    pool: Pool = ("", "")  # the version and function it runs


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

    `state`: directory holding `unum.db` (datastore, durable queue, session registry) and
    `blobs/`; `bundles`: function -> unpacked bundle directory; `limits`: function ->
    FunctionLimits (timeout s, memory MB) enforced per execution; `memory_headroom_mb`: added
    to a function's memory for its address-space limit; `retention`: the app's expiry policy
    (runtime/session.py) for the results of given-up sessions and the session registry.
    Raises PlatformError when workers cannot start. On start, the platform takes over queued invocations that no live platform
    owns (a killed `unumctl invoke`) and delivers them.

    Versions (docs/versions.md): `bundles` and `limits` are version `version` of the app
    (default: an id of the bundle directories), under `<state>/versions/<version>/`; the
    platform registers it as current, holds it while it runs, and starts new sessions on it.
    Every invocation runs on its session's pinned version (DurableQueue.pin): an older
    version's instances are started from its kept bundles; a session whose version was
    collected is given up (`Unum.VersionRetired`). Every COLLECT_INTERVAL s, retired versions
    are collected (VersionStore.collect)."""

    def __init__(self, state: Path, bundles: dict[str, Path], *, max_attempts: int = 3,
                 faults: FaultSpec | None = None, workers_per_function: int = 2,
                 max_workers: int = 160, retry_delay: float = 0.005, quiet: bool = False,
                 limits: dict[str, FunctionLimits] | None = None,
                 memory_headroom_mb: int = MEMORY_HEADROOM_MB, init_timeout: float = INIT_TIMEOUT,
                 history: str = "full", sources: dict[str, str] | None = None,
                 retention: Retention = Retention(), extra_env: dict[str, str] | None = None,
                 version: VersionId | None = None):
        self.state = Path(state)
        self.extra_env = dict(extra_env or {})  # added to the workers' environment
        self.retention = retention
        self.bundles = bundles
        self.sources = sources or {}  # function -> the user's code directory (for log lines)
        self.limits = limits or {}
        self.memory_headroom_mb = memory_headroom_mb
        self.init_timeout = init_timeout
        self.max_attempts = max_attempts
        self.faults = faults
        self.workers_per_function = workers_per_function
        self.max_workers = max_workers
        self.retry_delay = retry_delay
        self.quiet = quiet
        self.db_path = self.state / names.LOCAL_DATASTORE
        self.blob_dir = self.state / names.LOCAL_BLOBS
        self.ds = SqliteDatastore(self.db_path, autocheckpoint=WAL_SAFETY_PAGES)
        self.blobs = FileBlobStore(self.blob_dir)
        self.queue = DurableQueue(self.ds)
        self.versions = VersionStore(self.ds, self.state)
        self.version = version or version_id({fn: {"bundle": Path(d).name} for fn, d in bundles.items()}, {})
        self.versions.register(self.version, bundles, {fn: (lim.timeout, lim.memory)
                                                       for fn, lim in self.limits.items()})
        self._held: int | None = self.versions.hold(self.version)
        self._bundles: dict[str, dict[str, Path]] = {self.version: dict(bundles)}  # version -> fn -> dir
        self._limits: dict[str, dict[str, FunctionLimits]] = {self.version: self.limits}
        self._pinned: dict[str, str] = {}  # session -> its version (DurableQueue.pin), read once
        # the platform's part of the history (docs/observability.md): redeliveries, timeouts,
        # give-ups, injected duplicates; `history` is the app's runtime.history
        self.history = SqliteHistory(self.ds, history) if history != "off" else None
        self.owner = new_owner()
        self._refs: Counter[int] = Counter()   # queue id -> in-memory copies not finished
        self._seen: set[int] = set()           # queue ids ever scheduled (dedupe adoption)
        self._finished: list[int] = []         # queue ids to delete (batched per loop)
        self.stats: Counter[str] = Counter()
        self._ids = itertools.count(1)
        self._seq = itertools.count()
        self._queues: dict[Pool, deque[_Msg]] = {(self.version, fn): deque() for fn in bundles}
        self._timers: list[tuple[float, int, _Msg]] = []
        # injected kills (runtime.faults kill/timeout/oom): (monotonic time, seq, pid, msg id, kind)
        self._kills: list[tuple[float, int, int, int, str]] = []
        self._workers: dict[int, _Worker] = {}       # pid -> worker
        self._by_conn: dict[Connection, _Worker] = {}
        self._idle: dict[Pool, deque[_Worker]] = {(self.version, fn): deque() for fn in bundles}
        self._broken: dict[Pool, str] = {}
        self._lock = threading.Lock()
        self._inbox: deque[tuple[str, dict[str, Any], int | None, float]] = deque()
        self._new_conns: list[Connection] = []
        self._stop = threading.Event()
        # waiters for a session's end (wait_result, wait_drained): woken by the dispatcher when
        # an execution that wrote or saw a result completes, or a session is given up
        self._end_cv = threading.Condition()
        self._end_gen = 0
        self._inflight = 0
        self._error: BaseException | None = None
        _sweep_stale_tmp()
        self._tmp = Path(tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-"))
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
        """Purge expired items, take over orphaned queued invocations, start the threads."""
        self.ds.purge_expired()
        self.queue.purge_expired()
        if self.history is not None:  # history lives as long as a result (8 days by default)
            emit_safely(self.history.purge, time.time() - Retention().result_lifetime)
        now = time.time()
        for row in self.queue.claim(self.owner):
            self.stats["recovered"] += 1
            self._adopt(row.id, row.function, row.payload, max(0.0, row.not_before - now), row.attempts + 1)
        for target in (self._accept_loop, self._dispatch_loop, self._checkpoint_loop):
            t = threading.Thread(target=target, daemon=True, name=target.__name__)
            t.start()
            self._threads.append(t)

    def close(self) -> None:
        """Stop the threads and every worker (a busy one is killed: its invocation stays in
        the durable queue for the next platform), remove the temporary directory."""
        self._stop.set()
        self._wake()
        try:  # unblock a pending accept() (a raw connect never waits for the handshake)
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(str(self._listener.address))
        except OSError:
            pass
        for t in self._threads:
            t.join(timeout=5)
        for w in list(self._workers.values()):
            try:
                if w.conn is not None and w.busy is None:
                    w.conn.send(("stop",))
                else:
                    w.proc.kill()
            except OSError:
                pass
        deadline = time.monotonic() + 3
        for w in list(self._workers.values()):
            try:
                w.proc.wait(max(0.01, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
        try:
            self._listener.close()
        except OSError:
            pass
        os.close(self._wake_r)
        os.close(self._wake_w)
        shutil.rmtree(self._tmp, ignore_errors=True)
        try:
            self._flush_finished()
            self.queue.release(self.owner)
        finally:
            if self._held is not None:
                os.close(self._held)
                self._held = None
            self.ds.close()

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass

    # ------------------------------------------------------------------ client API
    def invoke(self, function: str, payload: dict[str, Any]) -> None:
        """Queue an asynchronous invocation of `function` (as the platform's Invoke API); it is
        in the durable queue when this returns. Raises PlatformError for an unknown function
        or a payload whose Session is not a safe id."""
        if function not in self.bundles:
            raise PlatformError(f"unknown function {function!r}")
        if payload.get("Session") is not None:
            self._check_session(payload["Session"])
        (qid,) = self.queue.add([(function, payload)], self.owner)
        self._post(function, payload, qid)

    def start_session(self, function: str, session: str, value: Any) -> str:
        """Start session `session` with input `value` at the entry `function`, idempotently.

        Returns "started" (new), or "resumed" when the session exists with the same input (its
        queued invocations are delivered; the entry is queued again only when the session has
        neither queued invocations nor a result). Raises SessionExistsError when it exists
        with a different input, PlatformError for a bad session id or function, TypeError or
        ValueError when `value` is not JSON. The registry row lives as long as the result."""
        if function not in self.bundles:
            raise PlatformError(f"unknown function {function!r}")
        self._check_session(session)
        status, qid = self.queue.start_session(session, function, value, self.owner,
                                               self.retention.result_expiry(time.time()), self.version)
        if status == "started":
            self._pinned[session] = self.version
        if qid is not None:
            self._post(function, self._payload_of(qid), qid)
        return status

    def resume_session(self, session: str) -> None:
        """Finish a registered session: queue its entry again when it has neither queued
        invocations nor a result. Raises KeyError when the session was never started here."""
        self._check_session(session)
        qid = self.queue.resume_session(session, self.owner)
        if qid is not None:
            info = self.queue.session(session)
            assert info is not None
            self._post(info["function"], self._payload_of(qid), qid)

    def _payload_of(self, qid: int) -> dict[str, Any]:
        row = self.queue.get(qid)
        if row is None:
            raise PlatformError(f"queued invocation {qid} vanished")
        return row.payload

    @staticmethod
    def _check_session(session: Any) -> None:
        try:
            check_session_id(session)
        except UnumError as exc:
            raise PlatformError(str(exc)) from None

    def _post(self, function: str, payload: dict[str, Any], qid: int | None, delay: float = 0.0) -> None:
        with self._lock:
            self._inbox.append((function, payload, qid, delay))
            self._inflight += 1
        self._wake()

    def stop_session(self, session: str, error: Any = None, cause: Any = None,
                     status: str = "ABORTED", now: float | None = None) -> dict[str, Any]:
        """Stop `session` (Step Functions' StopExecution): record its outcome as `status`
        with `error` and `cause` unless it has one (the first outcome wins:
        runtime/session.py), end it (its items swept; executions still queued or running find
        the result and drop), drop its queued invocations. Returns the stored result item.
        KeyError when the session was never started here."""
        self._check_session(session)
        if self.queue.session(session) is None:
            raise KeyError(session)
        now = time.time() if now is None else now
        item = {"status": status, "instance": "StopExecution", "error": str(error or ""), "cause": str(cause or "")}
        stored = finish(self.ds, session, item, self.retention.result_expiry(now))
        if stored == item:
            end(self.ds, self.blobs, session, stored)
            self.queue.drop_session(session)
            if self.history is not None:
                emit_safely(self.history.session_ended, session, session_status(stored), now, stored)
        return stored

    def result(self, session: str) -> dict[str, Any] | None:
        """The session's result item ({"status": "SUCCEEDED"|"FAILED", ...}) or None
        (runtime.session.read_result)."""
        return read_result(self.ds, self.blobs, session)

    def _notify_end(self) -> None:
        with self._end_cv:
            self._end_gen += 1
            self._end_cv.notify_all()

    def _wait_end(self, gen: int, seconds: float) -> None:
        """Sleep until an execution that may have ended a session completes (generation
        `gen` passed) or `seconds` pass (a result written by another process)."""
        with self._end_cv:
            if self._end_gen == gen:
                self._end_cv.wait(seconds)

    def wait_result(self, session: str, timeout: float = 600.0) -> dict[str, Any]:
        """Block until the session has a result; raises TimeoutError or PlatformError.
        Woken by this platform's dispatcher when an execution that wrote a result
        completes; checks every 20 ms otherwise (a result written by another platform)."""
        deadline = time.monotonic() + timeout
        while True:
            gen = self._end_gen
            item = self.result(session)
            if item is not None:
                return item
            if self._error is not None:
                raise PlatformError(f"local platform stopped: {self._error}")
            left = deadline - time.monotonic()
            if left < 0:
                raise TimeoutError(f"session {session} has no result after {timeout:.0f} s")
            self._wait_end(gen, min(0.02, left))

    def wait_drained(self, session: str, timeout: float = 5.0) -> bool:
        """Block until no queued message of `session` is due or in flight (any platform's
        rows), at most `timeout` s; returns whether it drained. Called after the session's
        result so that the executions still running (the last one writing its history,
        duplicate deliveries being dropped) finish before the platform closes: without it,
        close() kills a busy worker and the session's history misses its last events."""
        deadline = time.monotonic() + timeout
        while True:
            gen = self._end_gen
            if self.queue.runnable(session, time.time()) == 0:
                return True
            if self._error is not None or time.monotonic() > deadline:
                return False
            self._wait_end(gen, 0.01)

    def wait_settled(self, session: str, timeout: float = 600.0, horizon: float = 1.0) -> dict[str, Any] | None:
        """Block until the session has a result (returned) or has no queued invocation due
        within `horizon` seconds, whichever platform owns it (returns None: the session waits
        for a callback or a later timer, which stays in the durable queue). Raises
        TimeoutError, PlatformError."""
        deadline = time.monotonic() + timeout
        quiet = 0
        while True:
            item = self.result(session)
            if item is not None:
                return item
            if self._error is not None:
                raise PlatformError(f"local platform stopped: {self._error}")
            busy = self.queue.runnable(session, time.time() + horizon)  # any platform's rows
            quiet = quiet + 1 if busy == 0 else 0
            if quiet >= 3:
                return None
            if time.monotonic() > deadline:
                raise TimeoutError(f"session {session} has no result after {timeout:.0f} s")
            time.sleep(0.02)

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
            except Exception:  # noqa: BLE001 - authentication failure of a stray client
                continue
            with self._lock:
                self._new_conns.append(conn)
            self._wake()

    def _checkpoint_loop(self) -> None:
        """Checkpoint the WAL every CHECKPOINT_INTERVAL s on a connection of its own (PASSIVE:
        never blocks an instance), so that no instance's commit pays for it."""
        ds = SqliteDatastore(self.db_path)
        try:
            while not self._stop.wait(CHECKPOINT_INTERVAL):
                try:
                    ds.checkpoint()
                except Exception:  # noqa: BLE001  (busy or I/O: the next round, or the instances, do it)
                    pass
        finally:
            ds.close()

    def _dispatch_loop(self) -> None:
        pending: list[Connection] = []  # accepted, not yet "ready"
        last_check = last_claim = last_collect = 0.0
        try:
            while not self._stop.is_set():
                with self._lock:
                    for conn in self._new_conns:
                        pending.append(conn)
                        self._sel.register(conn.fileno(), selectors.EVENT_READ, conn)
                    self._new_conns.clear()
                    inbox = list(self._inbox)
                    self._inbox.clear()
                for fn, payload, qid, delay in inbox:
                    self._enqueue_new(fn, payload, qid, delay)
                    self._inflight -= 1  # _enqueue_new counted its own copies
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    _, _, msg = heapq.heappop(self._timers)
                    self._queues[msg.pool].append(msg)
                while self._kills and self._kills[0][0] <= now:
                    self._fire(*heapq.heappop(self._kills)[2:])
                if now - last_check > 0.2:  # deaths (also seen as EOF), timeouts, stuck starts
                    self._check_workers()
                    last_check = now
                    if now - last_claim > 0.5:  # invocations queued from outside (send-task-*)
                        self._claim_unowned()
                        last_claim = now
                    if now - last_collect > COLLECT_INTERVAL:
                        self._collect_versions()
                        last_collect = now
                self._dispatch()
                self._flush_finished()
                timeout = 0.05
                if self._timers:
                    timeout = max(0.0, min(timeout, self._timers[0][0] - time.monotonic()))
                if self._kills:
                    timeout = max(0.0, min(timeout, self._kills[0][0] - time.monotonic()))
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
    def _adopt(self, qid: int, fn: str, payload: dict[str, Any], delay: float, attempt: int = 1) -> None:
        """Schedule a queued row (recovered at start or orphaned by a dead worker)."""
        if qid in self._seen:
            return
        self._seen.add(qid)
        self._refs[qid] += 1
        msg = _Msg(next(self._ids), fn, payload, f"recovered:{qid}", attempt, qid)
        self._inflight += 1
        pool = self._pool_of(fn, payload)
        if isinstance(pool, str):
            self._give_up(msg, pool)
            return
        msg.pool = pool
        if attempt > self.max_attempts:
            self._give_up(msg, f"Unum.RetriesExhausted: {fn} failed {attempt - 1} delivery attempts")
            return
        self._schedule(msg, delay)

    # ------------------------------------------------------------------ versions
    def _limit(self, pool: Pool) -> FunctionLimits | None:
        return self._limits.get(pool[0], {}).get(pool[1])

    def _pool_of(self, fn: str, payload: dict[str, Any]) -> Pool | str:
        """The pool (version, function) whose instances run an invocation of `fn`: its
        session's pinned version (read once per session), this platform's own for a session
        that is not registered; a string, the give-up reason, when that version was collected
        or has no function `fn`."""
        session = payload.get("Session")
        version: str | None = self._pinned.get(session) if isinstance(session, str) else self.version
        if version is None:
            try:
                version = self.queue.pin(check_session_id(session), self.version) or self.version
            except UnumError:
                version = self.version
            self._pinned[session] = version  # type: ignore[index]
        if version not in self._bundles and not self._load_version(version):
            return (f"Unum.VersionRetired: version {version} of the app, which this session started on, "
                    "was collected (docs/versions.md)")
        if fn not in self._bundles[version]:
            return f"Unum.FunctionLoadError: the app has no function {fn!r} (in version {version})"
        return version, fn

    def _load_version(self, version: str) -> bool:
        """Make an older version's kept bundles runnable here (its pools); False when it is
        not recorded any more or its bundles are gone."""
        rec = self.versions.get(version)
        if rec is None or not all((d / "unum_entry.py").exists() for d in rec.bundles.values()):
            return False
        self._bundles[version] = rec.bundles
        self._limits[version] = {fn: FunctionLimits(*lim) for fn, lim in rec.limits.items()}
        for fn in rec.bundles:
            self._queues.setdefault((version, fn), deque())
            self._idle.setdefault((version, fn), deque())
        self.stats["versions_loaded"] += 1
        return True

    def _collect_versions(self) -> None:
        """Collect the retired versions (VersionStore.collect) and stop this platform's idle
        instances of them."""
        try:
            gone = self.versions.collect()
        except (OSError, sqlite3.Error):  # busy or I/O: the next round does it
            return
        for version in gone:
            self.stats["versions_collected"] += 1
            if version not in self._bundles or version == self.version:
                continue
            for w in [w for w in self._workers.values() if w.pool[0] == version and w.busy is None
                      and w.conn is not None]:
                self._retire(w)  # (a busy or starting one is stopped when it is free: _idle_again)
            for fn in self._bundles.pop(version):
                if not self._queues.get((version, fn)):
                    self._queues.pop((version, fn), None)
                    self._idle.pop((version, fn), None)
            self._limits.pop(version, None)
            self._pinned = {k: v for k, v in self._pinned.items() if v != version}

    def _claim_unowned(self) -> None:
        """Deliver rows that a process without a platform queued (runtime.asl.callback via
        `unumctl send-task-*` or a service): the first live platform to claim a row owns it."""
        now = time.time()
        for row in self.queue.claim_unowned(self.owner):
            self.stats["claimed"] += 1
            self._adopt(row.id, row.function, row.payload, max(0.0, row.not_before - now), row.attempts + 1)

    def _enqueue_new(self, fn: str, payload: dict[str, Any], qid: int | None = None, delay: float = 0.0) -> None:
        if qid is not None and qid in self._seen:
            return
        pool = self._pool_of(fn, payload)
        if isinstance(pool, str):  # gives up: no such function in the session's version
            if qid is not None:
                self._adopt(qid, fn, payload, 0.0)
            else:
                self._inflight += 1
                self._give_up(_Msg(next(self._ids), fn, payload, ""), pool)
            return
        if qid is not None:
            self._seen.add(qid)
        if self.faults is None:  # the common case: one copy, no fault draws
            msg = _Msg(next(self._ids), fn, payload, "" if not delay else "delayed", qid=qid, pool=pool)
            if qid is not None:
                self._refs[qid] += 1
            self._inflight += 1
            self._schedule(msg, delay)
            return
        key = hashlib.sha1(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]
        copies = 1
        if not delay and self.faults.hit("duplicate", key):
            copies = 2
            self.stats["duplicated"] += 1
            self._event("duplicated", fn, payload, None, "injected fault: the invocation is delivered twice")
        for c in range(copies):
            msg = _Msg(next(self._ids), fn, payload, f"{key}:{c}" if not delay else "delayed", qid=qid, pool=pool)
            if qid is not None:
                self._refs[qid] += 1
            self._inflight += 1
            extra = delay
            if not delay and self.faults.hit("delay", msg.key):
                extra = self.faults.draw("delay_ms", msg.key) * self.faults.max_delay_ms / 1000
                self.stats["delayed"] += 1
            self._schedule(msg, extra)

    def _finish(self, msg: _Msg, acked: bool = False) -> None:
        """One copy of a message is done (completed or given up); `acked`: its instance
        already deleted the queue row."""
        self._inflight -= 1
        if msg.qid is not None:
            self._refs[msg.qid] -= 1
            if self._refs[msg.qid] <= 0:
                del self._refs[msg.qid]
                if not acked:
                    self._finished.append(msg.qid)

    def _flush_finished(self) -> None:
        if self._finished:
            done, self._finished = self._finished, []
            self.queue.delete(done)

    def _schedule(self, msg: _Msg, delay: float) -> None:
        if delay > 0:
            heapq.heappush(self._timers, (time.monotonic() + delay, next(self._seq), msg))
        else:
            self._queues[msg.pool].append(msg)

    def _dispatch(self) -> None:
        for pool, q in self._queues.items():
            if pool in self._broken:
                while q:
                    self._give_up(q.popleft(), f"Unum.FunctionLoadError: {self._broken[pool]}")
                continue
            idle = self._idle[pool]
            limit = self._limit(pool)
            while q and idle:
                w = idle.popleft()
                msg = q.popleft()
                w.busy = msg
                w.last_used = time.monotonic()
                w.deadline = w.last_used + limit.timeout if limit is not None and limit.timeout else None
                # the one copy in flight of a queued message: the instance acknowledges it in the
                # execution's own transaction (runtime/local/entry.py), the platform need not
                ack = msg.qid is not None and self._refs.get(msg.qid) == 1
                try:
                    w.conn.send(("run", msg.id, msg.payload, msg.attempt, msg.qid, ack))  # type: ignore[union-attr]
                    self.stats["deliveries"] += 1
                except OSError:
                    w.busy = None
                    q.appendleft(msg)
                    continue
                if self.faults is not None:
                    self._arm_kill(w, msg)
            if q:
                n = sum(1 for w in self._workers.values() if w.pool == pool)
                starting = sum(1 for w in self._workers.values() if w.pool == pool and w.conn is None)
                if n < self.workers_per_function and starting == 0:
                    self._spawn(pool)

    def _spawn(self, pool: Pool) -> None:
        version, fn = pool
        if len(self._workers) >= self.max_workers:
            idle = [w for w in self._workers.values() if w.conn is not None and w.busy is None and w.pool != pool]
            if not idle:
                return
            victim = min(idle, key=lambda w: w.last_used)
            self._retire(victim)
        limit = self._limit(pool)
        bundle = self._bundles[version][fn]
        env = {"db": str(self.db_path), "blobs": str(self.blob_dir),
               "faults": self.faults.encode() if self.faults else "", "max_attempts": self.max_attempts,
               "owner": self.owner, "parent_pid": os.getpid(), "wal_autocheckpoint": WAL_SAFETY_PAGES,
               "memory_mb": limit.memory if limit is not None else None,
               "headroom_mb": self.memory_headroom_mb, "source": self.sources.get(fn)}
        try:
            err = sys.__stderr__.fileno() if sys.__stderr__ else None
        except (AttributeError, ValueError, OSError):
            err = None
        # few malloc arenas: each reserves 64 MB of address space, which counts against RLIMIT_AS
        penv = {**os.environ, "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"), **self.extra_env}
        proc = subprocess.Popen([sys.executable, str(WORKER), str(self._listener.address),
                                 self._authkey.hex(), str(bundle), json.dumps(env)],
                                stdin=subprocess.DEVNULL, stdout=err, cwd=str(bundle), env=penv)
        self._workers[proc.pid] = _Worker(fn, proc, pool=pool)
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
            self._idle.get(w.pool, deque()).remove(w)
        except ValueError:
            pass

    def _check_workers(self) -> None:
        now = time.monotonic()
        for w in list(self._workers.values()):
            if w.proc.poll() is not None:  # the process died (e.g. os._exit in user code)
                self._forget(w)
                if w.busy is not None:
                    self._lost(w, f"worker process exited with code {w.proc.returncode}")
            elif w.busy is not None and w.task_timer is not None and now >= w.task_timer[0] \
                    and w.task_timer[1] == w.busy.id:
                self._task_timed_out(w)
            elif w.busy is not None and w.deadline is not None and now >= w.deadline:
                self._timed_out(w, getattr(self._limit(w.pool), "timeout", None) or 0.0)  # a deadline was armed
            elif w.conn is None and now - w.started > self.init_timeout:
                self._kill(w)
                self._broken[w.pool] = f"its instance did not finish loading within {self.init_timeout:g} s"

    def _timed_out(self, w: _Worker, timeout: float) -> None:
        """The busy execution ran `timeout` s: kill the instance, count a failed attempt."""
        self.stats["timeouts"] += 1
        self._kill(w)
        if w.busy is not None:
            self._event("timed_out", w.fn, w.busy.payload, w.busy.attempt,
                        f"Unum.Timeout: {w.fn} timed out after {timeout:g} s", "Unum.Timeout")
        self._lost(w, f"Unum.Timeout: {w.fn} timed out after {timeout:g} s")

    def _arm_kill(self, w: _Worker, msg: _Msg) -> None:
        """Fault injection (runtime.faults kill, timeout, oom): draw, for this delivery
        attempt, whether its instance is killed and after how long (up to max_kill_ms);
        never on the last attempt, so injected faults never exhaust the retries."""
        f = self.faults
        assert f is not None
        if msg.attempt >= self.max_attempts:
            return
        for kind in ("kill", "timeout", "oom"):
            if f.hit(kind, msg.key, msg.attempt):
                delay = f.draw(f"{kind}_ms", msg.key, msg.attempt) * f.max_kill_ms / 1000
                heapq.heappush(self._kills, (time.monotonic() + delay, next(self._seq), w.proc.pid, msg.id, kind))
                self.stats[f"{kind}_drawn"] += 1
                return

    def _fire(self, pid: int, msg_id: int, kind: str) -> None:
        """An injected kill is due: if the instance still runs that execution, SIGKILL it
        through the platform's path for `kind` (a crash, a timeout, out of memory); else the
        execution ended first and the draw missed (counted as `<kind>_missed`)."""
        w = self._workers.get(pid)
        if w is None or w.busy is None or w.busy.id != msg_id or w.conn is None:
            self.stats[f"{kind}_missed"] += 1
            return
        ran = time.monotonic() - w.last_used
        if kind == "timeout":
            self._timed_out(w, round(ran, 3))
            return
        self._kill(w)
        if kind == "oom":
            self.stats["out_of_memory"] += 1
            detail = f"Runtime.OutOfMemory: {w.fn} was killed by the OOM killer (injected fault)"
            self._event("out_of_memory", w.fn, w.busy.payload, w.busy.attempt, detail, "Runtime.OutOfMemory")
        else:
            self.stats["kills"] += 1
            detail = f"Runtime.ExitError: {w.fn} was killed (SIGKILL, injected fault) after {ran * 1000:.1f} ms"
        self._lost(w, detail)

    def _task_timed_out(self, w: _Worker) -> None:
        """A Task attempt ran past its TimeoutSeconds: kill the instance (as for the function's
        timeout), record States.Timeout as the attempt's outcome (create-if-absent: an outcome
        the execution recorded first wins), and redeliver the invocation at once without
        counting a failed delivery attempt: the redelivery replays the recorded attempts and
        applies the Task's Retry/Catch (runtime/asl/attempts.py)."""
        _, _, seconds, session, key, outcome, expires_at = w.task_timer  # type: ignore[misc]
        w.task_timer = None
        self.stats["task_timeouts"] += 1
        self._kill(w)
        msg, w.busy = w.busy, None
        assert msg is not None
        self._event("timed_out", msg.fn, msg.payload, msg.attempt,
                    f"States.Timeout: a Task attempt timed out after {seconds:g} s (TimeoutSeconds); "
                    "redelivered", "States.Timeout")
        try:
            check_session_id(session)
            if isinstance(key, str) and key.startswith("asl/try/") and isinstance(outcome, dict):
                self.ds.create_if_absent(session, key, outcome, float(expires_at))
        except UnumError:
            pass
        if msg.qid is not None:
            for row in self.queue.children(self.owner, msg.qid):
                self._adopt(row.id, row.function, row.payload, max(0.0, row.not_before - time.time()))
        if not self.quiet:
            print(f"unumctl: {msg.fn}: a Task attempt timed out after {seconds:g} s (TimeoutSeconds); "
                  "States.Timeout", file=sys.stderr)
        self._schedule(msg, 0.0)

    def _kill(self, w: _Worker) -> None:
        """Terminate an instance (SIGKILL, as Lambda ends a timed-out execution) and forget it."""
        w.proc.kill()
        try:
            w.proc.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._forget(w)
        if w.conn is not None:
            w.conn.close()

    def _lost(self, w: _Worker, detail: str) -> None:
        """The busy execution of a dead instance failed; adopt the invocations it had queued
        whose notice the platform never read, then count the failed attempt."""
        msg, w.busy = w.busy, None
        assert msg is not None
        if msg.qid is not None:
            for row in self.queue.children(self.owner, msg.qid):
                self._adopt(row.id, row.function, row.payload, max(0.0, row.not_before - time.time()))
        self._crashed(msg, detail)

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
            self._idle_again(w)
        elif kind == "fatal":
            if conn in pending:
                pending.remove(conn)
            w = self._workers.get(msg[1])
            fn = w.fn if w is not None else "?"
            if w is not None:
                self._broken[w.pool] = msg[2]
            print(f"unumctl: function {fn} failed to load: {msg[2]}", file=sys.stderr)
        elif kind == "invoke":
            self._on_invoke(msg[1], msg[2])
        elif kind == "arm":
            w = self._by_conn.get(conn)
            if w is not None and w.busy is not None and w.busy.id == msg[1]:
                w.task_timer = (time.monotonic() + float(msg[2]), *msg[1:])
        elif kind == "fault":  # an instance is about to kill itself (runtime.faults KILL_POINTS)
            if msg[2] in KILL_POINTS:
                self.stats[msg[2]] += 1
        elif kind == "disarm":
            w = self._by_conn.get(conn)
            if w is not None and w.task_timer is not None and w.task_timer[1] == msg[1]:
                w.task_timer = None
        elif kind in ("done", "crash", "exit"):
            w = self._by_conn.get(conn)
            if w is None:
                return
            done = w.busy
            w.busy = None
            w.deadline = None
            w.task_timer = None
            if kind == "exit":  # the instance exits after this message (out of memory)
                self._forget(w)
            else:
                self._idle_again(w)
            if done is None:
                return
            if kind == "done":
                for calls, delay in (msg[6] if len(msg) > 6 else ()):
                    self._on_invoke(calls, delay)
                self.stats[f"outcome_{msg[2]}"] += 1
                self._finish(done, len(msg) > 4 and bool(msg[4]))
                if len(msg) <= 5 or msg[5]:  # the session may have ended: wake its waiters
                    self._notify_end()
            else:
                if kind == "exit":
                    self.stats["out_of_memory"] += 1
                    self._event("out_of_memory", done.fn, done.payload, done.attempt, msg[2],
                                "Runtime.OutOfMemory")
                self._crashed(done, msg[2])

    def _idle_again(self, w: _Worker) -> None:
        """An instance is free: back to its pool's idle list, or stopped when its version
        was collected meanwhile (_collect_versions)."""
        idle = self._idle.get(w.pool)
        if idle is None:
            self._retire(w)
        else:
            idle.append(w)

    def _on_invoke(self, calls: list, delay: float) -> None:
        """Schedule the invocations an instance queued: [(queue id, function, payload)], or
        [(function, payload)] from a bundle that does not persist them (persisted here)."""
        if calls and len(calls[0]) == 2:
            ids = self.queue.add(calls, self.owner, None, delay)
            calls = [(i, fn, p) for i, (fn, p) in zip(ids, calls)]
        for qid, fn, payload in calls:
            self._enqueue_new(fn, payload, qid, delay)  # (gives up an unknown function)

    def _on_disconnect(self, conn: Connection, pending: list[Connection]) -> None:
        self._unregister(conn)
        if conn in pending:
            pending.remove(conn)
        w = self._by_conn.get(conn)
        if w is not None:
            self._forget(w)
            if w.busy is not None:
                self._lost(w, "worker disconnected")

    def _crashed(self, msg: _Msg, detail: str) -> None:
        self.stats["crashes"] += 1
        if not self.quiet and not detail.startswith("InjectedCrash"):
            print(f"unumctl: {msg.fn} attempt {msg.attempt} crashed: {detail}", file=sys.stderr)
        if msg.qid is not None:
            self.queue.failed_attempt(msg.qid)
        if msg.attempt >= self.max_attempts:
            first = detail.splitlines()[0]
            kind, _, what = first.partition(": ")
            if kind in ("Unum.Timeout", "Runtime.OutOfMemory"):  # the cause is the platform's
                self._give_up(msg, f"{kind}: {what} (delivery attempt {msg.attempt} of {self.max_attempts})")
            else:
                self._give_up(msg, f"Unum.RetriesExhausted: {msg.fn} failed {msg.attempt} delivery "
                                   f"attempts; last: {first}")
            return
        first = detail.splitlines()[0] if detail else ""
        self._event("retried", msg.fn, msg.payload, msg.attempt + 1,
                    f"delivery attempt {msg.attempt} failed ({first[:500]}); redelivered as attempt "
                    f"{msg.attempt + 1} of {self.max_attempts}", first.partition(":")[0] or None)
        msg.attempt += 1
        self.stats["redeliveries"] += 1
        self._schedule(msg, self.retry_delay * msg.attempt)

    def _give_up(self, msg: _Msg, reason: str) -> None:
        """Record the session as failed (the on-failure destination of Lambda async invoke)
        and remove the message from the durable queue."""
        self._finish(msg)
        session = msg.payload.get("Session")
        if not session:
            return
        try:
            check_session_id(session)
        except UnumError as exc:
            print(f"unumctl: dropped an invocation of {msg.fn}: {exc}", file=sys.stderr)
            return
        error, _, cause = reason.partition(": ")
        result = give_up(self.ds, self.blobs, session, msg.fn, error, cause, self.retention, time.time())
        self._notify_end()
        self._event("gave_up", msg.fn, msg.payload, msg.attempt, reason[:2000], error)
        if self.history is not None:
            emit_safely(self.history.session_ended, session, session_status(result), time.time(), result)

    def _event(self, kind: str, fn: str, payload: dict[str, Any], attempt: int | None, detail: str,
               error: str | None = None) -> None:
        """Record a platform event in the history (level full; never raises)."""
        record_platform_event(self.history, kind, fn, payload, attempt, detail, error)


def _sweep_stale_tmp() -> None:
    """Remove temporary directories of platforms whose process is gone (a SIGKILLed
    `unumctl invoke` cannot remove its own); only this user's `unum-local-<pid>-*`."""
    base = Path(tempfile.gettempdir())
    try:
        entries = list(base.glob(f"{TMP_PREFIX}*-*"))
    except OSError:
        return
    for d in entries:
        pid_s = d.name[len(TMP_PREFIX):].split("-", 1)[0]
        if not pid_s.isdigit():
            continue
        try:
            if d.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid_s), 0)
        except ProcessLookupError:
            shutil.rmtree(d, ignore_errors=True)
        except OSError:
            continue
