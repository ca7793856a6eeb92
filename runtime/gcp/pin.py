"""The version a session is pinned to on the gcp target (docs/versions.md "On GCP").

Each version of a deployment is its own set of functions and topics (`<topic prefix of the
version>` + function, UNUM_TOPIC_PREFIX), so every invocation a function publishes stays on
the version that function belongs to: a session is pinned by the version of the entry
function that starts it. That entry function records the pin as the session's item
PIN_ITEM = {"version": <id>} (created once, never overwritten), which is what `unumctl
versions --cloud gcp` counts and what keeps an old version from being collected while one
of its sessions can still run. The item goes with the session's other items when it is
swept.
"""

from __future__ import annotations

from ..ports import Datastore

__all__ = ["PIN_ITEM", "pin"]

PIN_ITEM = "unum/version"


def pin(ds: Datastore, session: str, version: str, expires_at: float) -> None:
    """Record that `session` runs on `version` (a create-if-absent: the first pin stays; a
    redelivery or a loop back to the entry function writes nothing new). `expires_at`: Unix
    s, the session's item expiry (a session that never ends keeps its version until then)."""
    ds.create_if_absent(session, PIN_ITEM, {"version": version}, expires_at)
