"""Data-centric triggers on fan-in edges (issue 26, after Pheromone's trigger primitives,
seed 003 §III-B): one module per trigger, each implementing the one interface the engine
calls (base.py `Trigger.fire`): fan-in (fanin.py), quorum, shuffle and window; the engine
finds a call's trigger in registry.py. window_ir.py is the IR side of windows (no engine).
This package's face imports nothing, so the IR can import window_ir and quorum's checks
without loading the other triggers."""

__all__: list[str] = []  # submodules only
