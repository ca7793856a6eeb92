"""The local target's durable invocation queue and session registry, in the app's SQLite file.

Lambda's async Invoke returns once the invocation is durably queued; the local target does
the same: every accepted invocation is a row of `local_queue` (in the same database file as
the datastore, committed before `invoke_many` returns) and is deleted only when an execution
of it completes or the platform gives it up. A platform that starts claims the rows whose
owner is gone (a killed `unumctl invoke`), so `unumctl resume` finishes the session.

Tables (see docs/local.md):

    local_queue(id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the message id
                session TEXT, function TEXT,
                payload TEXT,        -- the invocation payload, JSON
                not_before REAL,     -- epoch seconds; later than now for a delayed (Wait) invoke
                attempts INTEGER,    -- failed delivery attempts so far
                owner TEXT,          -- the platform delivering it ("pid:start:nonce") or NULL
                parent INTEGER,      -- id of the message whose execution invoked it (NULL: client)
                created_at REAL)
    local_sessions(session TEXT PRIMARY KEY, function TEXT,  -- the entry function
                   input_sha256 TEXT,  -- of the canonical JSON input (ExecutionAlreadyExists check)
                   input TEXT,         -- canonical JSON input (restarts a session with no messages)
                   started_at REAL, expires_at REAL,
                   version TEXT)       -- the app version it is pinned to (docs/versions.md), NULL
                                       -- until its first delivery when registered without one

An owner is dead when its process is gone (pid and process start time from /proc, so a
reused pid is not mistaken for it); a platform that closes cleanly releases its rows.
"""

from __future__ import annotations

import json
import os
import secrets
import time
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..payload import RESULT_KEY, VersionId
from ..redrive import FROM_PREFIX
from ..session import SessionExistsError, canonical_input, entry_payload
from ..storage import compact_json
from .datastore import SqliteDatastore

