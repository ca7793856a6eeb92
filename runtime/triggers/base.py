"""The one interface of the triggers: what the engine calls for a planned call whose edge
coordinates through the datastore before (or instead of) an invocation.

`Engine._continue` (runtime/engine.py) runs, after the commit, every call of the committed
plan (runtime/plan.py `Call`). A call with `Call.trigger` set (`fan-in`, `quorum`,
`shuffle`, `window`) goes to that trigger's `fire`; any other call is one invocation the
engine sends itself. A trigger reads and writes only through the engine's ports and the
committed item `own`, so every execution of an invocation (the winner, a duplicate that
adopted its checkpoint) makes the same writes and fires the same invocations (the
commit-point rule, docs/protocol.md; the datastore operations of each trigger: docs/sets.md).

`engine` is the runtime.engine.Engine that runs the execution `ex` (typed Any here: the
engine lies above the triggers, docs/architecture.md §1); a trigger may use its ports
(`ds`, `blobs`, `invoker`), `options`, `retention`, `clock`, `faults`, `planner`, `_obs`
(the history record), and its GC-marker helpers `_expiry`, `_consumed` and `_record_done`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Fired", "Trigger"]


@dataclass
class Fired:
    """What one trigger's `fire` did: `calls`, the invocations `(function, wire payload)` the
    engine sends with the rest of its batch (half, the `mid_invoke` fault point, the other
    half), and `invoked`, the number of invocations the trigger sent itself (a complete
    shuffle stage invokes its consumers before it collects its producers)."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    invoked: int = 0


class Trigger(Protocol):
    """A trigger of the engine: fan-in (runtime/triggers/fanin.py), k-of-n quorum
    (quorum.py), shuffle stage (shuffle.py) or window (window.py)."""

    def fire(self, engine: Any, ex: Any, own: dict[str, Any], plan: Any, call: Any,
             context: dict[str, Any], depth: int) -> Fired:
        """Run the trigger for planned call `call` of the committed `plan` of execution `ex`
        (its committed checkpoint item `own`); `context` and `depth` are the committed context
        and transition count of `ex`, each child gets `depth + 1`. Returns what it fired."""
        ...
