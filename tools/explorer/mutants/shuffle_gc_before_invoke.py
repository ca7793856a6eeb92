"""A completed shuffle stage collects the producers' checkpoints (and its set) before it
invokes the consumers: a crash between the two leaves a stage whose redelivered completer
finds a producer collected and stops, so no consumer is ever invoked (issue 33)."""

import threading

import runtime.triggers.shuffle

from . import PortProxy, wrap_engine_ports

NAME = "shuffle-gc-before-invoke"
ABOUT = "the shuffle stage's completer collects the producers' checkpoints before invoking the consumers"
WORKFLOWS = ["shuffle", "shuffle-side"]
BOUNDS = {"dups": 0, "crashes": 1, "preemptions": 0}
TESTS = ["tests/runtime/triggers/test_shuffle.py"]
INVISIBLE = None

_held = threading.local()  # the invocations a stage's fire_stage holds back in this thread


class _Holding(PortProxy):
    """The engine's invoker: while this thread runs a stage's fire_stage, invocations are held."""

    def invoke_many(self, calls, delay=0.0):
        buf = getattr(_held, "buf", None)
        if buf is not None:
            buf.append((list(calls), delay))
            return None
        return self._inner.invoke_many(calls, delay=delay)


def apply(p):
    wrap_engine_ports(p, invoker=_Holding)

    def make(orig):
        def fire_stage(engine, ex, call, context, depth):
            _held.buf = []
            try:
                n = orig(engine, ex, call, context, depth)  # plans, then collects: invokes held
            finally:
                buf, _held.buf = _held.buf, None
            for calls, delay in buf:
                engine.invoker.invoke_many(calls, delay=delay)
            return n
        return fire_stage
    p.replace(runtime.triggers.shuffle, "fire_stage", make)
