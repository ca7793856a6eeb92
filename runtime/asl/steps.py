"""The states an execution of a compiled function walked or ran: its share of the history
in states (docs/observability.md "States of a Step Functions app").

A `StepLog` is filled by runtime.asl.machine.Machine while it interprets states, and the
wrapper (runtime.asl.wrapper) hands its `steps` to the engine, which records them as the
field `states` of the execution's event (runtime.ports.Events), at history level `full`
only. Each step is a dict:

| key | meaning |
|---|---|
| `state`, `type` | the state's name and ASL Type (Task, Pass, Choice, Wait, Succeed, Fail, Map, Parallel) |
| `scope` | where the state lives (runtime.asl.machine: "" top level, left out; "Map" a Map's iterator...) |
| `phase` | for Map/Parallel only: "start" (the fan-out: `items` branches) or "end" (the join) |
| `t` | when the state was entered (Unix seconds, to the ms) |
| `in`, `out` | the state's raw input and its output (JSON values up to MAX_VALUE_BYTES, else `{"omitted": true, "bytes": N}`); every step but a join (`phase` "end") has an `in`, left out when it equals the previous step's `out` (`expand` puts it back) |
| `next` | the next state, or absent at the end of the scope |
| `rule` | Choice: index of the rule that matched (0-based), or "Default" |
| `resource` | Task: the Lambda function called (FunctionName or Resource) |
| `error`, `cause` | a Task or Fail state's error (uncaught, or caught: then `next` is the catcher's) |

Source: the ASL spec's state types; what AWS records for them is the Step Functions API
reference, HistoryEvent (unumctl/serve/history.py maps steps to those events).
"""

from __future__ import annotations

import json
import threading
from typing import Any

MAX_VALUE_BYTES = 1024  # a state's input or output inline up to this size (compact JSON bytes)
_JSON = json.JSONEncoder(separators=(",", ":"), default=str).encode


def small(value: Any) -> Any:
    """`value` itself when its compact JSON is at most MAX_VALUE_BYTES, else
    {"omitted": True, "bytes": N}."""
    try:
        text = _JSON(value)
    except (TypeError, ValueError, RecursionError):
        return {"omitted": True, "bytes": None}
    return value if len(text.encode()) <= MAX_VALUE_BYTES else {"omitted": True, "bytes": len(text.encode())}


class StepLog:
    """An append-only list of steps (thread-safe: inline Map branches may run on threads).

    `clock()` returns Unix seconds (the machine's clock, virtual under the virtual clock)."""

    def __init__(self, clock):
        self.clock = clock
        self.steps: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def add(self, state: str, type_: str, scope: str, t: float, **fields: Any) -> dict[str, Any]:
        """Append one step; `in`/`out` values pass through `small`; None fields are left
        out. Returns the step (the caller may add `out`/`next` later with `finish`)."""
        step: dict[str, Any] = {"state": state, "type": type_, "t": round(t, 3)}
        if scope:
            step["scope"] = scope
        for k, v in fields.items():
            if v is None:
                continue
            step[k] = small(v) if k in ("in", "out") else v
        with self._lock:
            prev = self.steps[-1] if self.steps else None
            if prev is not None and "in" in step and "out" in prev and prev["out"] == step["in"]:
                del step["in"]  # expand() puts it back
            self.steps.append(step)
        return step

    @staticmethod
    def finish(step: dict[str, Any], **fields: Any) -> None:
        """Add `out`, `next`, `rule`, `error`... to a step added earlier (None left out)."""
        for k, v in fields.items():
            if v is not None:
                step[k] = small(v) if k in ("in", "out") else v


def expand(steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Copies of `steps` with each `in` left out as equal to the previous step's `out` put
    back (the reader's side of StepLog.add)."""
    out: list[dict[str, Any]] = []
    for s in steps if isinstance(steps, list) else []:
        if not isinstance(s, dict):
            continue
        s = dict(s)
        if "in" not in s and s.get("phase") != "end" and out and "out" in out[-1]:
            s["in"] = out[-1]["out"]
        out.append(s)
    return out
