"""A window add is not idempotent: an execution that finds its object already in a slot
(a duplicate delivery, a retry after a crash) takes the next free slot too, so the object
is counted twice (runtime/triggers/window.py `add`). The mutation wraps the datastore so
that a slot's stored object id never matches the adding execution's.

Caught by the window search (tools/explorer/workflows/window.py); not in ORDER (see
window_close_without_marker.py)."""

NAME = "window-add-not-idempotent"
ABOUT = "a duplicate execution of a window add claims a second slot (double count)"
WORKFLOWS: list[str] = []
WINDOW_WORKFLOWS = ["window-batch", "window-time"]
TESTS = ["tests/runtime/triggers/test_window.py"]
INVISIBLE = None


def apply(p):
    from runtime.triggers import window

    def make(orig):
        def add(ds, *args, **kw):
            class Blind:  # a slot's object id never matches: every execution claims its own
                def __getattr__(self, name):
                    return getattr(ds, name)

                def get(self, session, name):
                    return ds.get(session, name) if not name.startswith("start/") else None

                def create_if_absent(self, session, name, item, expires):
                    created, stored = ds.create_if_absent(session, name, item, expires)
                    if not created and "obj" in stored:
                        stored = {**stored, "obj": stored["obj"] + "#other"}
                    return created, stored
            return orig(Blind(), *args, **kw)
        return add
    p.replace(window, "add", make)
