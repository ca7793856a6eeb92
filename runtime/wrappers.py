"""Registry of IR `Wrapper` kinds: programs that run around the user code (for example a
compiled Amazon States Language Task with its input/output processing, Retry and Catch).

A wrapper factory takes the IR `Wrapper` mapping and returns a callable
`wrapper(call_user, value, ctx) -> (output, route)`; see runtime.engine.Engine.
"""

from __future__ import annotations

from typing import Any, Callable

from .errors import IRError

__all__ = ["make_wrapper"]

_FACTORIES: dict[str, Callable[[dict[str, Any]], Callable]] = {}
# Built-in kinds, imported on first use so that bundles without them import nothing extra.
_BUILTIN = {"asl": "asl.wrapper"}


def register(kind: str, factory: Callable[[dict[str, Any]], Callable]) -> None:
    """Register a wrapper factory under `kind`."""
    _FACTORIES[kind] = factory


def make_wrapper(spec: dict[str, Any]) -> Callable:
    """Build the wrapper for an IR `Wrapper` mapping; IRError when its Kind is unknown."""
    kind = spec.get("Kind")
    if kind not in _FACTORIES and kind in _BUILTIN:
        import importlib
        _FACTORIES[kind] = importlib.import_module(f"{__package__}.{_BUILTIN[kind]}").factory
    if kind not in _FACTORIES:
        raise IRError(f"Wrapper: unknown Kind {kind!r} (known: {', '.join(sorted(_FACTORIES)) or 'none'})")
    return _FACTORIES[kind](spec)
