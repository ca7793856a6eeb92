"""The cloud timers of ByTime windows (docs/ir.md "Windows across sessions"; issue 26 item 3).

On `local` and `serve` a window's timer is the platform's delayed invocation, armed by the
window's first object (runtime/triggers/window.py). On `aws` and `gcp` a scheduler ticks the
consumer every `ByTime` seconds with `runtime.triggers.window.tick_payload(name, None)`; the
consumer then closes the open window and fires it (an empty window fires nothing):

- AWS (unumctl/aws/timers.py): an EventBridge Scheduler schedule with a rate expression,
  invoking the consumer Lambda asynchronously through an execution role that may only
  `lambda:InvokeFunction` the consumers. A rate expression is `rate(value unit)`, value a
  positive integer, unit minute(s) | hour(s) | day(s), singular for 1
  (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-rate-expressions.html), and
  schedules run with 60 second precision
  (https://docs.aws.amazon.com/scheduler/latest/UserGuide/schedule-types.html): so ByTime
  must be a whole number of minutes, at least 60 s. The manifest's
  `clouds.<cloud>.window_seconds: {<window>: <seconds>}` sets a cloud's period instead of the
  IR's ByTime (the example keeps 1 s windows on local and ticks every 60 s on the clouds). The execution role is assumed by
  `scheduler.amazonaws.com` and needs `lambda:InvokeFunction` on the target
  (https://docs.aws.amazon.com/scheduler/latest/UserGuide/setting-up.html#setting-up-execution-role,
  https://docs.aws.amazon.com/lambda/latest/dg/with-eventbridge-scheduler.html).
- Other targets: their own timers module (unumctl/<cloud>/timers.py), built on
  `WindowTimer` and `_minutes` here.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass

from runtime.ir import Workflow
from runtime.triggers.window import tick_payload

from ..manifest import AppError

__all__ = ["WindowTimer", "window_timers"]

@dataclass(frozen=True)
class WindowTimer:
    """A ByTime window's timer: window `name`, its `consumer` function, every `seconds`,
    `where` the IR file and edge that declares it (for error messages)."""

    name: str
    consumer: str
    seconds: float
    where: str

    @property
    def input(self) -> str:
        """The tick's payload as JSON text (the schedule target's input)."""
        return json.dumps(tick_payload(self.name, None), sort_keys=True, separators=(",", ":"))

    @property
    def input_base64(self) -> str:
        """The tick's payload, base64 (a Pub/Sub message's `data`)."""
        return base64.b64encode(self.input.encode()).decode()


def window_timers(workflow: Workflow, overrides: dict[str, int] | None = None,
                  where: str = "window_seconds") -> list[WindowTimer]:
    """The ByTime windows of a workflow, one timer each, sorted by window name. `overrides`
    (the manifest's `clouds.<cloud>.window_seconds`, named `where` in errors): window ->
    seconds between the cloud scheduler's ticks instead of the IR's ByTime (an app can keep
    1 s windows on local and tick every minute on a cloud). ValueError (one line) for an
    override naming no ByTime window."""
    out: dict[str, WindowTimer] = {}
    for fn, node in sorted(workflow.functions.items()):
        for i, e in enumerate(node.next):
            w = e.window
            if w is not None and w.seconds is not None and w.name not in out:
                src = f"{workflow.sources.get(fn, fn)}: Next[{i}]"
                if w.name in (overrides or {}):
                    src = f"{where}.{w.name}"
                out[w.name] = WindowTimer(w.name, w.consumer, float((overrides or {}).get(w.name, w.seconds)), src)
    unknown = sorted(set(overrides or {}) - set(out))
    if unknown:
        raise AppError(f"{where}.{unknown[0]}: no ByTime window {unknown[0]!r} in this app "
                       f"(its ByTime windows: {', '.join(sorted(out)) or 'none'})")
    return [out[k] for k in sorted(out)]


def _minutes(t: WindowTimer, cloud: str) -> int:
    """`t`'s period in whole minutes; ValueError (one line naming `cloud`) when it is none."""
    if t.seconds < 60 or t.seconds % 60:
        raise ValueError(f"{t.where}: ByTime: {t.seconds:g} s is not possible on {cloud}: its scheduler "
                         f"ticks at most once a minute, so use a whole number of minutes (e.g. ByTime: 60), "
                         "or deploy with --cloud local (docs/ir.md)")
    return int(t.seconds // 60)


