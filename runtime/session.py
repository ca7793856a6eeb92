"""The session contract: the `result` item, how a session ends, and item expiry.

Source: ARCHITECTURE.md §3 ("Failures", GC step 4) and docs/protocol.md. One place for what
every writer of a session's outcome (the engine, the AWS error handler, the GCP and local
give-up paths) must do:

- `result` is created with create-if-absent, so the first outcome wins and never changes;
  its value is inline (`v`) or in a content-addressed blob (`blob`);
- ending a session removes every item but `result` and every blob but the result's;
- items expire with the session's life (its start plus `session_timeout_seconds`, plus a
  margin), the result after `result_retention_seconds`, which must outlive the longest
  platform redelivery (Lambda async event age 6 h, Pub/Sub retention 7 days).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .payload import RESULT_KEY
from .ports import BlobStore, Datastore
from .storage import item_blobs

DAY = 86400.0
MAX_REDELIVERY_SECONDS = 7 * DAY  # Pub/Sub's longest message retention; Lambda's is 6 h
SESSION_CONTEXT = "UnumSession"   # inherited context field: {"Start": unix seconds}


@dataclass(frozen=True)
class Retention:
    """Expiry policy (seconds). `session_timeout`: longest a session may run; items of a
    live session expire `margin` after it; the result `result` seconds after it is written
    (at least MAX_REDELIVERY_SECONDS + margin, so a redelivery always finds it)."""

    session_timeout: float = 7 * DAY
    result: float = 8 * DAY
    margin: float = DAY

    def item_expiry(self, session_start: float) -> float:
        """Expiry of a session's intermediate items (Unix seconds)."""
        return session_start + self.session_timeout + self.margin

    def result_expiry(self, now: float) -> float:
        """Expiry of the result item written at `now`."""
        return now + self.result_lifetime

    @property
    def result_lifetime(self) -> float:
        return max(self.result, MAX_REDELIVERY_SECONDS + self.margin)

    @property
    def blob_expiry_days(self) -> int:
        """Age in days after which a bucket lifecycle rule may delete any blob: a blob lives
        at most as long as the live session that wrote it or the result that names it."""
        return max(1, math.ceil(max(self.result_lifetime, self.session_timeout + self.margin) / DAY))


def success_item(instance: str, piece: dict[str, Any]) -> dict[str, Any]:
    """The result of a session that ended at `instance` with value `piece` ({"v"} or {"blob"})."""
    return {"status": "SUCCEEDED", "instance": instance, **piece}


def failure_item(instance: str, error: str, cause: str, trace: list[str] | None = None) -> dict[str, Any]:
    """The result of a failed session (ASL-style Error and Cause; `trace` as Lambda reports it)."""
    item: dict[str, Any] = {"status": "FAILED", "instance": instance, "error": error,
                            "cause": str(cause)[:4000]}
    if trace:
        item["trace"] = list(trace)[-20:]
    return item


def finish(ds: Datastore, session: str, item: dict[str, Any], expires_at: float) -> dict[str, Any]:
    """Create `result` unless it exists; returns the stored (winning) result item."""
    _, stored = ds.create_if_absent(session, RESULT_KEY, item, expires_at)
    return stored


def end(ds: Datastore, blobs: BlobStore, session: str, result: dict[str, Any] | None) -> None:
    """Remove everything of the ended session but `result` and the blob it names."""
    ds.sweep(session, [RESULT_KEY])
    blobs.sweep(session, keep=tuple(item_blobs(result)))


def give_up(ds: Datastore, blobs: BlobStore, session: str, instance: str, error: str, cause: str,
            retention: Retention, now: float, sweep: bool = True) -> dict[str, Any]:
    """The platform gave up on an invocation after its delivery attempts (Lambda's
    on-failure destination, a Pub/Sub message past its give-up age, the local platform's
    retries): record the session as FAILED unless it already has a result, and end it
    (`sweep=False` with `runtime.gc: none`). Returns the stored result item."""
    result = finish(ds, session, failure_item(instance, error, cause), retention.result_expiry(now))
    if sweep:
        end(ds, blobs, session, result)
    return result


def read_result(ds: Datastore, blobs: BlobStore, session: str) -> dict[str, Any] | None:
    """The session's `result` item ({"status", "v"} or {"status", "error", "cause", ...}) with
    a blob-stored value loaded into "v" (its JSON decoded), or None while the session runs.
    A value whose blob is gone (expired) reads as "v": None. Used by every target and reader."""
    item = ds.get(session, RESULT_KEY)
    if item is not None and "blob" in item:
        item = dict(item)
        try:
            item["v"] = json.loads(blobs.get(session, item.pop("blob")))
        except KeyError:
            item["v"] = None
    return item
