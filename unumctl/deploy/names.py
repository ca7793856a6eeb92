"""The deployed names every target shares; each cloud's own names live in its folder
(unumctl/<cloud>/names.py: docs/aws.md, docs/gcp.md).

Local: `unum.db` (SQLite) and `blobs/` in the state directory `<app>/.unum/local`.
The runtime's own fallbacks use the same rules (runtime/names.py).
"""

from __future__ import annotations

import hashlib

from runtime.names import store_name

__all__ = ["store_name", "short_hash", "LOCAL_DATASTORE", "LOCAL_BLOBS"]


def short_hash(text: str, n: int = 6) -> str:
    """The first `n` hex digits of sha256(`text`): the tail that keeps a shortened name
    distinct (every target shortens the same way)."""
    return hashlib.sha256(text.encode()).hexdigest()[:n]


LOCAL_DATASTORE = "unum.db"  # local: the SQLite datastore in the state directory
LOCAL_BLOBS = "blobs"         # local: the file blob store's directory beside it
