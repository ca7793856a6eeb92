"""Windows across sessions: Pheromone's ByBatchSize and ByTime triggers (seed 003 §III-B,
"conditional trigger primitives"; its event-stream example, §III-C and Fig. 4 right) on the
datastore port's atomic create (runtime/ports.py `create_if_absent`), for every target.

A function's edge `{Name: C, Type: Window, Window: w, ByBatchSize: N}` (or `ByTime: T`
seconds) puts the function's committed output into the window `w` ("the bucket"); the
window fires its consumer `C` every N objects, or T seconds after its first object, with
what arrived. Each firing is one session of `C` (`win-<w>-<id>`), its input the window's
objects in slot order, its `context.extra["Window"]` = {"Name", "Id", "Size"}.

Layout (all items in the datastore "session" `winstore-<w>`, docs/ir.md "Windows"):

- `log/<j>/<k>`: slot k of window j: an object {"obj": <object id>, "v"|"blob": value} or
  the close marker {"close": true} (ByTime). Created once with `create_if_absent`, never
  changed, so each window is an append-only log whose claimed slots are a prefix 0..m-1.
- `hint/<j>`: a lower bound of window j's first free slot (a `put`, may go stale or back).
- `cur`: a lower bound of the open window (a `put`).
- `start/<object id>`: where this object's scan starts ({"log", "slot"}), created once.

Exactly once (docs/ir.md has the argument): every execution of one object (a duplicate
delivery, a retry after a crash) scans from the same `start/` position along the same
immutable slots, and claims the first slot that is free or adopts the first that already
holds its object id: so an object holds exactly one slot. A window closes atomically with
one create: the slot N-1 (ByBatchSize) or the marker at the first free slot (ByTime);
a scanner that meets a full window or a marker moves on to the next window, so an object
arriving while a window closes, or after, lands in the next one. Firing is idempotent:
the consumer's session id is the window's, and its checkpoint deduplicates.

Window items are not deleted by the consumer (a late scanner must still find the slots
occupied); they carry the app's intermediate expiry and are removed by the store's TTL.
"""

from __future__ import annotations

from typing import Any, Callable

from ..errors import UnumError
from ..payload import Payload
from ..ports import BlobStore, Datastore, Invoker
from ..session import entry_payload
from ..storage import ValueStore
from .window_ir import NAME_RE, WINDOW_KEYS, WindowSpec, check_workflow, parse_edge  # noqa: F401

WINDOW_SOURCE = "window"        # Data.Source of a firing: {"Window": w, "Log": j, "Size": n}
TICK_SOURCE = "window-tick"     # Data.Source of a ByTime timer: {"Window": w, "Log": j | null}
CONTEXT_KEY = "Window"          # context.extra key the consumer finds its window in
_READ_CHUNK = 100


def store_session(name: str) -> str:
    """The datastore 'session' holding window `name`'s items."""
    return f"winstore-{name}"


def window_session(name: str, log: int) -> str:
    """The session id of the consumer's run for window `log` of `name`."""
    return f"win-{name}-{log}"


def slot_key(j: int, k: int) -> str:
    """The item of slot `k` of window `j` in the window's store session (`log/<j>/<k>`)."""
    return f"log/{j}/{k}"


def _get_int(ds: Datastore, sess: str, key: str, field: str) -> int:
    item = ds.get(sess, key)
    try:
        return max(0, int(item[field])) if item else 0
    except (KeyError, TypeError, ValueError):
        return 0


def add(ds: Datastore, blobs: BlobStore, invoker: Invoker, spec: WindowSpec, obj: str, value: Any,
        expires_at: float) -> tuple[int, int]:
    """Put object `obj` (a unique id: `<session>/<instance>` of the producer) with `value`
    into window `spec`, once whatever the number of executions; fire the consumer when this
    object fills a ByBatchSize window, arm the window's timer when it is the first object of
    a ByTime window (on a platform whose invoker supports `delay`; elsewhere the cloud
    scheduler ticks). Returns (window id, slot). Raises the adapters' errors (the platform
    retries the producer; every step is idempotent)."""
    sess = store_session(spec.name)
    start = ds.get(sess, f"start/{obj}")
    if start is None:
        j0 = _get_int(ds, sess, "cur", "log")
        k0 = _get_int(ds, sess, f"hint/{j0}", "slot")
        _, start = ds.create_if_absent(sess, f"start/{obj}", {"log": j0, "slot": k0}, expires_at)
    j, k = int(start["log"]), int(start["slot"])
    piece: dict[str, Any] | None = None
    while True:
        if spec.batch_size is not None and k >= spec.batch_size:
            j, k = j + 1, 0
            continue
        if piece is None:
            piece = ValueStore(ds, blobs).piece(sess, f"obj/{spec.name}", value)
        created, stored = ds.create_if_absent(sess, slot_key(j, k), {"obj": obj, **piece}, expires_at)
        if stored.get("close"):
            j, k = j + 1, 0
            continue
        if stored.get("obj") != obj:
            k += 1
            continue
        break
    if created:
        ds.put(sess, f"hint/{j}", {"slot": k + 1}, expires_at)
    elif "blob" in piece and stored.get("blob") != piece["blob"]:
        blobs.delete(sess, [piece["blob"]])  # a duplicate's value: the slot keeps the first
    if spec.batch_size is not None and k == spec.batch_size - 1:
        ds.put(sess, "cur", {"log": j + 1}, expires_at)
        invoker.invoke_many([(spec.consumer, fire_payload(spec.name, j, spec.batch_size))])
    elif spec.seconds is not None and k == 0 and getattr(invoker, "supports_delay", False):
        invoker.invoke_many([(spec.consumer, tick_payload(spec.name, j))], delay=spec.seconds)
    return j, k


