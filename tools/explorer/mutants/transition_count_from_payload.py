"""The transition count a continuation carries is the delivering execution's own payload
count + 1, even when it adopted a checkpoint committed by another execution (issue 22,
defect 2: what the engine on main did). The mutant rewrites the `Depth` of every message an
execution sends, so it applies whatever the engine computes."""

import threading

from runtime.engine import Engine

from . import PortProxy, wrap_engine_ports

NAME = "transition-count-from-payload"
ABOUT = "every continuation gets Depth = the delivering execution's payload Depth + 1"
WORKFLOWS = ["fanout-limit"]
TESTS = ["tests/runtime/test_engine_extras.py"]
INVISIBLE = None
# one duplicate is enough (of the longer branch, after the fan-in committed)
BOUNDS = {"dups": 1, "crashes": 0, "preemptions": 0, "expiries": 0}

_depth = threading.local()


class PayloadDepth(PortProxy):
    def invoke_many(self, calls, delay=0.0):
        d = getattr(_depth, "d", None)
        if d is not None:
            calls = [(fn, {**payload, "Depth": d + 1}) for fn, payload in calls]
        return self._inner.invoke_many(calls, delay=delay)


def apply(p):
    def make(orig):
        def handle(self, raw, *a, **k):
            _depth.d = int(raw.get("Depth", 0)) if isinstance(raw, dict) else None
            try:
                return orig(self, raw, *a, **k)
            finally:
                _depth.d = None
        return handle
    p.replace(Engine, "handle", make)
    wrap_engine_ports(p, invoker=PayloadDepth)
