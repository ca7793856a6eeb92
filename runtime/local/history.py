"""The local target's `Events` adapter (runtime.ports.Events): the execution history in the
app's SQLite file, next to the datastore (docs/observability.md).

Tables (created when missing):

    history_events(id INTEGER PRIMARY KEY AUTOINCREMENT, session, t0, t1,  -- Unix s
                   kind, instance, function, attempt, request_id, error, detail,
                   data)                -- JSON: durations (ms), sizes (bytes), input/output
    history_sessions(session PRIMARY KEY, function, started_at, ended_at, status,
                     input,             -- JSON, or {"omitted": true, "bytes": N} when large
                     result)            -- JSON result item (value omitted when large)
    history_logs(id INTEGER PRIMARY KEY AUTOINCREMENT, session, function, instance,
                 attempt, request_id, t, line)   -- the functions' own output, per line

`history_events` has one index, its UNIQUE key (which makes a repeated record a no-op), and
reads by session use it (it starts with the session). Databases created before 2026-11-23
also have `history_events_session` (session, t0), which is kept but no longer needed: one
B-tree fewer to update per execution.

Writers: the function instances (engine events, captured output) and the platform (delivery
retries, timeouts, give-ups, injected duplicates). Each write is its own short transaction,
outside the commit protocol; callers swallow its errors (runtime.ports.emit_safely).
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Sequence

from ..ports import Events
from .datastore import SqliteDatastore

__all__ = ["SqliteHistory"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS history_events (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT NOT NULL, t0 REAL, t1 REAL, kind TEXT NOT NULL, instance TEXT, function TEXT,
  attempt INTEGER, request_id TEXT, error TEXT, detail TEXT, data TEXT,
  UNIQUE (session, instance, kind, request_id, attempt, t0));
CREATE TABLE IF NOT EXISTS history_sessions (session TEXT PRIMARY KEY, function TEXT,
  started_at REAL, ended_at REAL, status TEXT, input TEXT, result TEXT) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS history_sessions_start ON history_sessions (started_at);
CREATE TABLE IF NOT EXISTS history_logs (id INTEGER PRIMARY KEY AUTOINCREMENT,
  session TEXT, function TEXT, instance TEXT, attempt INTEGER, request_id TEXT, t REAL,
  line TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS history_logs_session ON history_logs (session, id);
"""
_COLUMNS = ("session", "t0", "t1", "kind", "instance", "function", "attempt", "request_id",
            "error", "detail")
MAX_INLINE_BYTES = 64 * 1024  # larger session inputs/outputs are stored as a size only
# compact JSON of a record's data, anything else as its str(); one encoder for every record
_data_json = json.JSONEncoder(separators=(",", ":"), default=str).encode


def _small(value: Any) -> Any:
    text = _data_json(value)
    if len(text) > MAX_INLINE_BYTES:
        return {"omitted": True, "bytes": len(text)}
    return value


