"""A set add is not idempotent: a duplicate's add (fan-in or GC set) counts twice."""

import threading

from . import PortProxy, wrap_engine_ports

NAME = "fanin-add-not-idempotent"
ABOUT = "set_add adds a fresh member for every call (duplicates count)"
WORKFLOWS = ["fanout", "map-glob"]
TESTS = ["tests/test_exactly_once.py", "tests/test_patterns.py"]
INVISIBLE = None


class Counting(PortProxy):
    def set_add(self, session, name, member, expires_at):
        # the calling thread names the execution (explorer: exec-<id>; elsewhere a thread id)
        return self._inner.set_add(session, name, f"{member}#{threading.current_thread().name}",
                                   expires_at)


def apply(p):
    wrap_engine_ports(p, ds=Counting)
