"""The states an execution of a compiled function walked or ran: its share of the history
in states (docs/observability.md "States of a Step Functions app").

A `StepLog` is filled by runtime.asl.machine.Machine while it interprets states, and the
wrapper (runtime.asl.wrapper) hands its `steps` to the engine, which records them as the
field `states` of the execution's event (runtime.ports.Events), at history level `full`
only. Each step is a dict:

| key | meaning |
|---|---|
| `state`, `type` | the state's name and ASL Type (Task, Pass, Choice, Wait, Succeed, Fail, Map, Parallel) |
| `scope` | where the state lives (runtime.asl.machine: "" the top level, "/M" Map M's iterator...); in the record, left out when it is the previous step's (the first step's: "") |
| `phase` | for Map/Parallel only: "start" (the fan-out: `items` branches) or "end" (the join) |
| `t` | when the state was entered (Unix seconds, to the ms); in the record, `ms`: milliseconds since the event's `t0` |
| `in`, `out` | the state's raw input and its output (JSON values up to MAX_VALUE_BYTES, else `{"omitted": true, "bytes": N}`); in the record (`compact`), the first step's `in` is left out when it is the execution's input (or the `AslInput` of its input envelope), each other `in` when it equals the previous step's `out`, and the last step's `out` when it is the execution's output (or its envelope's `AslInput`); `expand` puts them back |
| `next` | the next state, or absent at the end of the scope |
| `rule` | Choice: index of the rule that matched (0-based), or "Default" |
| `resource` | Task: the Lambda function called (FunctionName or Resource) |
| `params` | Task: the resolved Parameters / Arguments of its last attempt (what the resource was called with; `small`), absent when they equal `in` |
| `at` | Task: when its last attempt began (Unix seconds; kept absolute in the record) |
| `retries` | Task: each attempt a retrier retried, in order: {"at": began, "end": failed, "error", "cause"[, "params"]} (Unix seconds) |
| `maprun` | a Distributed Map's Map Run: at the start {"arn"}; at the end {"arn", "items", "succeeded", "failed", "count", "percentage", "concurrency"} (the tolerated failure thresholds, null when not given; MaxConcurrency, 0 unlimited) |
| `error`, `cause` | a Task or Fail state's error: uncaught (with its `cause`), or caught (`caught`: true, the error name only; `next` is the catcher's) |

Source: the ASL spec's state types; what AWS records for them is the Step Functions API
reference, HistoryEvent (unumctl/serve/history.py maps steps to those events).
"""

from __future__ import annotations

import json
import threading
from typing import Any

__all__ = ["MAX_VALUE_BYTES", "StepLog", "expand"]

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
            self.steps.append(step)
        return step

    def compact(self, rec: dict[str, Any]) -> list[dict[str, Any]]:
        """The steps as recorded with the execution event `rec` (its `input` and `output`,
        when present, are those `expand` reads): values that `expand` derives left out."""
        out: list[dict[str, Any]] = []
        scope = ""
        with self._lock:
            steps = [dict(s) for s in self.steps]
        for k, s in enumerate(steps):
            if "in" in s and s.get("phase") != "end":
                prev = steps[k - 1] if k else None
                if prev is not None and "out" in prev and prev["out"] == s["in"]:
                    del s["in"]
                elif prev is None and "input" in rec and _inner(rec["input"]) == s["in"]:
                    del s["in"]
            if k == len(steps) - 1 and "out" in s and "output" in rec and _inner(rec["output"]) == s["out"]:
                del s["out"]
            if "retries" not in s:  # the last attempt began when the state was entered
                s.pop("at", None)
            if isinstance(rec.get("t0"), (int, float)):
                s["ms"] = round((s.pop("t") - rec["t0"]) * 1000)
            here = s.pop("scope", "")
            if here != scope:
                s["scope"] = here
                scope = here
            out.append(s)
        return out

    @staticmethod
    def retried(step: dict[str, Any], error: str | None, cause: str | None, t: float) -> None:
        """Record on Task `step` that its attempt begun at `step["at"]` failed with `error`
        at `t` and is retried (the cause cut to MAX_VALUE_BYTES characters; the attempt's
        `params` kept with it)."""
        retry = {"at": step.get("at", step.get("t")), "end": round(t, 3), "error": error,
                 "cause": cause[:MAX_VALUE_BYTES] if isinstance(cause, str) else cause}
        if "params" in step:  # that attempt's resolved Parameters
            retry["params"] = step["params"]
        step.setdefault("retries", []).append(retry)

    @staticmethod
    def finish(step: dict[str, Any], **fields: Any) -> None:
        """Add `out`, `next`, `rule`, `error`, `result` (a Task's resource response, when it
        differs from `out`)... to a step added earlier (None left out)."""
        for k, v in fields.items():
            if v is not None:
                step[k] = small(v) if k in ("in", "out", "result") else v


_MISSING = object()


def _inner(value: Any) -> Any:
    """The state input inside an inter-function envelope (runtime.asl.wrapper), else `value`."""
    if isinstance(value, dict) and "AslState" in value and "AslInput" in value:
        return value["AslInput"]
    return value


def expand(steps: Any, input: Any = _MISSING, output: Any = _MISSING,
           t0: float | None = None) -> list[dict[str, Any]]:
    """The steps of an execution event as StepLog.compact recorded them, with what it left
    out put back: `t` from `ms` and the event's `t0`, `scope` on every step ("" the top level), `in` from the previous step's
    `out` or, on the first step, the event's `input`; the last step's `out` from the event's
    `output` (leave `input`/`output` out when the event has none)."""
    out: list[dict[str, Any]] = []
    scope = ""
    items = [s for s in steps if isinstance(s, dict)] if isinstance(steps, list) else []
    for k, s in enumerate(items):
        s = dict(s)
        if "ms" in s and isinstance(t0, (int, float)) and isinstance(s["ms"], (int, float)):
            s["t"] = round(t0 + s.pop("ms") / 1000, 3)
        scope = s.get("scope", scope)
        s["scope"] = scope
        if "in" not in s and s.get("phase") != "end":
            if out and "out" in out[-1]:
                s["in"] = out[-1]["out"]
            elif not out and input is not _MISSING:
                s["in"] = _inner(input)
        if k == len(items) - 1 and "out" not in s and ("error" not in s or s.get("caught")) \
                and s.get("phase") != "start" \
                and output is not _MISSING:
            s["out"] = _inner(output)
        out.append(s)
    return out
