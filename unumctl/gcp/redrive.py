"""Redrive on the gcp target: reopening a session's history (runtime/redrive.py).

The GCP history writes a session's end once, as document `<session>|end` of the app's history
collection (runtime/gcp/history.py `end_id`, created first-wins); a redrive removes it with
`result`, so the redriven run's end is the one recorded and read (unumctl/gcp/history.py).
"""

from __future__ import annotations

from typing import Any

from runtime.gcp.history import end_id, history_collection
from runtime.payload import RESULT_KEY

__all__ = ["reopen"]


def reopen(ds: Any, session: str) -> None:
    """Delete `session`'s `result` from FirestoreDatastore `ds` and its end record from the
    history collection beside the datastore's collection."""
    ds.delete(session, [RESULT_KEY])
    ds.client.collection(history_collection(ds.coll.id)).document(end_id(session)).delete()