def fire_payload(name: str, log: int, size: int) -> dict[str, Any]:
    """The wire payload that runs the consumer on window `log` of `name`, which holds `size`
    objects (the consumer reads exactly those slots)."""
    return Payload(window_session(name, log), WINDOW_SOURCE, {"Window": name, "Log": log, "Size": size}).encode()


def tick_payload(name: str, log: int | None) -> dict[str, Any]:
    """The wire payload of a ByTime timer: close window `log` (None: the open one, a cloud
    scheduler's tick) and fire. Its Session is the window's (the local platform files the
    delayed invocation under it), or the window store's for a scheduler's tick (the window is
    known only once closed); `resolve` replaces it."""
    session = window_session(name, log) if log is not None else store_session(name)
    return Payload(session, TICK_SOURCE, {"Window": name, "Log": log}).encode()


def close(ds: Datastore, name: str, log: int | None, expires_at: float) -> tuple[int, int] | None:
    """Close a ByTime window: `log`, or (None, a cloud scheduler's tick) the open window.
    Claims the close marker at the window's first free slot, so every object has a slot
    before it (this window) or after it (it moves to the next). Idempotent: a window holds
    at most one marker (scanners stop at the first). Returns (the window to fire, its
    number of objects), or None when it is empty (no firing)."""
    sess = store_session(name)
    j = _get_int(ds, sess, "cur", "log") if log is None else log
    k = _get_int(ds, sess, f"hint/{j}", "slot")
    while True:
        if log is None and k == 0 and ds.get(sess, slot_key(j, 0)) is None:
            return None  # the open window is empty: nothing to fire
        created, stored = ds.create_if_absent(sess, slot_key(j, k), {"close": True}, expires_at)
        if stored.get("close"):
            if created or log is not None:
                break
            j, k = j + 1, 0  # a scheduler tick met a closed window: close the next one
            continue
        k += 1
    ds.put(sess, "cur", {"log": j + 1}, expires_at)
    return (j, k) if k > 0 else None


def read(ds: Datastore, blobs: BlobStore, name: str, log: int, size: int) -> list[Any]:
    """The values of the `size` objects of window `log` (slots 0..size-1, all claimed before
    the window closed), in slot order; one item read per object, in chunks of 100 (DynamoDB
    BatchGetItem's most). Raises UnumError when a slot or a value's blob is gone (the
    window's items expired) or holds no object."""
    sess = store_session(name)
    values = ValueStore(ds, blobs)
    out: list[Any] = []
    for start in range(0, size, _READ_CHUNK):
        names = [slot_key(log, k) for k in range(start, min(size, start + _READ_CHUNK))]
        for k, it in enumerate(ds.get_many(sess, names), start):
            if it is None or "obj" not in it:
                raise UnumError(f"window {name!r} {log}: slot {k} holds no object (expired?)")
            try:
                out.append(values.load(sess, it))
            except KeyError:
                raise UnumError(f"window {name!r} {log}: slot {k} value is gone (expired?)") from None
    return out


def resolve(raw: dict[str, Any], ds: Datastore, blobs: BlobStore,
            expiry: Callable[[], float]) -> tuple[str, dict[str, Any] | None]:
    """Turn a firing or timer payload into (window name, the consumer's ordinary wire
    payload: its input the window's values, `Window` in its context), the payload None for
    a timer of an empty window.
    Raises UnumError for a malformed window payload."""
    data = raw.get("Data") or {}
    v = data.get("Value")
    if not isinstance(v, dict) or not isinstance(v.get("Window"), str) or not NAME_RE.fullmatch(v["Window"]):
        raise UnumError(f"window payload {str(v)[:100]!r}: expected {{'Window': <name>, 'Log': <int>}}")
    name, log, size = v["Window"], v.get("Log"), v.get("Size")
    for key, x in (("Log", log), ("Size", size)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
            raise UnumError(f"window payload: {key} {x!r} must be an int >= 0")
    if data.get("Source") == TICK_SOURCE:
        closed = close(ds, name, log, expiry())
        if closed is None:
            return name, None
        log, size = closed
    elif log is None or size is None:
        raise UnumError("window payload: a firing needs its Log and Size")
    values = read(ds, blobs, name, log, size)
    # the consumer's session starts here (runtime.session.entry_payload), with this delivery's
    # own fields kept and the window in its context
    extra = {k: x for k, x in raw.items() if k not in ("Version", "Session", "Data")}
    return name, entry_payload(window_session(name, log), values,
                               context={**extra, CONTEXT_KEY: {"Name": name, "Id": log, "Size": len(values)}})


def fired_event(resolved: dict[str, Any], t0: float) -> dict[str, Any]:
    """The history event of a firing (runtime.ports.Events, kind `fired`): `t0` when the
    consumer's ingress began, `detail` the window and its size, `window` = the consumer's
    `Window` context ({"Name", "Id", "Size"})."""
    w = resolved[CONTEXT_KEY]
    return {"kind": "fired", "t0": t0, "window": dict(w),
            "detail": f"window {w['Name']} {w['Id']} fired with {w['Size']} objects"}


def is_window_payload(raw: Any) -> bool:
    """True for a firing or timer payload (handled by `resolve` before the engine decodes)."""
    return (isinstance(raw, dict) and isinstance(raw.get("Data"), dict)
            and raw["Data"].get("Source") in (WINDOW_SOURCE, TICK_SOURCE))