class SqliteHistory(Events):
    """Events adapter and reader on the datastore's SQLite connection.

    `ds`: the SqliteDatastore whose file holds the history; `level`: runtime.history."""

    def __init__(self, ds: SqliteDatastore, level: str = "full"):
        self.ds = ds
        self.level = level
        with ds.lock:
            ds.db.executescript(_SCHEMA)

    # ------------------------------------------------------------------ writing (the port)
    def record(self, events: Sequence[dict[str, Any]]) -> None:
        rows = []
        for e in events:
            data = {k: v for k, v in e.items() if k not in _COLUMNS and v is not None}
            rows.append(tuple(e.get(c) for c in _COLUMNS)
                        + (_data_json(data) if data else None,))
        with self.ds._write(single=len(rows) == 1):
            self.ds.db.executemany(
                "INSERT OR IGNORE INTO history_events (session, t0, t1, kind, instance, function, "
                "attempt, request_id, error, detail, data) VALUES (?,?,?,?,?,?,?,?,?,?,?)", rows)

    def session_started(self, session: str, function: str, start: float, input: Any) -> None:
        with self.ds._write(single=True):
            self.ds.db.execute(
                "INSERT INTO history_sessions (session, function, started_at, input) VALUES (?,?,?,?) "
                "ON CONFLICT(session) DO UPDATE SET function=COALESCE(function, excluded.function), "
                "started_at=COALESCE(started_at, excluded.started_at), "
                "input=COALESCE(input, excluded.input)",
                (session, function, start, json.dumps(_small(input), default=str)))

    def session_ended(self, session: str, status: str, end: float, result: dict[str, Any]) -> None:
        res = dict(result)
        if "v" in res:
            res["v"] = _small(res["v"])
        with self.ds._write(single=True):
            self.ds.db.execute(
                "INSERT INTO history_sessions (session, ended_at, status, result) VALUES (?,?,?,?) "
                "ON CONFLICT(session) DO UPDATE SET ended_at=excluded.ended_at, "
                "status=excluded.status, result=excluded.result WHERE ended_at IS NULL",
                (session, end, status, json.dumps(res, default=str)))

    def reopen(self, session: str) -> None:
        """A redrive reopened `session` (runtime/redrive.py): clear its end, so the end of
        the redriven run is recorded (`session_ended` keeps the first end)."""
        with self.ds._write(single=True):
            self.ds.db.execute("UPDATE history_sessions SET ended_at=NULL, status=NULL, result=NULL "
                               "WHERE session=?", (session,))

    def logs_write(self, rows: Iterable[tuple]) -> None:
        """Append captured output lines: (session, function, instance, attempt, request_id,
        t, line) tuples (local target only; the clouds have their own log services)."""
        rows = list(rows)
        if not rows:
            return
        with self.ds._write():
            self.ds.db.executemany(
                "INSERT INTO history_logs (session, function, instance, attempt, request_id, t, line) "
                "VALUES (?,?,?,?,?,?,?)", rows)

    def purge(self, before: float) -> None:
        """Delete the history of sessions started before `before` (Unix s) and events and
        log lines older than it."""
        with self.ds._write():
            self.ds.db.execute("DELETE FROM history_events WHERE t0 < ?", (before,))
            self.ds.db.execute("DELETE FROM history_logs WHERE t < ?", (before,))
            self.ds.db.execute("DELETE FROM history_sessions WHERE started_at < ?", (before,))

    # ------------------------------------------------------------------ reading (the CLI)
    def _query(self, sql: str, args: Sequence[Any] = ()) -> list[tuple]:
        with self.ds.lock:
            return self.ds.db.execute(sql, list(args)).fetchall()

    def session_rows(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Session records, newest first: dicts {session, function, started_at, ended_at,
        status (None while running), invocations (distinct invocations with an event)}."""
        sql = ("SELECT s.session, s.function, s.started_at, s.ended_at, s.status, "
               "(SELECT COUNT(DISTINCT instance) FROM history_events e WHERE e.session = s.session "
               " AND e.kind IN ('ran', 'adopted', 'failed', 'suspended')) "
               "FROM history_sessions s")
        args: list[Any] = []
        if status == "RUNNING":
            sql += " WHERE s.status IS NULL"
        elif status is not None:
            sql += " WHERE s.status = ?"
            args.append(status)
        sql += " ORDER BY s.started_at DESC, s.session"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        return [dict(zip(("session", "function", "started_at", "ended_at", "status", "invocations"), r))
                for r in self._query(sql, args)]

    def session_row(self, session: str) -> dict[str, Any] | None:
        """One session record {session, function, started_at, ended_at, status, input,
        result} (input/result decoded) or None."""
        rows = self._query("SELECT session, function, started_at, ended_at, status, input, result "
                           "FROM history_sessions WHERE session = ?", (session,))
        if not rows:
            return None
        r = dict(zip(("session", "function", "started_at", "ended_at", "status", "input", "result"), rows[0]))
        for k in ("input", "result"):
            r[k] = json.loads(r[k]) if r[k] is not None else None
        return r

    def events(self, session: str) -> list[dict[str, Any]]:
        """The session's events in order (start time, then insertion), each a dict with
        the columns and the `data` fields merged in."""
        out = []
        for r in self._query("SELECT id, session, t0, t1, kind, instance, function, attempt, request_id, "
                             "error, detail, data FROM history_events WHERE session = ? "
                             "ORDER BY t0, id", (session,)):
            e = dict(zip(("id",) + _COLUMNS, r[:11]))
            e = {k: v for k, v in e.items() if v is not None}
            if r[11]:
                e.update(json.loads(r[11]))
            out.append(e)
        return out

    def log_lines(self, session: str | None = None, function: str | None = None,
                  after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Captured output lines with id > `after`, oldest first: {id, session, function,
        instance, attempt, request_id, t, line}."""
        sql = ("SELECT id, session, function, instance, attempt, request_id, t, line FROM history_logs "
               "WHERE id > ?")
        args: list[Any] = [after]
        if session is not None:
            sql += " AND session = ?"
            args.append(session)
        if function is not None:
            sql += " AND function = ?"
            args.append(function)
        sql += " ORDER BY id"
        if limit is not None:
            sql += " LIMIT ?"
            args.append(int(limit))
        keys = ("id", "session", "function", "instance", "attempt", "request_id", "t", "line")
        return [dict(zip(keys, r)) for r in self._query(sql, args)]