__all__ = ["DurableQueue", "SessionExistsError", "canonical_input", "new_owner", "owner_alive"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS local_queue (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT NOT NULL, function TEXT NOT NULL, payload TEXT NOT NULL,
  not_before REAL NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, owner TEXT,
  parent INTEGER, created_at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS local_queue_session ON local_queue(session);
CREATE INDEX IF NOT EXISTS local_queue_owner ON local_queue(owner, parent);
CREATE TABLE IF NOT EXISTS local_sessions (session TEXT PRIMARY KEY, function TEXT NOT NULL,
  input_sha256 TEXT NOT NULL, input TEXT NOT NULL, started_at REAL NOT NULL,
  expires_at REAL NOT NULL, version TEXT) WITHOUT ROWID;
"""


@dataclass
class QueuedMessage:
    """One row of `local_queue`: `not_before` is epoch seconds, `attempts` failed so far."""

    id: int
    session: str
    function: str
    payload: dict[str, Any]
    not_before: float
    attempts: int


def _start_time(pid: int) -> str | None:
    """The process start time (clock ticks since boot, /proc/<pid>/stat field 22), or None
    when the process does not exist. On systems without /proc, '?' for any live pid."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        return stat[stat.rindex(")") + 2:].split()[19]
    except FileNotFoundError:
        if not os.path.isdir("/proc/self"):
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return None
            except PermissionError:
                return "?"
            return "?"
        return None
    except (OSError, IndexError, ValueError):
        return None


def new_owner() -> str:
    """A fresh owner token for a platform of this process: 'pid:start time:nonce'."""
    pid = os.getpid()
    return f"{pid}:{_start_time(pid) or '?'}:{secrets.token_hex(4)}"


def owner_alive(owner: str) -> bool:
    """Whether the process of an owner token still runs (the same process, not a reused pid)."""
    try:
        pid_s, start, _ = owner.split(":", 2)
        pid = int(pid_s)
    except ValueError:
        return False
    now = _start_time(pid)
    return now is not None and (start == "?" or now == "?" or now == start)


class DurableQueue:
    """`local_queue` and `local_sessions` on a SqliteDatastore's connection (same file, same
    lock). Every method is one transaction; sqlite3.Error propagates (the caller retries)."""

    def __init__(self, ds: SqliteDatastore):
        self.ds = ds
        with ds.lock:
            ds.db.executescript(_SCHEMA)
            cols = {r[1] for r in ds.db.execute("PRAGMA table_info(local_sessions)")}
            if "version" not in cols:  # a database from before versions: its sessions pin on delivery
                ds.db.execute("ALTER TABLE local_sessions ADD COLUMN version TEXT")

    # ---- messages
    def add(self, calls: Sequence[tuple[str, dict[str, Any]]], owner: str | None,
            parent: int | None = None, delay: float = 0.0) -> list[int]:
        """Persist invocations (function, payload) and return their ids, in order.
        `delay` seconds defers delivery (not_before = now + delay)."""
        now = time.time()
        ids = []
        with self.ds._write(single=len(calls) == 1):
            for fn, payload in calls:
                cur = self.ds.db.execute(
                    "INSERT INTO local_queue (session, function, payload, not_before, attempts, owner, "
                    "parent, created_at) VALUES (?,?,?,?,0,?,?,?)",
                    (str(payload.get("Session", "")), fn, compact_json(payload),
                     now + delay, owner, parent, now))
                ids.append(int(cur.lastrowid))  # type: ignore[arg-type]
        return ids

    def delete(self, ids: Iterable[int]) -> None:
        """Remove completed or given-up messages."""
        rows = [(i,) for i in ids]
        if rows:
            with self.ds._write(single=len(rows) == 1):
                self.ds.db.executemany("DELETE FROM local_queue WHERE id=?", rows)

    def failed_attempt(self, msg_id: int) -> None:
        """Count one failed delivery attempt of a message."""
        with self.ds._write():
            self.ds.db.execute("UPDATE local_queue SET attempts = attempts + 1 WHERE id=?", (msg_id,))

    def claim(self, owner: str) -> list[QueuedMessage]:
        """Take over every message with no owner or a dead one and return them (oldest first)."""
        with self.ds._write():
            owners = [r[0] for r in self.ds.db.execute(
                "SELECT DISTINCT owner FROM local_queue WHERE owner IS NOT NULL AND owner != ?", (owner,))]
            dead = [o for o in owners if not owner_alive(o)]
            self.ds.db.execute("UPDATE local_queue SET owner=? WHERE owner IS NULL", (owner,))
            self.ds.db.executemany("UPDATE local_queue SET owner=? WHERE owner=?", [(owner, o) for o in dead])
            rows = self.ds.db.execute(
                "SELECT id, session, function, payload, not_before, attempts FROM local_queue "
                "WHERE owner=? ORDER BY id", (owner,)).fetchall()
        return [QueuedMessage(i, s, f, json.loads(p), nb, a) for i, s, f, p, nb, a in rows]

    def claim_unowned(self, owner: str) -> list[QueuedMessage]:
        """Take over the messages no platform owns (queued from outside a platform, e.g. by
        `unumctl send-task-success`) and return them; cheap when there are none (indexed)."""
        with self.ds._write():
            rows = self.ds.db.execute(
                "SELECT id, session, function, payload, not_before, attempts FROM local_queue "
                "WHERE owner IS NULL ORDER BY id").fetchall()
            if rows:
                self.ds.db.executemany("UPDATE local_queue SET owner=? WHERE id=? AND owner IS NULL",
                                       [(owner, r[0]) for r in rows])
        return [QueuedMessage(i, s, f, json.loads(p), nb, a) for i, s, f, p, nb, a in rows]

    def runnable(self, session: str, before: float) -> int:
        """Number of queued messages of a session due before `before` (epoch s), any owner."""
        with self.ds.lock:
            return int(self.ds.db.execute("SELECT count(*) FROM local_queue WHERE session=? AND "
                                          "not_before < ?", (session, before)).fetchone()[0])

    def children(self, owner: str, parent: int) -> list[QueuedMessage]:
        """Messages that the execution of `parent` queued (to adopt those whose notice was lost
        when its worker died)."""
        with self.ds.lock:
            rows = self.ds.db.execute(
                "SELECT id, session, function, payload, not_before, attempts FROM local_queue "
                "WHERE owner=? AND parent=? ORDER BY id", (owner, parent)).fetchall()
        return [QueuedMessage(i, s, f, json.loads(p), nb, a) for i, s, f, p, nb, a in rows]

    def get(self, msg_id: int) -> QueuedMessage | None:
        """One queued message by id, or None."""
        with self.ds.lock:
            row = self.ds.db.execute("SELECT id, session, function, payload, not_before, attempts "
                                     "FROM local_queue WHERE id=?", (msg_id,)).fetchone()
        return None if row is None else QueuedMessage(row[0], row[1], row[2], json.loads(row[3]), row[4], row[5])

    def release(self, owner: str) -> int:
        """Give up ownership (a clean shutdown): the messages wait for the next platform."""
        with self.ds._write():
            return self.ds.db.execute("UPDATE local_queue SET owner=NULL WHERE owner=?", (owner,)).rowcount

    def pending(self, session: str) -> int:
        """Number of queued messages of a session (any owner)."""
        with self.ds.lock:
            return int(self.ds.db.execute("SELECT count(*) FROM local_queue WHERE session=?",
                                          (session,)).fetchone()[0])

    def drop_session(self, session: str) -> int:
        """Delete every queued message of a session (any owner) and return how many: for a
        session that was stopped (its result written), whose executions would only drop."""
        with self.ds._write():
            return self.ds.db.execute("DELETE FROM local_queue WHERE session=?", (session,)).rowcount

    # ---- sessions
    def start_session(self, session: str, function: str, value: Any, owner: str | None,
                      expires_at: float, version: VersionId | None = None) -> tuple[str, int | None]:
        """Register a session and queue its entry invocation, atomically; a new session is
        pinned to `version` (None: to the version of the platform that first delivers one of
        its invocations, `pin`).

        Returns ("started", message id) for a new session; ("resumed", id or None) when the
        session exists with the same input (a message is queued again only when the session
        has neither a queued message nor a result). Raises SessionExistsError when it exists
        with a different input."""
        text, digest = canonical_input(value)
        now = time.time()
        with self.ds._write():
            row = self.ds.db.execute("SELECT input_sha256 FROM local_sessions WHERE session=?",
                                     (session,)).fetchone()
            if row is not None and row[0] != digest:
                raise SessionExistsError(
                    f"session {session} already exists with a different input (ExecutionAlreadyExists); "
                    "use a new --session id, or the same input to resume it")
            if row is None:
                self.ds.db.execute("INSERT INTO local_sessions (session, function, input_sha256, input, "
                                   "started_at, expires_at, version) VALUES (?,?,?,?,?,?,?)",
                                   (session, function, digest, text, now, expires_at, version))
            return ("started" if row is None else "resumed"), self._requeue(session, owner, now)

    def resume_session(self, session: str, owner: str | None) -> int | None:
        """Queue the entry invocation of a registered session again when it has neither a
        queued message nor a result; returns the new message id or None. Raises KeyError
        when the session is unknown."""
        with self.ds._write():
            return self._requeue(session, owner, time.time(), must_exist=True)

    def _requeue(self, session: str, owner: str | None, now: float, must_exist: bool = False) -> int | None:
        row = self.ds.db.execute("SELECT function, input FROM local_sessions WHERE session=?",
                                 (session,)).fetchone()
        if row is None:
            if must_exist:
                raise KeyError(session)
            return None
        busy = self.ds.db.execute("SELECT 1 FROM local_queue WHERE session=? LIMIT 1", (session,)).fetchone()
        done = self.ds.db.execute("SELECT 1 FROM items WHERE session=? AND name=?",
                                  (session, RESULT_KEY)).fetchone()
        if busy or done:
            return None
        payload = entry_payload(session, json.loads(row[1]))
        cur = self.ds.db.execute(
            "INSERT INTO local_queue (session, function, payload, not_before, attempts, owner, parent, "
            "created_at) VALUES (?,?,?,?,0,?,NULL,?)",
            (session, row[0], compact_json(payload), now, owner, now))
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def session(self, session: str) -> dict[str, Any] | None:
        """The registry row {"function", "input_sha256", "started_at", "version" (VersionId or
        None: not pinned yet)} or None."""
        with self.ds.lock:
            row = self.ds.db.execute("SELECT function, input_sha256, started_at, version FROM local_sessions "
                                     "WHERE session=?", (session,)).fetchone()
        return None if row is None else {"function": row[0], "input_sha256": row[1], "started_at": row[2],
                                         "version": None if row[3] is None else VersionId(row[3])}

    def pin(self, session: str, version: VersionId) -> VersionId | None:
        """The version session `session` runs on: the one it was pinned to, else (registered
        without one, e.g. by `invoke --no-wait` or before versions) `version`, recorded now.
        None for a session that is not registered (it is not pinned: its invocations run on
        the delivering platform's version). UnumError for a malformed stored id."""
        with self.ds.lock:
            row = self.ds.db.execute("SELECT version FROM local_sessions WHERE session=?", (session,)).fetchone()
        if row is not None and row[0] is None:
            with self.ds._write():
                self.ds.db.execute("UPDATE local_sessions SET version=? WHERE session=? AND version IS NULL",
                                   (version, session))
                row = self.ds.db.execute("SELECT version FROM local_sessions WHERE session=?",
                                         (session,)).fetchone()
        return None if row is None else VersionId(row[0])

    def running_by_version(self, now: float | None = None) -> dict[str, int]:
        """{version: number of its sessions that can still run} (docs/versions.md): registered,
        not expired (`expires_at`, the result's retention, bounds every session), and without
        a result, or with a queued message (a duplicate still being delivered), or FAILED and
        redrivable (its frontier log, runtime/redrive.py, is kept: a redrive re-runs it on
        its version)."""
        now = time.time() if now is None else now
        with self.ds.lock:
            rows = self.ds.db.execute(
                "SELECT version, count(*) FROM local_sessions s WHERE expires_at >= ? AND version IS NOT NULL "
                "AND (NOT EXISTS (SELECT 1 FROM items i WHERE i.session=s.session AND i.name=?) "
                "OR EXISTS (SELECT 1 FROM local_queue q WHERE q.session=s.session) "
                "OR EXISTS (SELECT 1 FROM items i WHERE i.session=s.session AND i.name=? AND i.expires_at >= ?)) "
                "GROUP BY version", (now, RESULT_KEY, FROM_PREFIX + "0", now)).fetchall()
        return {str(v): int(n) for v, n in rows}

    def purge_expired(self, now: float | None = None) -> int:
        """Delete registry rows past their expiry (as the result item's retention)."""
        now = time.time() if now is None else now
        with self.ds._write():
            return self.ds.db.execute("DELETE FROM local_sessions WHERE expires_at < ?", (now,)).rowcount
