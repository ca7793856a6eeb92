"""`Datastore` and `BlobStore` of the local target: SQLite (WAL) and a directory.

Several worker processes share one database file; SQLite serialises writers and every
statement sees the latest committed state, which gives the strong consistency the protocol
needs (seed 001 §3.3: a later create must fail and then read the winner's value). Set sizes
are kept in their own table so that a 10,000-member fan-in costs O(1) per add.

Deferred commit (one transaction per execution's egress, docs/local.md "Transactions"): a
local instance calls `defer_from("ckpt/", ("result",))` before an execution; the create of its
checkpoint or of the session's result (the commit point) then opens a write transaction that
every later write of the execution joins (each as a SAVEPOINT, so a failed write undoes only
itself), and the instance commits it with `commit_deferred()` once the execution ended,
together with the acknowledgement of its queue message, before it tells the platform of the
invocations it queued. Nothing of the execution's egress is visible to another process
before that one commit, so the writes are atomic as a whole: a crash (SIGKILL) before it loses all of them and the message is
redelivered, as if the execution had crashed just before its commit point.

Blob deletes join it too: a `FileBlobStore` given the datastore as its `gate` (the local
instance's) deletes files only once the deferred transaction that tombstones their items
commits (`after_commit`); a kill before that commit loses the deletes with the tombstones, so
the redelivery finds every blob its inputs name (issue 22: a redelivered consumer whose input
blob was already deleted dropped as "input already collected" and the session hung). A delete
lost that way is redone by the redelivery (it replays the egress), and a blob no item names
any more (a kill between the commit and the deletes) is removed by the session's final sweep
or the platform's give-up sweep (runtime.session.end lists the blob store).

Writers queue on an advisory lock (flock) of `<database>-wlock` before BEGIN IMMEDIATE, so a
writer that waits is woken by the kernel the moment the other commits; SQLite's own busy
handler (kept, for writers that do not take the lock) sleeps 1, 2, 5, 10 ... ms between tries,
which cost a map's parallel instances a millisecond per collision.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

__all__ = ["FileBlobStore", "SCHEMA", "SqliteDatastore"]

try:
    import fcntl
except ImportError:  # not POSIX: SQLite's busy handler alone serialises writers
    fcntl = None  # type: ignore[assignment]

from ..errors import UnumError
from ..payload import RESULT_KEY, check_session_id
from ..ports import BlobStore, Datastore
from ..storage import compact_json

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (session TEXT NOT NULL, name TEXT NOT NULL, item TEXT NOT NULL,
  expires_at REAL NOT NULL, PRIMARY KEY (session, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS set_members (session TEXT NOT NULL, name TEXT NOT NULL,
  member TEXT NOT NULL, PRIMARY KEY (session, name, member)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS set_sizes (session TEXT NOT NULL, name TEXT NOT NULL,
  size INTEGER NOT NULL, expires_at REAL NOT NULL, PRIMARY KEY (session, name)) WITHOUT ROWID;
"""
_CHUNK = 900  # bound on host parameters per statement
_SIDE_FILES = ("", "-wal", "-shm", "-wlock")  # the database and the files SQLite and we keep beside it


class LocalStateError(ValueError):
    """The local state file cannot be used (a symbolic link, or not a SQLite database);
    str() is one line naming the file and the fix. A ValueError: the CLI reports it as bad
    input (one line, exit 2), like any other bad file."""


def _open_state_file(path: str) -> None:
    """Refuse a symbolic link at the database or its side files (LocalStateError), create
    the database file 0600 when missing (SQLite gives its -wal/-shm files the database's
    mode), and take group/other access away from one that has it."""
    for suffix in _SIDE_FILES:
        if os.path.islink(path + suffix):
            raise LocalStateError(f"{path + suffix} is a symbolic link: unumctl keeps the local state only in "
                                  f"files it creates itself; remove the link (rm {path + suffix}) and run again")
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
        os.close(fd)
    except FileExistsError:
        try:
            if os.stat(path).st_mode & 0o077:
                os.chmod(path, 0o600)
        except OSError:  # not ours: SQLite says whether it can use it
            pass


