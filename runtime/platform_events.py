"""History events that a platform, not the engine, reports about a delivery: a retry, a
timeout, a give-up, a duplicate (runtime.ports.Events; docs/observability.md). One builder for
the AWS error handler, the GCP entry's give-up path and the local platform."""

from __future__ import annotations

import time
from typing import Any

from .payload import Payload, frames_name
from .ports import Events, emit_safely

__all__ = ["platform_event", "record_platform_event"]


PLATFORM_EVENT_KINDS = ("retried", "redelivered", "timed_out", "out_of_memory", "gave_up", "duplicated")


def platform_event(kind: str, function: str, payload: Any, attempt: int | None, detail: str,
                   error: str | None = None, request_id: str | None = None,
                   t: float | None = None) -> dict[str, Any] | None:
    """An execution event (see `Events`) that the platform, not the engine, reports about a
    delivery of `payload` (a wire payload, runtime/payload.py) to `function`: a retry, a
    timeout, a give-up, a duplicate. `t`: Unix seconds (default now); `detail` is cut to
    2,000 characters. The instance is named from the payload's fan-out frames and iteration,
    or is `function` for a payload that does not decode. Returns None when the payload has
    no string `Session` (nothing to attach the event to). Used by every target's platform
    side: the AWS error handler, the GCP entry's give-up path, the local platform."""
    session = payload.get("Session") if isinstance(payload, dict) else None
    if not isinstance(session, str):
        return None
    try:
        p = Payload.decode(payload, new_session=lambda: session)
        inst = frames_name(function, p.frames, p.iteration)
    except Exception:  # noqa: BLE001  (a malformed payload: no instance name)
        inst = function
    t = time.time() if t is None else t
    return {"session": session, "kind": kind, "instance": inst, "function": function, "attempt": attempt,
            "t0": t, "t1": t, "detail": detail[:2000], "error": error, "request_id": request_id}


def record_platform_event(events: Events | None, kind: str, function: str, payload: Any,
                          attempt: int | None, detail: str, error: str | None = None,
                          request_id: str | None = None, t: float | None = None, log=None) -> None:
    """Record `platform_event(...)` in `events` when its level is "full" (platform events are
    execution events); never raises (`emit_safely`, `log(msg)` told of a failed write)."""
    if events is None or events.level != "full":
        return
    event = platform_event(kind, function, payload, attempt, detail, error, request_id, t)
    if event is not None:
        emit_safely(events.record, [event], log=log)
