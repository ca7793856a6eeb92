"""The versions of an app's deployment on the local target (and `unumctl serve`): what makes
one, where each one's bundles are kept, and when an old one is retired and collected
(docs/versions.md).

A version is what a platform runs: every function's bundle (code, runtime, IR, options:
the zip's SHA-256, deterministic, unumctl/build.py) and the settings the platform enforces
(each function's `timeout` and `memory`, the delivery attempts, the history level). Its id
is the start of the SHA-256 of those, in canonical JSON (`version_id`): the same app built
twice is one version; any change of code, IR or settings is a new one.

Each version's unpacked bundles live in `<state>/versions/<id>/<bundle>/`, and its record in
the app's SQLite file:

    local_versions(version TEXT PRIMARY KEY,
                   deployed_at REAL,   -- Unix s it was last made current (the newest is current)
                   functions TEXT)     -- JSON {function: {"bundle": dir relative to versions/<id>/,
                                       --                   "timeout": s|null,
                                       --                   "memory": MB|null}}

A platform holds a shared flock(2) on `<state>/versions/<id>/.held` of the version it starts
new sessions on, for as long as it runs. An old version is retired when it is not current,
no platform holds it, and none of its sessions can still run (runtime.local.queue
`running_by_version`: none without a result, with a queued invocation or FAILED and
redrivable, and not expired; the expiry, the result's retention, bounds how long a stuck
session keeps it); it is then collected: its record and its directory are deleted.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from runtime.local.datastore import SqliteDatastore
from runtime.local.queue import DurableQueue
from runtime.payload import VersionId

from ..deploy.versions import deployment_version, retirable, version_id

__all__ = ["VERSIONS", "Version", "VersionStore", "deployment_version", "retirable", "version_id"]

VERSIONS = "versions"  # under the state directory
HELD = ".held"         # in a version's directory: the lock a platform running it holds

_SCHEMA = """
CREATE TABLE IF NOT EXISTS local_versions (version TEXT PRIMARY KEY, deployed_at REAL NOT NULL,
  functions TEXT NOT NULL) WITHOUT ROWID;
"""


@dataclass(frozen=True)
class Version:
    """One version's record: `id`, `deployed_at` (Unix s), `bundles` (function -> its unpacked
    bundle directory), `limits` (function -> (timeout s, memory MB), None for unset)."""

    id: VersionId
    deployed_at: float
    bundles: dict[str, Path]
    limits: dict[str, tuple[float | None, int | None]]


class VersionStore:
    """The versions of one local state directory `state` on datastore `ds` (the app's SQLite
    file, the same connection as the durable queue). Methods are one transaction each;
    sqlite3.Error and OSError propagate."""

    def __init__(self, ds: SqliteDatastore, state: Path):
        self.ds = ds
        self.root = Path(state) / VERSIONS
        self.queue = DurableQueue(ds)
        with ds.lock:
            ds.db.executescript(_SCHEMA)

    def directory(self, version: VersionId) -> Path:
        """`<state>/versions/<version>` (VersionId: a safe directory name)."""
        return self.root / VersionId(version)

    def register(self, version: VersionId, bundles: Mapping[str, Path],
                 limits: Mapping[str, tuple[float | None, int | None]], now: float | None = None) -> Version:
        """Record `version` (its unpacked `bundles`, function -> a directory, normally under
        `directory(version)`, recorded relative to it, and its `limits`) and make it current; a version registered
        before keeps its record and only becomes current again (a rollback)."""
        now = time.time() if now is None else now
        funcs = {fn: {"bundle": os.path.relpath(d, self.directory(version)), "timeout": limits.get(fn, (None, None))[0],
                      "memory": limits.get(fn, (None, None))[1]} for fn, d in bundles.items()}
        with self.ds._write():
            self.ds.db.execute("INSERT INTO local_versions VALUES (?,?,?) ON CONFLICT(version) DO UPDATE "
                               "SET deployed_at=excluded.deployed_at", (version, now, json.dumps(funcs)))
        got = self.get(version)
        assert got is not None
        return got

    def get(self, version: str) -> Version | None:
        """The record of `version`, or None when it is unknown (never registered, or collected)."""
        with self.ds.lock:
            row = self.ds.db.execute("SELECT version, deployed_at, functions FROM local_versions WHERE version=?",
                                     (version,)).fetchone()
        return None if row is None else self._version(row)

    def _version(self, row: tuple) -> Version:
        vid = VersionId(row[0])
        funcs = json.loads(row[2])
        d = self.directory(vid)
        return Version(vid, float(row[1]), {fn: d / f["bundle"] for fn, f in funcs.items()},
                       {fn: (f["timeout"], f["memory"]) for fn, f in funcs.items()})

    def all(self) -> list[Version]:
        """Every recorded version, the current one (newest `deployed_at`) first."""
        with self.ds.lock:
            rows = self.ds.db.execute("SELECT version, deployed_at, functions FROM local_versions "
                                      "ORDER BY deployed_at DESC, version").fetchall()
        return [self._version(r) for r in rows]

    def current(self) -> VersionId | None:
        """The version new sessions start on (the last one registered), None before any."""
        every = self.all()
        return every[0].id if every else None

    def not_redrivable(self, session: str) -> str | None:
        """Why session `session` cannot be redriven here, or None: the version it is pinned to
        was collected (a redrive re-runs a session on the version it started on; a
        redrivable FAILED session keeps its version until its record expires:
        docs/versions.md)."""
        info = self.queue.session(session)
        pinned = info and info["version"]
        if pinned and self.get(pinned) is None:
            return (f"version {pinned} of the app, which session {session} started on, was collected once "
                    "its sessions ended; start a new session")
        return None

    def hold(self, version: VersionId) -> int:
        """Take a shared lock on `version`'s HELD file and return its descriptor: while it is
        open, the version is not collected (the caller closes it when its platform stops)."""
        d = self.directory(version)
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(d / HELD, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_SH)
        return fd

    def listing(self, now: float | None = None) -> list[dict[str, Any]]:
        """[{"version", "deployed_at", "running", "current", "functions"}], the current first:
        what `unumctl versions` prints."""
        running = self.queue.running_by_version(now)
        every = self.all()
        return [{"version": v.id, "deployed_at": v.deployed_at, "running": running.get(v.id, 0),
                 "current": i == 0, "functions": sorted(v.bundles)} for i, v in enumerate(every)]

    def collect(self, now: float | None = None) -> list[VersionId]:
        """Retire and collect every version `retirable` names: delete its record, then its
        directory (a version held by a live platform is skipped: its lock is tried, never
        waited for). Returns the ids collected."""
        every = [v.id for v in self.all()]
        if len(every) < 2:
            return []
        running = self.queue.running_by_version(now)
        gone = []
        for vid in retirable(every, every[0], running):
            fd = self._try_exclusive(vid)
            if fd is None:
                continue
            try:
                with self.ds._write():  # checked again inside the write: no session pinned meanwhile
                    if self.queue.running_by_version(now).get(vid):
                        continue
                    self.ds.db.execute("DELETE FROM local_versions WHERE version=?", (vid,))
                shutil.rmtree(self.directory(vid), ignore_errors=True)
                gone.append(vid)
            finally:
                os.close(fd)
        return gone

    def _try_exclusive(self, version: VersionId) -> int | None:
        """An exclusive lock on `version`'s HELD file (its descriptor), or None while a
        platform holds it."""
        d = self.directory(version)
        try:
            fd = os.open(d / HELD, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | os.O_CLOEXEC, 0o600)
        except FileNotFoundError:  # its directory is gone already: only the record is left
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd = os.open(d / HELD, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        return fd