class SqliteDatastore(Datastore):
    """Datastore on one SQLite file (created 0600 with its tables when missing; its directory
    0700 when created). Raises LocalStateError (one line: the file and the fix) when the file
    or a side file (-wal, -shm, -wlock) is a symbolic link or the file is not a SQLite database.

    `path`: database file. `autocheckpoint`: SQLite's wal_autocheckpoint in pages (None:
    SQLite's default of 1,000); a local platform, which checkpoints the WAL from a thread of
    its own (`checkpoint()`), gives its instances a high value so that their commits do not
    pay for the checkpoint's copy and fsync. Raises sqlite3.Error on I/O problems (the
    platform retries)."""

    max_item_bytes = 1_000_000

    def __init__(self, path: str | os.PathLike[str], autocheckpoint: int | None = None):
        self.path = str(path)
        Path(self.path).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _open_state_file(self.path)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None,
                                  check_same_thread=False)
        try:
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA busy_timeout=30000")
            if autocheckpoint is not None:
                self.db.execute(f"PRAGMA wal_autocheckpoint={int(autocheckpoint)}")
            self.db.executescript(SCHEMA)
        except sqlite3.DatabaseError as exc:
            self.db.close()
            if isinstance(exc, sqlite3.OperationalError):  # locked, I/O: the caller retries
                raise
            raise LocalStateError(f"{self.path}: not a usable SQLite database ({exc}); move it away "
                                  f"(mv {self.path} {self.path}.bad) and run again: the local target then "
                                  "starts with empty state") from None
        self._wlock: int | None = os.open(self.path + "-wlock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC
                              | getattr(os, "O_NOFOLLOW", 0), 0o600) if fcntl is not None else None
        self.lock = threading.RLock()  # one connection, shared by the threads of a process
        # deferred commit (module docstring): the prefix whose create starts it, whether
        # writes are being deferred, whether the deferred transaction is open, and whether
        # it was lost (rolled back by SQLite itself: later writes then fail until committed)
        self._defer_prefix: str | None = None
        self._defer_names: tuple[str, ...] = ()
        self._deferring = False
        self._open = False
        self._lost = False
        # effects waiting for the deferred transaction (after_commit): (on commit, on abandon)
        self._after: list[tuple[Callable[[], None], Callable[[], None] | None]] = []
        self.result_touched = False  # the session's result was created or read by a create

    def close(self) -> None:
        self.db.close()
        if self._wlock is not None:
            os.close(self._wlock)
            self._wlock = None

    def _lock_writers(self) -> None:
        if self._wlock is not None:
            fcntl.flock(self._wlock, fcntl.LOCK_EX)

    def _unlock_writers(self) -> None:
        if self._wlock is not None:
            fcntl.flock(self._wlock, fcntl.LOCK_UN)

    def _write(self, single: bool = False):
        """A write transaction (see _Txn); `single`: the block writes with one statement at
        most (atomic by itself), so inside a deferred transaction it needs no SAVEPOINT."""
        return _Txn(self, single)

    # ---- deferred commit (local instances; see the module docstring)
    def defer_from(self, prefix: str | None, names: tuple[str, ...] = ()) -> None:
        """Start deferring at the first `create_if_absent` of a name starting with `prefix`
        (None: never) or equal to one of `names` (the local instance passes the session's
        result: the commit point of a function with no edge); also resets `result_touched`.
        Call between executions."""
        self._defer_prefix = prefix
        self._defer_names = names if prefix is not None else ()
        self.result_touched = False

    @property
    def deferring(self) -> bool:
        """Whether writes are now joining the deferred transaction."""
        return self._deferring

    def after_commit(self, effect: Callable[[], None], abandon: Callable[[], None] | None = None) -> bool:
        """Run `effect()` once the deferred transaction now open commits (after the COMMIT,
        before `commit_deferred` returns; an exception it raises is ignored: an effect is a
        cleanup that a later sweep redoes), or `abandon()` if that transaction is rolled back
        or lost; a kill of the process runs neither. Returns False, and keeps nothing, when no
        deferred transaction is open: the caller applies its effect at once (its writes are
        committed already). Used by FileBlobStore for blob deletes (module docstring)."""
        with self.lock:
            if not (self._open or self._lost):
                return False
            self._after.append((effect, abandon))
            return True

    def _settle(self, committed: bool) -> None:
        after, self._after = self._after, []
        for effect, abandon in after:
            fn = effect if committed else abandon
            if fn is None:
                continue
            try:
                fn()
            except Exception:  # noqa: BLE001  (a cleanup; see after_commit)
                pass

    def commit_deferred(self) -> None:
        """Commit the deferred transaction, if one is open, and stop deferring; then run the
        effects waiting for it (after_commit). Raises sqlite3.Error when the commit fails or
        the transaction was lost (then nothing of it was written and the effects are
        abandoned); either way the datastore is back to one transaction per write."""
        with self.lock:
            was_open, lost = self._open, self._lost
            self._deferring = self._open = self._lost = False
            self._defer_prefix = None
            committed = False
            try:
                if was_open and self.db.in_transaction:
                    try:
                        self.db.execute("COMMIT")
                    except BaseException:
                        if self.db.in_transaction:
                            self.db.execute("ROLLBACK")
                        raise
                committed = not lost
            finally:
                if was_open:
                    self._unlock_writers()
                self._settle(committed)
            if lost:
                raise sqlite3.OperationalError("the deferred transaction was rolled back; nothing was written")

    def rollback_deferred(self) -> None:
        """Drop the deferred transaction, if one is open, and stop deferring (the effects
        waiting for it are abandoned)."""
        with self.lock:
            was_open = self._open
            self._deferring = self._open = self._lost = False
            self._defer_prefix = None
            try:
                if was_open and self.db.in_transaction:
                    self.db.execute("ROLLBACK")
            finally:
                if was_open:
                    self._unlock_writers()
                self._settle(False)

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        found: dict[str, dict[str, Any]] = {}
        uniq = list(dict.fromkeys(names))
        with self.lock:
            if len(uniq) <= _CHUNK or self.db.in_transaction:  # one statement = one snapshot
                self._read_into(session, uniq, found)
            else:
                self.db.execute("BEGIN")  # one read transaction = one snapshot
                try:
                    self._read_into(session, uniq, found)
                finally:
                    self.db.execute("COMMIT")
        return [found.get(n) for n in names]

    def _read_into(self, session: str, uniq: list[str], found: dict[str, Any]) -> None:
        for i in range(0, len(uniq), _CHUNK):
            chunk = uniq[i:i + _CHUNK]
            q = ("SELECT name, item FROM items WHERE session=? AND name IN (%s)"
                 % ",".join("?" * len(chunk)))
            for name, item in self.db.execute(q, [session, *chunk]):
                found[name] = json.loads(item)

    def create_if_absent(self, session, name, item, expires_at):
        if name == RESULT_KEY:
            self.result_touched = True
        if self._defer_prefix is not None and (name.startswith(self._defer_prefix)
                                               or name in self._defer_names):
            self._deferring = True
        with self._write(single=True):
            cur = self.db.execute("INSERT OR IGNORE INTO items VALUES (?,?,?,?)",
                                  (session, name, compact_json(item), expires_at))
            if cur.rowcount == 1:
                return True, item
            row = self.db.execute("SELECT item FROM items WHERE session=? AND name=?",
                                  (session, name)).fetchone()
        return False, json.loads(row[0])

    def set_add(self, session, name, member, expires_at):
        with self._write():
            cur = self.db.execute("INSERT OR IGNORE INTO set_members VALUES (?,?,?)",
                                  (session, name, member))
            if cur.rowcount == 1:
                self.db.execute(
                    "INSERT INTO set_sizes VALUES (?,?,1,?) ON CONFLICT(session, name) "
                    "DO UPDATE SET size = size + 1", (session, name, expires_at))
            row = self.db.execute("SELECT size FROM set_sizes WHERE session=? AND name=?",
                                  (session, name)).fetchone()
        return int(row[0])

    def put(self, session, name, item, expires_at):
        with self._write(single=True):
            self.db.execute("INSERT OR REPLACE INTO items VALUES (?,?,?,?)",
                            (session, name, compact_json(item), expires_at))

    def delete(self, session, names: Iterable[str]):
        names = list(names)
        with self._write():
            for table in ("items", "set_members", "set_sizes"):
                self.db.executemany(f"DELETE FROM {table} WHERE session=? AND name=?",
                                    [(session, n) for n in names])

    def sweep(self, session, keep):
        keep = list(keep)
        marks = ",".join("?" * len(keep)) or "''"
        with self._write():
            n = self.db.execute(f"DELETE FROM items WHERE session=? AND name NOT IN ({marks})",
                                [session, *keep]).rowcount
            n += self.db.execute("DELETE FROM set_sizes WHERE session=?", (session,)).rowcount
            self.db.execute("DELETE FROM set_members WHERE session=?", (session,))
        return n

    # ---- local-target helpers (not part of the port)
    def checkpoint(self) -> tuple[int, int]:
        """Copy the WAL's committed pages into the database file without blocking readers or
        writers (`PRAGMA wal_checkpoint(PASSIVE)`); returns (WAL pages, pages copied)."""
        with self.lock:
            _, log, done = self.db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(log), int(done)

    def purge_expired(self, now: float | None = None) -> int:
        """Emulate a TTL policy: delete items and sets whose expiry has passed."""
        now = time.time() if now is None else now
        with self._write():
            n = self.db.execute("DELETE FROM items WHERE expires_at < ?", (now,)).rowcount
            gone = self.db.execute("SELECT session, name FROM set_sizes WHERE expires_at < ?",
                                   (now,)).fetchall()
            self.db.executemany("DELETE FROM set_members WHERE session=? AND name=?", gone)
            self.db.execute("DELETE FROM set_sizes WHERE expires_at < ?", (now,))
        return n + len(gone)

    def dump(self, session: str | None = None) -> dict[str, list[str]]:
        """Names of every item and set, per session (for tests and `unumctl` inspection)."""
        out: dict[str, list[str]] = {}
        q_items = "SELECT session, name FROM items"
        q_sets = "SELECT session, name FROM set_sizes"
        args: tuple = ()
        if session is not None:
            q_items += " WHERE session=?"
            q_sets += " WHERE session=?"
            args = (session,)
        for s, n in self.db.execute(q_items, args).fetchall() + self.db.execute(q_sets, args).fetchall():
            out.setdefault(s, []).append(n)
        return out


