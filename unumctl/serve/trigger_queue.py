"""The local queue of `queue` triggers on `unumctl serve`: a durable message queue in SQLite
with SQS's delivery model (at least once; a received message is invisible for a
visibility timeout, then delivered again unless deleted; after `max_receive_count`
receives it moves to the dead-letter queue), so a trigger's consumer meets the
redeliveries it meets on SQS (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html,
.../sqs-dead-letter-queues.html).

The file is `<app>/.unum/local/<stage>/queues.sqlite` (one table; `queue` is the trigger's
name). Messages are sent with `POST /apps/APP/triggers/NAME` on serve (docs/triggers.md).
"""

from __future__ import annotations

import os
import sqlite3
import threading
import uuid
from pathlib import Path

__all__ = ["LocalQueue", "Message", "QUEUES_FILE"]

QUEUES_FILE = "queues.sqlite"

Message = tuple[str, str, int, float]  # (messageId, body, receive count, sent at: Unix s)


class LocalQueue:
    """The queues of one app stage in the SQLite file `path` (created 0600 when missing;
    OSError when it is a symbolic link). Thread-safe (one connection behind a lock)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        # created 0600, and a planted link is refused (ELOOP), not followed
        os.close(os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0), 0o600))
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("CREATE TABLE IF NOT EXISTS messages (queue TEXT NOT NULL, id TEXT NOT NULL, "
                         "body TEXT NOT NULL, sent REAL NOT NULL, receives INTEGER NOT NULL DEFAULT 0, "
                         "visible REAL NOT NULL, dead INTEGER NOT NULL DEFAULT 0, PRIMARY KEY (queue, id))")

    def send(self, queue: str, body: str, now: float) -> str:
        """Add a message with `body` to `queue`; returns its messageId (a UUID4)."""
        mid = str(uuid.uuid4())
        with self._lock:
            self._db.execute("INSERT INTO messages (queue, id, body, sent, visible) VALUES (?, ?, ?, ?, ?)",
                             (queue, mid, body, now, now))
        return mid

    def receive(self, queue: str, limit: int, now: float, visibility: float) -> list[Message]:
        """Up to `limit` visible messages of `queue`, oldest first, each made invisible for
        `visibility` seconds and its receive count raised by one."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                rows = self._db.execute("SELECT id, body, receives, sent FROM messages WHERE queue = ? AND dead = 0 "
                                        "AND visible <= ? ORDER BY sent, id LIMIT ?", (queue, now, limit)).fetchall()
                self._db.executemany("UPDATE messages SET receives = receives + 1, visible = ? WHERE queue = ? AND id = ?",
                                     [(now + visibility, queue, r[0]) for r in rows])
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return [(r[0], r[1], r[2] + 1, r[3]) for r in rows]

    def delete(self, queue: str, ids: list[str]) -> None:
        """Remove delivered messages."""
        with self._lock:
            self._db.executemany("DELETE FROM messages WHERE queue = ? AND id = ?", [(queue, i) for i in ids])

    def dead_letter(self, queue: str, ids: list[str]) -> None:
        """Move messages to `queue`'s dead-letter queue (kept, never delivered again)."""
        with self._lock:
            self._db.executemany("UPDATE messages SET dead = 1 WHERE queue = ? AND id = ?", [(queue, i) for i in ids])

    def counts(self, queue: str) -> tuple[int, int]:
        """(messages waiting or in flight, messages in the dead-letter queue) of `queue`."""
        with self._lock:
            rows = dict(self._db.execute("SELECT dead, COUNT(*) FROM messages WHERE queue = ? GROUP BY dead",
                                         (queue,)).fetchall())
        return rows.get(0, 0), rows.get(1, 0)

    def close(self) -> None:
        with self._lock:
            self._db.close()
