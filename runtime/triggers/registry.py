"""The engine's triggers by kind (`runtime.plan.Call.trigger`): one instance of each, each
implementing runtime/triggers/base.py `Trigger`. The engine looks a call's trigger up here
and calls its `fire`; it names no trigger itself."""

from __future__ import annotations

from .base import Trigger
from .fanin import FanIn
from .quorum import Quorum
from .shuffle import ShuffleStage
from .window import WindowEdge

__all__ = ["TRIGGERS", "trigger_for"]

TRIGGERS: dict[str, Trigger] = {"fan-in": FanIn(), "quorum": Quorum(), "shuffle": ShuffleStage(),
                                "window": WindowEdge()}


def trigger_for(kind: str | None) -> Trigger | None:
    """The trigger of a call of kind `kind` (`Call.trigger`), None for a plain invocation."""
    return None if kind is None else TRIGGERS[kind]