class _Txn:
    """One atomic write: BEGIN IMMEDIATE ... COMMIT (ROLLBACK on error); while the datastore
    defers, the first write begins the transaction and leaves it open, and later ones are
    SAVEPOINTs inside it (ROLLBACK TO on error: a failed write undoes only itself), except a
    write of one statement (`single`), which SQLite makes atomic by itself."""

    def __init__(self, ds: SqliteDatastore, single: bool = False):
        self.ds = ds
        self.single = single  # one write statement: SQLite undoes a failed one by itself
        self.nested = False
        self.savepoint = False

    def __enter__(self):
        ds = self.ds
        ds.lock.acquire()
        try:
            if ds._lost:
                raise sqlite3.OperationalError("the deferred transaction was rolled back; "
                                               "this execution must be redelivered")
            self.nested = ds._open
            if self.nested:
                if not self.single:
                    ds.db.execute("SAVEPOINT w")
                    self.savepoint = True
            else:
                ds._lock_writers()
                try:
                    ds.db.execute("BEGIN IMMEDIATE")
                except BaseException:
                    ds._unlock_writers()
                    raise
        except BaseException:
            ds.lock.release()
            raise
        return self

    def __exit__(self, exc_type, exc, tb):
        ds = self.ds
        db = ds.db
        keep = False  # the writers' lock stays with the open deferred transaction
        try:
            if self.nested:
                keep = True
                if not db.in_transaction:  # SQLite rolled the whole transaction back
                    ds._open, ds._lost = False, True
                    keep = False
                elif not self.savepoint:
                    pass  # a single statement: done, or undone by SQLite when it failed
                elif exc_type:
                    db.execute("ROLLBACK TO w")
                    db.execute("RELEASE w")
                else:
                    db.execute("RELEASE w")
            elif exc_type:
                if db.in_transaction:
                    db.execute("ROLLBACK")
            elif ds._deferring:
                ds._open = keep = True  # committed by commit_deferred()
            else:
                db.execute("COMMIT")
        finally:
            if not keep:
                ds._unlock_writers()
            ds.lock.release()
        return False


