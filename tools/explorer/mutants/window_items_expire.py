"""Window items expire with their producers' sessions and a window has no open bound (main
before issue 33 items 2 and 3; runtime/triggers/window.py `add`, `close`):

- item 2: after a quiet period longer than the producers' items live, TTL removes `cur`, the
  hints and the slots; a missing `cur` reads as window 0, and the next objects fire
  `win-<name>-0` again, whose consumer result still exists, so that firing is dropped and
  its objects are counted in no window;
- item 3: a ByBatchSize window slower than its first producer's items (8 days by default)
  loses slot 0, and its firing raises "slot 0 holds no object" on every attempt.

The mutation wraps the datastore `add` and `close` write through so that `cur`, the hints,
the slots and the close markers get the producer's item expiry (the timer's: its
`item_expiry(now)`) instead of the window's, and passes a retention whose `window_open` is
unbounded.

Caught by the window search (tools/explorer/workflows/window.py, `window-batch-quiet`,
`window-time-quiet`, `window-batch-slow`) and by tests/runtime/triggers/test_window.py; not in ORDER (see
window_close_without_marker.py)."""

NAME = "window-items-expire"
ABOUT = "window items expire with their producers' sessions, windows stay open unbounded (lost windows)"
WORKFLOWS: list[str] = []
WINDOW_WORKFLOWS = ["window-batch-quiet", "window-time-quiet", "window-batch-slow"]
TESTS = ["tests/runtime/triggers/test_window.py"]
INVISIBLE = None


class _Expiring:
    """The datastore, with every window item but `start/` written to expire at `expires_at`."""

    def __init__(self, ds, expires_at):
        self._ds, self._exp = ds, expires_at

    def __getattr__(self, name):
        return getattr(self._ds, name)

    def create_if_absent(self, session, name, item, expires_at):
        return self._ds.create_if_absent(session, name, item,
                                         expires_at if name.startswith("start/") else self._exp)

    def put(self, session, name, item, expires_at):
        return self._ds.put(session, name, item, self._exp)


def apply(p):
    import math

    from runtime.session import Retention
    from runtime.triggers import window

    class Unbounded(Retention):
        @property
        def window_open(self) -> float:
            return math.inf

    def unbounded(retention):
        r = retention or Retention()
        return Unbounded(r.session_timeout, r.result, r.margin)

    def make_add(orig):
        def add(ds, blobs, invoker, spec, obj, value, expires_at, *, now, retention=None):
            return orig(_Expiring(ds, expires_at), blobs, invoker, spec, obj, value, expires_at, now=now,
                        retention=unbounded(retention))
        return add

    def make_close(orig):
        def close(ds, name, log, now, retention=None):
            return orig(_Expiring(ds, (retention or Retention()).item_expiry(now)), name, log, now,
                        unbounded(retention))
        return close
    p.replace(window, "add", make_add)
    p.replace(window, "close", make_close)
