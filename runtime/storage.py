"""Values in datastore items: inline, or in the blob store under a content-addressed key.

Source: docs/architecture.md §3 ("Data size" and the commit-point rule). A value too large for
an item goes to the blob store under `<prefix>/<sha256 of its JSON>`, so two executions that
computed different values never write the same key: whatever an execution writes before its
commit point is private to it, and the atomic create of the item that names the key is what
publishes it. Two executions that computed the same value write the same bytes to the same
key, which is harmless. A losing execution deletes its own blob unless the winner's item
names the same key (`Stored.orphans`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Callable

from .ports import BlobStore, Datastore

__all__ = ["ValueStore", "blob_key", "canonical_json", "compact_json", "encode", "item_blobs", "json_copy"]


# one encoder per form, shared by every call (json.dumps given options builds a new one per call)
_CANONICAL = json.JSONEncoder(separators=(",", ":"), allow_nan=False)
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def canonical_json(value: Any) -> str:
    """The canonical JSON text of a value (compact separators, no NaN). Raises TypeError
    (not JSON-serializable) or ValueError (NaN or infinity)."""
    return _CANONICAL.encode(value)


def encode(value: Any) -> bytes:
    """The canonical JSON bytes of a value (see canonical_json; same errors)."""
    return _CANONICAL.encode(value).encode()


def compact_json(value: Any) -> str:
    """The compact JSON text of a value, as `json.dumps(value, separators=(",", ":"))` (NaN
    allowed, as Python's json writes it). Raises TypeError when not JSON-serializable."""
    return _COMPACT.encode(value)


def json_copy(value: Any) -> Any:
    """A deep copy of a JSON value (dicts and lists new, key order kept, NaN allowed), as a
    consumer decoding the value from a payload or a checkpoint would get it: what the engine
    hands user code, so that a handler that changes its input in place changes nothing the
    engine or a wrapper reads after it (docs/protocol.md "One execution"). Through the C JSON
    codec; a value nested deeper than it recurses, or one holding non-JSON objects (a unit
    test's), is copied by a loop without recursion (other objects are shared)."""
    try:
        return json.loads(_COMPACT.encode(value))
    except (RecursionError, TypeError, ValueError):
        pass
    root: list[Any] = [None]
    todo: list[tuple[Any, Any, Any]] = [(root, 0, value)]
    while todo:
        parent, key, v = todo.pop()
        if isinstance(v, dict):
            new: Any = dict.fromkeys(v)  # the keys in order now, their values below
            todo.extend((new, k, x) for k, x in v.items())
            parent[key] = new
        elif isinstance(v, (list, tuple)):
            new = [None] * len(v)
            todo.extend((new, i, x) for i, x in enumerate(v))
            parent[key] = new
        else:
            parent[key] = v
    return root[0]


def blob_key(prefix: str, data: bytes) -> str:
    """Content-addressed blob key `<prefix>/<first 32 hex digits of sha256(data)>`."""
    return f"{prefix}/{hashlib.sha256(data).hexdigest()[:32]}"


@dataclass
class ValueStore:
    """Puts values into item fields and reads them back.

    `inline_limit`: largest encoded value (bytes) kept inline in an item; bigger ones go to
    `blobs`. `written` lists the blob keys this object has written (an execution's own
    writes, for cleanup by a loser or after a late write)."""

    ds: Datastore
    blobs: BlobStore
    written: list[str] = field(default_factory=list)
    # called before every blob put (the engine records that the session has blobs there:
    # runtime.session.BLOBS_MARKER, so that ending a session lists the blob store only then)
    before_put: Callable[[], None] | None = None

    @property
    def inline_limit(self) -> int:
        # several values may share one item (a checkpoint's value and the context it
        # publishes), so each stays well below the item limit
        fits = max(1024, (self.ds.max_item_bytes - 4096) // 3)
        cheaper = getattr(self.ds, "inline_value_bytes", None)
        return fits if cheaper is None else max(1024, min(fits, cheaper))

    def piece(self, session: str, prefix: str, value: Any) -> dict[str, Any]:
        """{"v": value} or {"blob": key} (the blob written under a content-addressed key)."""
        data = encode(value)
        limit = self.inline_limit
        if len(data) <= limit or self.ds.stored_bytes(data) <= limit:
            return {"v": value}
        return {"blob": self.put(session, blob_key(prefix, data), data)}

    def put(self, session: str, key: str, data: bytes) -> str:
        """Write blob `key` (after `before_put`); returns its reference, noted in `written`."""
        if self.before_put is not None:
            self.before_put()
        ref = self.blobs.put(session, key, data)
        self.written.append(ref)
        return ref

    def load(self, session: str, piece: dict[str, Any]) -> Any:
        """The value of a piece (inline or blob). Raises KeyError when its blob is gone."""
        if "blob" in piece:
            return json.loads(self.blobs.get(session, piece["blob"]))
        return piece.get("v")


def item_blobs(item: dict[str, Any] | None, published: bool = True) -> list[str]:
    """Every blob key an item names: its own value's and (with `published`) those of the
    pieces it publishes, which belong to the published items once they are created."""
    if not item:
        return []
    out = [item["blob"]] if "blob" in item else []
    if not published:
        return out
    for piece in (item.get("pub") or {}).values():
        if isinstance(piece, dict) and "blob" in piece:
            out.append(piece["blob"])
    return out