class FileBlobStore(BlobStore):
    """Blobs as files under `root/<session>/<key>`; writes are atomic (temp file + rename).

    The session id must match runtime.payload.SESSION_ID_RE and a key is a relative path of
    '/'-separated segments, none of them empty, '.' or '..' (so a blob can never be read or
    written outside `root/<session>/`); anything else raises ValueError naming the rule.

    `gate` (the local instance's SqliteDatastore, optional): while it has a deferred
    transaction open, `delete` and `sweep` take effect only when that transaction commits and
    are dropped if it is rolled back (SqliteDatastore.after_commit; module docstring), so no
    file is gone while a committed item may still name it. Until then `get` still reads the
    files, and a `put` of a key that a waiting delete or sweep names keeps that file (the
    later write wins, as it would with immediate deletes)."""

    sweep_is_cheap = True  # a directory listing (runtime.ports.BlobStore)

    def __init__(self, root: str | os.PathLike[str], gate: SqliteDatastore | None = None):
        self.root = Path(root)
        self.gate = gate
        self._pending: list[tuple[str, Any, Any]] | None = None  # deletes waiting for the commit

    def _base(self, session: str) -> Path:
        try:
            check_session_id(session)
        except UnumError as exc:
            raise ValueError(f"blob store: {exc}") from None
        return self.root / session

    def _path(self, session: str, key: str) -> Path:
        base = self._base(session)
        if not isinstance(key, str) or not key or key.startswith("/") or "\0" in key:
            raise ValueError(f"blob store: key {str(key)[:100]!r} must be a non-empty relative path")
        parts = key.split("/")
        if any(part in ("", ".", "..") for part in parts):
            raise ValueError(f"blob store: key {key[:100]!r} has an empty, '.' or '..' segment; "
                             "use names like 'payload/F-UnumIndex-0'")
        path = base.joinpath(*parts)
        if os.path.commonpath([os.path.abspath(path), os.path.abspath(base)]) != os.path.abspath(base):
            raise ValueError(f"blob store: key {key[:100]!r} leaves the session directory")
        return path

    def put(self, session, key, data):
        path = self._path(session, key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + f".tmp{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        for kind, _, paths in self._pending or ():
            if kind == "delete":
                while path in paths:
                    paths.remove(path)
            else:
                paths.add(path)  # a sweep's kept files
        return key

    def get(self, session, ref):
        try:
            return self._path(session, ref).read_bytes()
        except FileNotFoundError:
            raise KeyError(f"blob {session}/{ref} not found") from None

    def delete(self, session, refs):
        paths = [self._path(session, ref) for ref in refs]
        if paths and not self._later(("delete", None, paths)):
            self._unlink(paths)

    def sweep(self, session, keep=()):
        base = self._base(session)
        kept = {self._path(session, k) for k in keep}
        if not self._later(("sweep", base, kept)):
            self._sweep(base, kept)

    # ---- deletes gated by the datastore's deferred transaction (class docstring)
    def _later(self, op: tuple[str, Any, Any]) -> bool:
        if self.gate is None:
            return False
        if self._pending is None:
            pending: list[tuple[str, Any, Any]] = []
            if not self.gate.after_commit(lambda: self._apply(pending), lambda: self._drop(pending)):
                return False
            self._pending = pending
        self._pending.append(op)
        return True

    def _apply(self, pending: list[tuple[str, Any, Any]]) -> None:
        self._drop(pending)
        for kind, base, paths in pending:
            if kind == "delete":
                self._unlink(paths)
            else:
                self._sweep(base, paths)

    def _drop(self, pending: list[tuple[str, Any, Any]]) -> None:
        if self._pending is pending:
            self._pending = None

    @staticmethod
    def _unlink(paths: Iterable[Path]) -> None:
        for path in paths:
            path.unlink(missing_ok=True)

    @staticmethod
    def _sweep(base: Path, kept: set[Path]) -> None:
        if not base.exists():
            return
        if not any(k.exists() for k in kept):
            shutil.rmtree(base, ignore_errors=True)
            return
        for p in sorted(base.rglob("*"), reverse=True):
            if p.is_file() and p not in kept:
                p.unlink(missing_ok=True)
