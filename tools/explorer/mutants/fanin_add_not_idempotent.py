"""A set add is not idempotent: a duplicate's add (fan-in or GC set) counts twice."""

import threading

from . import DatastoreProxy, wrap_engine_ports

NAME = "fanin-add-not-idempotent"
ABOUT = "set_add adds a fresh member for every call (duplicates count)"
WORKFLOWS = ["fanout", "map-glob"]
TESTS = ["tests/runtime/test_engine_commit_point.py", "tests/runtime/test_engine_patterns.py"]
INVISIBLE = None
# visible when the parent crashed between its two invoke batches: a duplicate branch's two
# adds to gc/<parent> collect it, and its redelivery drops without invoking the rest (hang)
BOUNDS = {"dups": 1, "crashes": 1, "preemptions": 0}
# That schedule needs five deviations from the default order and the search does not reach
# it within `make mutants`' budget, so it is replayed as a witness (found by hand: Start
# crashes after invoking Up only; Up is delivered twice and both executions add to
# gc/Start, which collects Start; Start's redelivery drops and Low never runs). Re-derived
# when the ingress became two ordered reads (a read's item-by-item parts `run X 1` are now
# the second read, `run X 0`).
WITNESS = ("fanout", [
    ["deliver", "r"], ["run", "r.0", 0], ["run", "r.0", 0], ["run", "r.0", 0], ["run", "r.0", 0],
    ["crash", "r.0"], ["dup", "r.0>0"], ["deliver", "r.0>0"], ["run", "r.0>0.0", 0],
    ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0], ["run", "r.0>0.0", 0],
    ["run", "r.0>0.0", 0], ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0],
    ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0], ["run", "r.0>0.1", 0],
    ["run", "r.0>0.1", 0], ["deliver", "r"], ["run", "r.1", 0], ["run", "r.1", 0]])


class Counting(DatastoreProxy):
    def set_add(self, session, name, member, expires_at):
        # the calling thread names the execution (explorer: exec-<id>; elsewhere a thread id)
        return self._inner.set_add(session, name, f"{member}#{threading.current_thread().name}",
                                   expires_at)


def apply(p):
    wrap_engine_ports(p, ds=Counting)
