"""A ByTime window closes without its marker: the timer takes the first free slot as the
window's end but claims nothing, so an object that started its scan before the close claims
that slot afterwards, in a window that was already read (runtime/triggers/window.py).

Caught by the window search (tools/explorer/workflows/window.py, `window-time`), not by the
engine search: WORKFLOWS is empty and the module is not in ORDER (`make mutants` runs the
single-session engine search); tests/tools/test_explorer.py runs it."""

NAME = "window-close-without-marker"
ABOUT = "a ByTime timer reads the window's end instead of claiming a close marker (lost objects)"
WORKFLOWS: list[str] = []
WINDOW_WORKFLOWS = ["window-time"]
TESTS = ["tests/runtime/triggers/test_window.py"]
INVISIBLE = None


def apply(p):
    from runtime.triggers import window

    def make(orig):
        def close(ds, name, log, now, retention=None):
            sess = window.store_session(name)
            j = window.stored_int(ds, sess, "cur", "log") if log is None else log
            k = 0
            while (it := ds.get(sess, f"log/{j}/{k}")) is not None and not it.get("close"):
                k += 1
            ds.put(sess, "cur", {"log": j + 1}, window.NEVER)
            return (j, k) if k > 0 else None
        return close
    p.replace(window, "close", make)
