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

Lifetimes (docs/ir.md "Windows across sessions", issue 33 items 2 and 3): a window's
identity never derives from an item that can expire, and every item lives at least as long
as what refers to it:

- `cur` never expires (`NEVER`) and is only raised (read before each put): window ids never
  restart, however long the store stays quiet. An object whose scan started behind the
  window it lands in raises `cur` to that window (a late closer's put that raced another
  may have left it behind).
- every slot, close marker and `hint/<j>` of window j carries the window's opening time `t`
  (its first object's clock) and expires at `t + Retention.window_lifetime`: the open bound,
  the consumer session's longest life and margin, and its result's lifetime, so the slots
  outlive the window's firing, its consumer's read and its consumer's result.
- a window stays open at most `Retention.window_open` (the result lifetime, 8 days by
  default): an object that finds its window open for longer closes it with a marker of its
  own (`{"close", "by": <object>}`) at the first free slot and fires it with what it holds
  (a ByBatchSize window then holds fewer than N objects; `Window.Size` says how many), then
  takes a slot in the next window. Objects waiting in a window that no object joins within
  `window_lifetime` are removed by the TTL with their window (the documented bound).
- `start/<object>` expires with the producer's session (only its executions read it).

Window items are not deleted by the consumer (a late scanner must still find the slots
occupied); the store's TTL removes them.
"""

from __future__ import annotations

from typing import Any

from ..errors import UnumError
from ..payload import Payload
from ..ports import BlobStore, Datastore, Invoker
from ..session import Retention, entry_payload
from ..storage import ValueStore
from .base import Fired
from .window_ir import NAME_RE, WINDOW_KEYS, WindowSpec, check_workflow, parse_edge  # noqa: F401

__all__ = ["NEVER", "TICK_SOURCE", "WindowSpec", "add", "fired_event", "is_window_payload", "opening_time",
           "resolve", "slot_key", "store_session", "stored_int", "tick_payload", "window_session",
           "WindowEdge"]

WINDOW_SOURCE = "window"        # Data.Source of a firing: {"Window": w, "Log": j, "Size": n}
TICK_SOURCE = "window-tick"     # Data.Source of a ByTime timer: {"Window": w, "Log": j | null}
CONTEXT_KEY = "Window"          # context.extra key the consumer finds its window in
_READ_CHUNK = 100
NEVER = 253402300799.0          # 9999-12-31T23:59:59Z: the expiry of `cur`, which never expires


def store_session(name: str) -> str:
    """The datastore 'session' holding window `name`'s items."""
    return f"winstore-{name}"


def window_session(name: str, log: int) -> str:
    """The session id of the consumer's run for window `log` of `name`."""
    return f"win-{name}-{log}"


def slot_key(j: int, k: int) -> str:
    """The item of slot `k` of window `j` in the window's store session (`log/<j>/<k>`)."""
    return f"log/{j}/{k}"


def _int(item: dict[str, Any] | None, field: str) -> int:
    try:
        return max(0, int(item[field])) if item else 0
    except (KeyError, TypeError, ValueError):
        return 0


def stored_int(ds: Datastore, sess: str, key: str, field: str) -> int:
    """The integer `field` of item `key` of session `sess` (0 when absent or not a count)."""
    return _int(ds.get(sess, key), field)


def opening_time(item: dict[str, Any] | None) -> float | None:
    """The window opening time an item carries (None: none, e.g. an item of an older release)."""
    try:
        return float(item["t"]) if item and item.get("t") is not None else None
    except (TypeError, ValueError):
        return None


def _opened(ds: Datastore, sess: str, j: int, now: float) -> float:
    """Window j's opening time, from its slot 0 (`now` when slot 0 carries none)."""
    t = opening_time(ds.get(sess, slot_key(j, 0)))
    return now if t is None else t


def _advance(ds: Datastore, sess: str, j: int) -> None:
    """Raise `cur` to `j`, never lower it (a late closer's put would move it back); `cur`
    never expires, so window ids never restart."""
    if stored_int(ds, sess, "cur", "log") < j:
        ds.put(sess, "cur", {"log": j}, NEVER)


def add(ds: Datastore, blobs: BlobStore, invoker: Invoker, spec: WindowSpec, obj: str, value: Any,
        expires_at: float, *, now: float, retention: Retention | None = None) -> tuple[int, int]:
    """Put object `obj` (a unique id: `<session>/<instance>` of the producer) with `value`
    into window `spec`, once whatever the number of executions; fire the consumer when this
    object fills a ByBatchSize window, arm the window's timer when it is the first object of
    a ByTime window (on a platform whose invoker supports `delay`; elsewhere the cloud
    scheduler ticks). `expires_at` (Unix seconds) is the producer session's item expiry (its
    `start/` record's); `now` (Unix seconds) the producer's clock; `retention` the app's
    (runtime.session.Retention: the window's open bound and item lifetime). A window open for
    longer than `retention.window_open` is closed by this object and fired with what it
    holds; the object goes to the next window. Returns (window id, slot). Raises the
    adapters' errors (the platform retries the producer; every step is idempotent)."""
    ret = retention or Retention()
    sess = store_session(spec.name)
    start = ds.get(sess, f"start/{obj}")
    if start is None:
        j0 = stored_int(ds, sess, "cur", "log")
        hint = ds.get(sess, f"hint/{j0}")
        k0, t0 = _int(hint, "slot"), opening_time(hint)
        rec: dict[str, Any] = {"log": j0, "slot": k0, **({"t": t0} if k0 > 0 and t0 is not None else {})}
        _, start = ds.create_if_absent(sess, f"start/{obj}", rec, expires_at)
    j, k = int(start["log"]), int(start["slot"])
    t = opening_time(start) if k > 0 else None  # window j's opening time, once known
    piece: dict[str, Any] | None = None
    while True:
        if spec.batch_size is not None and k >= spec.batch_size:
            j, k, t = j + 1, 0, None
            continue
        if k > 0 and t is None:
            t = _opened(ds, sess, j, now)
        opened = now if t is None else t
        item: dict[str, Any]
        if k > 0 and now >= opened + ret.window_open:  # open past its bound: close it here
            item = {"close": True, "by": obj, "t": opened}
        else:
            if piece is None:
                piece = ValueStore(ds, blobs).piece(sess, f"obj/{spec.name}", value)
            item = {"obj": obj, "t": opened, **piece}
        created, stored = ds.create_if_absent(sess, slot_key(j, k), item, opened + ret.window_lifetime)
        got = opening_time(stored)
        t = opened = opened if got is None else got
        if stored.get("close"):
            if stored.get("by") == obj:  # this object closed the window past its bound: fire it
                _advance(ds, sess, j + 1)
                invoker.invoke_many([(spec.consumer, fire_payload(spec.name, j, k))])
            j, k, t = j + 1, 0, None
            continue
        if stored.get("obj") != obj:
            k += 1
            continue
        break
    if created:
        ds.put(sess, f"hint/{j}", {"slot": k + 1, "t": opened}, opened + ret.window_lifetime)
    elif piece is not None and "blob" in piece and stored.get("blob") != piece["blob"]:
        blobs.delete(sess, [piece["blob"]])  # a duplicate's value: the slot keeps the first
    if spec.batch_size is not None and k == spec.batch_size - 1:
        _advance(ds, sess, j + 1)
        invoker.invoke_many([(spec.consumer, fire_payload(spec.name, j, spec.batch_size))])
    elif j > int(start["log"]):  # this object's scan started behind: raise `cur` to its window
        _advance(ds, sess, j)
    if spec.seconds is not None and k == 0 and getattr(invoker, "supports_delay", False):
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


def close(ds: Datastore, name: str, log: int | None, now: float,
          retention: Retention | None = None) -> tuple[int, int] | None:
    """Close a ByTime window: `log`, or (None, a cloud scheduler's tick) the open window.
    Claims the close marker at the window's first free slot, so every object has a slot
    before it (this window) or after it (it moves to the next). Idempotent: a window holds
    at most one marker (scanners stop at the first). `now` (Unix seconds): the timer's
    clock (the opening time of a window closed empty); `retention`: the app's (the
    marker expires with the window's items). Returns (the window to fire, its number of
    objects), or None when it is empty (no firing)."""
    ret = retention or Retention()
    sess = store_session(name)
    j = stored_int(ds, sess, "cur", "log") if log is None else log
    hint = ds.get(sess, f"hint/{j}")
    k = _int(hint, "slot")
    t = opening_time(hint) if k > 0 else None
    while True:
        if log is None and k == 0 and ds.get(sess, slot_key(j, 0)) is None:
            return None  # the open window is empty: nothing to fire
        if k > 0 and t is None:
            t = _opened(ds, sess, j, now)
        opened = now if t is None else t
        created, stored = ds.create_if_absent(sess, slot_key(j, k), {"close": True, "t": opened},
                                              opened + ret.window_lifetime)
        if stored.get("close"):
            if created or log is not None:
                break
            j, k, t = j + 1, 0, None  # a scheduler tick met a closed window: close the next one
            continue
        got = opening_time(stored)
        t = opened if got is None else got
        k += 1
    _advance(ds, sess, j + 1)
    return (j, k) if k > 0 else None


def read(ds: Datastore, blobs: BlobStore, name: str, log: int, size: int) -> list[Any]:
    """The values of the `size` objects of window `log` (slots 0..size-1, all claimed before
    the window closed), in slot order; one item read per object, in chunks of 100 (DynamoDB
    BatchGetItem's most). Raises UnumError when a slot or a value's blob is gone (the
    window's items expired: its firing came later than `Retention.window_lifetime` after
    its first object) or holds no object."""
    sess = store_session(name)
    values = ValueStore(ds, blobs)
    out: list[Any] = []
    for start in range(0, size, _READ_CHUNK):
        names = [slot_key(log, k) for k in range(start, min(size, start + _READ_CHUNK))]
        for k, it in enumerate(ds.get_many(sess, names), start):
            if it is None or "obj" not in it:
                raise UnumError(f"window {name!r} {log}: slot {k} holds no object: the window's items expired "
                                "before its firing was read (they live Retention.window_lifetime after the "
                                "window's first object; docs/ir.md \"Windows across sessions\")")
            try:
                out.append(values.load(sess, it))
            except KeyError:
                raise UnumError(f"window {name!r} {log}: slot {k} value is gone (expired?)") from None
    return out


def resolve(raw: dict[str, Any], ds: Datastore, blobs: BlobStore, now: float,
            retention: Retention | None = None) -> tuple[str, dict[str, Any] | None]:
    """Turn a firing or timer payload into (window name, the consumer's ordinary wire
    payload: its input the window's values, `Window` in its context), the payload None for
    a timer of an empty window. `now` (Unix seconds) and `retention` as for `close`.
    Raises UnumError for a malformed window payload or a window whose items expired."""
    data = raw.get("Data") or {}
    v = data.get("Value")
    if not isinstance(v, dict) or not isinstance(v.get("Window"), str) or not NAME_RE.fullmatch(v["Window"]):
        raise UnumError(f"window payload {str(v)[:100]!r}: expected {{'Window': <name>, 'Log': <int>}}")
    name, log, size = v["Window"], v.get("Log"), v.get("Size")
    for key, x in (("Log", log), ("Size", size)):
        if x is not None and (isinstance(x, bool) or not isinstance(x, int) or x < 0):
            raise UnumError(f"window payload: {key} {x!r} must be an int >= 0")
    if data.get("Source") == TICK_SOURCE:
        closed = close(ds, name, log, now, retention)
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


class WindowEdge:
    """The window trigger (runtime/triggers/base.py `Trigger`) of a `Type: Window` edge: the
    call's value goes into its window (`add`, looked up when called, so a mutant of
    tools/explorer/mutants that replaces it applies), as the object `<session>/<instance>`;
    the window fires its consumer itself, so this returns no invocation."""

    def fire(self, engine: Any, ex: Any, own: dict[str, Any], plan: Any, call: Any,
             context: dict[str, Any], depth: int) -> Fired:
        """Add the committed value to the window."""
        add(engine.ds, engine.blobs, engine.invoker, call.window, f"{ex.session}/{ex.instance}", call.value,
            engine._expiry(ex), now=engine.clock(), retention=engine.retention)
        return Fired()
