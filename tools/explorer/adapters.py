"""The one place that builds the runtime's objects the explorer consumes.

Only the engine's public API is used: `Engine(ir, handler, datastore, invoker, blobs,
options, faults=, clock=, sleep=, wrapper=)`, `Engine.handle(raw) -> Outcome`, `Options`,
runtime.wrappers.make_wrapper. If the engine's constructor changes, fix it here.
"""

from __future__ import annotations

from typing import Any, Callable

from runtime.engine import Engine, Options
from runtime.ir import FunctionIR


def make_options(gc: str = "safe", checkpoint: bool = True, **extra) -> Options:
    """Runtime options (manifest `runtime:` section) for a workflow; `extra`: further
    fields of Options (e.g. max_transitions, session_timeout_seconds)."""
    return Options.from_mapping({"checkpoint": checkpoint, "gc": gc, **extra})


def make_wrapper(ir: FunctionIR):
    """A fresh IR `Wrapper` (e.g. compiled ASL) for one execution, or None."""
    if ir.wrapper is None:
        return None
    from runtime.wrappers import make_wrapper as build
    return build(ir.wrapper)


def make_engine(ir: FunctionIR, handler: Callable[[Any, Any], Any], datastore, invoker, blobs,
                options: Options, clock: Callable[[], float], wrapper=None, watchdog=None) -> Engine:
    """A fresh Engine for one execution (an engine keeps per-execution state, so every
    execution gets its own, like a container that serves one request at a time). Sleeps
    (Retry intervals) take no time. `watchdog`: the platform's per-attempt timer
    (`arm(seconds, session, key, outcome, expires_at)` / `disarm()`), set as the Engine's
    public `watchdog` attribute, as runtime/local/entry.py does."""
    engine = Engine(ir, handler, datastore, invoker, blobs, options, clock=clock,
                    sleep=lambda s: None, wrapper=wrapper)
    engine.watchdog = watchdog
    return engine


def handle(engine: Engine, raw: dict[str, Any]):
    """Run one execution: `Engine.handle(raw) -> Outcome`."""
    return engine.handle(raw)
