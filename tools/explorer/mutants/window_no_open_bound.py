"""A window has no open bound: an object that finds its window open for longer than
`Retention.window_open` joins it instead of closing it (runtime/triggers/window.py `add`),
so a slow ByBatchSize window keeps waiting until its items expire (`window_lifetime`) and
its objects are lost although a later object arrived in time to close and fire it (issue
33 item 3: the bound the fix documents). The mutation passes `add` a retention whose
`window_open` is unbounded; the items keep their lifetimes.

Caught by the window search (tools/explorer/workflows/window.py, `window-batch-long`) and
by tests/runtime/triggers/test_window.py; not in ORDER (see window_close_without_marker.py)."""

NAME = "window-no-open-bound"
ABOUT = "a window open past its bound is joined, not closed: its objects expire unfired"
WORKFLOWS: list[str] = []
WINDOW_WORKFLOWS = ["window-batch-long"]
TESTS = ["tests/runtime/triggers/test_window.py"]
INVISIBLE = None


def apply(p):
    import math

    from runtime.session import Retention
    from runtime.triggers import window

    class Unbounded(Retention):
        @property
        def window_open(self) -> float:
            return math.inf

        @property
        def window_lifetime(self) -> float:  # the items keep the lifetime of the fixed design
            return Retention(self.session_timeout, self.result, self.margin).window_lifetime

    def make(orig):
        def add(ds, blobs, invoker, spec, obj, value, expires_at, *, now, retention=None):
            r = retention or Retention()
            return orig(ds, blobs, invoker, spec, obj, value, expires_at, now=now,
                        retention=Unbounded(r.session_timeout, r.result, r.margin))
        return add
    p.replace(window, "add", make)
