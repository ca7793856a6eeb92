"""Redrive: re-run a FAILED session from the invocations that did not succeed.

Source: the Step Functions API reference, RedriveExecution
(docs.aws.amazon.com/step-functions/latest/apireference/API_RedriveExecution.html: "Restarts
unsuccessful executions ... in the last 14 days ... continues the failed execution from the
unsuccessful step and uses the same input ... preserves the results ... of the successful
steps, and doesn't rerun these steps"), and the developer guide's "Redriving executions"
(docs.aws.amazon.com/step-functions/latest/dg/redrive-executions.html: the redrivable period
of 14 days starts when the execution stops; the `redriveCount`, `redriveStatus`
REDRIVABLE / NOT_REDRIVABLE, `redriveDate` of DescribeExecution; the ExecutionRedriven
history event, API_ExecutionRedrivenEventDetails).

Opt-in per app (`runtime.redrive: true`, runtime.engine.Options.redrive): only then does a
failure keep the session's state. Without it a failure ends the session as it always did
(runtime.session.end sweeps everything but `result`), so nothing is left to redrive from.

With it (the engine's side, runtime/engine.py):
1. an execution that commits (or adopts) a failure (before it creates the FAILED `result`,
   so a redrive that follows the result finds it), or that finds the session FAILED at its
   ingress (a branch still in flight, or a committed invocation's redelivery), records its
   instance and wire payload in the session's frontier log (`note`): items `redrive/from/0`,
   `redrive/from/1`, ... each taken with a create-if-absent (the port has no listing and a
   set's members cannot be read back, so the log is an append-only sequence of slots read
   until the first absent one), and the session is not swept: checkpoints, fan-in sets and blobs stay (items
   live `REDRIVE_WINDOW` longer: `window_margin`);
2. the failed invocation's own checkpoint holds its committed failure (`ckpt/<instance>`
   with "error"), or, for a function with no edge, the failure is `result` itself.

Redrive (`redrive`, every target through unumctl.targets.Target.redrive, and serve's
RedriveExecution): check the status (`status`), claim redrive n+1 with a create-if-absent
(two concurrent redrives: one wins, the other gets ExecutionNotRedrivable), delete the
failed invocations' failure checkpoints, the frontier records and `result`, record the count
in item `redrive` (kept by runtime.session.end, so the ended session still reports it), and
re-invoke every frontier payload. A committed success is never deleted, so its user code
never runs again: a re-invoked committed invocation adopts its checkpoint and only
continues (runtime/engine.py ingress); the failed ones run their user code again with their
original input. The session's Start is not changed: a TIMED_OUT session would time out again,
so only FAILED sessions are redriven (TIMED_OUT and ABORTED are NOT_REDRIVABLE here).

Limits: a branch still in flight when the session failed records itself only when it next
runs (it finds `result`); a redrive made before that re-invokes the frontier it finds, and
such a branch, finding the session running again, continues by itself. Task attempt records
of Step Functions Tasks with timeouts or callbacks (runtime/asl/attempts.py) are not cleared,
so such a Task replays its recorded failed attempts; a session the platform gave up on
(runtime.session.give_up) is swept and NOT_REDRIVABLE.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .payload import DELIVERY_PREFIX, RESULT_KEY, checkpoint_key
from .ports import Datastore, Invoker
from .session import REDRIVE_RECORD, session_status

__all__ = ["FROM_PREFIX", "NOT_REDRIVABLE", "NotRedrivable", "REDRIVABLE", "REDRIVEN", "REDRIVE_WINDOW", "describe",
           "note", "redrive",
           "window_margin"]

REDRIVE_WINDOW = 14 * 86400.0  # seconds after the stop (Step Functions' redrivable period)
REDRIVE_KEY = REDRIVE_RECORD            # {"count", "dates": [...]}: kept with `result`
FROM_PREFIX = "redrive/from/"           # + slot k: {"instance", "function", "wire", "failed", "at"}
MAX_FRONTIER = 10_000                   # slots probed (a fan-out's branches in flight at the failure)
CLAIM_PREFIX = "redrive/claim/"         # + n: the claim of redrive n (create-if-absent)
REDRIVEN = DELIVERY_PREFIX + "Redriven"  # delivery field: this delivery starts redrive n
NOT_REDRIVABLE = "ExecutionNotRedrivable"

REDRIVABLE, NOT = "REDRIVABLE", "NOT_REDRIVABLE"


class NotRedrivable(Exception):
    """The session cannot be redriven; the message starts with Step Functions' error name
    (`ExecutionNotRedrivable: ...`) and says why in one line."""


@dataclass(frozen=True)
class Status:
    """DescribeExecution's redrive members: `status` REDRIVABLE or NOT_REDRIVABLE, `reason`
    (redriveStatusReason, None when redrivable), `count` (redriveCount), `date` (redriveDate,
    Unix seconds of the last redrive, or None)."""

    status: str
    reason: str | None
    count: int
    date: float | None


def window_margin(margin: float) -> float:
    """The item margin (runtime.session.Retention.margin, seconds) of an app with redrive on:
    at least REDRIVE_WINDOW, so a failed session's items outlive its redrivable period (a
    session stops at most `session_timeout` after its start)."""
    return max(float(margin), REDRIVE_WINDOW)


def slot_key(k: int) -> str:
    return f"{FROM_PREFIX}{k}"


def note(ds: Datastore, session: str, instance: str, function: str, wire: dict[str, Any],
         failed: bool, now: float, expires_at: float) -> None:
    """Record in the frontier log that invocation `instance` of `function` (wire payload
    `wire`; delivery fields are dropped) must be re-invoked by a redrive of `session`: its
    failure was committed (`failed`) or it found the session FAILED. Takes the first free
    slot with create-if-absent; idempotent (a slot already holding `instance` ends it)."""
    wire = {k: v for k, v in wire.items() if not k.startswith(DELIVERY_PREFIX)}
    item = {"instance": instance, "function": function, "wire": wire, "failed": failed, "at": now}
    for k in range(MAX_FRONTIER):
        created, stored = ds.create_if_absent(session, slot_key(k), item, expires_at)
        if created or stored.get("instance") == instance:
            return


def frontier(ds: Datastore, session: str) -> list[dict[str, Any]]:
    """The frontier log of `session`, slot 0 first (see `note`)."""
    out: list[dict[str, Any]] = []
    batch = 16
    while len(out) < MAX_FRONTIER:
        items = ds.get_many(session, [slot_key(k) for k in range(len(out), len(out) + batch)])
        for it in items:
            if it is None:
                return out
            out.append(it)
    return out


def record(ds: Datastore, session: str) -> dict[str, Any]:
    """The session's redrive record {"count": int, "dates": [Unix seconds]} (zero when never
    redriven)."""
    return ds.get(session, REDRIVE_KEY) or {"count": 0, "dates": []}


def status(result: dict[str, Any] | None, rec: dict[str, Any], stopped_at: float | None, now: float,
           frontier: bool) -> Status:
    """The redrive status of a session from its `result` item (None: running), its redrive
    record (`record`), its stop time (Unix s; None: unknown, then the window is not checked),
    `now` and whether a frontier was recorded (`frontier`: a failure under runtime.redrive)."""
    count, dates = int(rec.get("count", 0)), list(rec.get("dates") or [])
    date = dates[-1] if dates else None
    st = session_status(result)

    def no(reason: str) -> Status:
        return Status(NOT, reason, count, date)
    if st == "RUNNING":
        return no("Execution is RUNNING and cannot be redriven")
    if st == "SUCCEEDED":
        return no("Execution is SUCCEEDED and cannot be redriven")
    if st != "FAILED":
        return no(f"Execution is {st} and cannot be redriven here (only FAILED sessions are redriven)")
    if stopped_at is not None and now - stopped_at > REDRIVE_WINDOW:
        return no(f"Execution stopped {(now - stopped_at) / 86400:.1f} days ago, past the redrivable period of 14 days")
    if not frontier:
        return no("Execution kept no state to redrive from (set runtime.redrive: true in unumctl.yaml, "
                  "or the platform gave up on an invocation)")
    return Status(REDRIVABLE, None, count, date)


def describe(ds: Datastore, session: str, stopped_at: float | None, now: float) -> Status:
    """`status` of `session` read from the datastore (result, redrive record, the frontier
    log's first slot, whose `at` is the stop time unless `stopped_at` is given)."""
    result, rec, first = ds.get_many(session, [RESULT_KEY, REDRIVE_KEY, slot_key(0)])
    if stopped_at is None and first is not None and isinstance(first.get("at"), (int, float)):
        stopped_at = float(first["at"])
    return status(result, rec or {"count": 0, "dates": []}, stopped_at, now, first is not None)


def choose_version(function: str, wire: dict[str, Any]) -> dict[str, Any]:
    """The code version a redriven invocation runs, as the payload to send. On `local` and
    `serve` the payload goes as it was: the platform runs every invocation of a session on
    the version the session's record is pinned to (docs/versions.md), redriven ones included.
    On aws the address is chosen by the invoker: runtime/aws/invoker.py qualifies every
    invocation of a pinned session with its function's version (runtime/aws/pins.py), the
    redrive's included. The one place where a target that pins in the payload (a versioned
    topic on gcp: designed in docs/versions.md) would choose the session's version."""
    return wire


def redrive(ds: Datastore, invoker: Invoker, session: str, now: float, stopped_at: float | None = None,
            expires_at: float | None = None,
            reopen: Callable[[], None] | None = None) -> dict[str, Any]:
    """Redrive FAILED session `session`: see the module docstring. `now`: Unix seconds (the
    clock is injected); `stopped_at`: the session's stop time when the result does not say;
    `expires_at`: expiry of the redrive record (default: now + 2 * REDRIVE_WINDOW);
    `reopen`: removes `result` (and reopens the target's history record of the session),
    before any invocation; default: deletes item `result` (a datastore that keeps the
    result inside the session's history record, DynamoDB's, removes only its value). Returns {"redriveCount": n, "redriveDate": now,
    "invocations": [instance]}. Raises NotRedrivable (`ExecutionNotRedrivable: reason`)."""
    st = describe(ds, session, stopped_at, now)
    if st.status != REDRIVABLE:
        raise NotRedrivable(f"{NOT_REDRIVABLE}: {st.reason}")
    n = st.count + 1
    exp = expires_at if expires_at is not None else now + 2 * REDRIVE_WINDOW
    won, _ = ds.create_if_absent(session, f"{CLAIM_PREFIX}{n}", {"at": now}, exp)
    if not won:
        raise NotRedrivable(f"{NOT_REDRIVABLE}: redrive {n} of this execution is already under way")
    log = frontier(ds, session)
    calls: list[tuple[str, dict[str, Any]]] = []
    failed_ckpts: list[str] = []
    instances: list[str] = []
    for item in log:
        inst = str(item["instance"])
        if inst in instances:
            continue
        instances.append(inst)
        if item.get("failed"):
            failed_ckpts.append(checkpoint_key(inst))
        calls.append((str(item["function"]), choose_version(str(item["function"]), dict(item["wire"]))))
    if not calls:
        raise NotRedrivable(f"{NOT_REDRIVABLE}: the execution's redrive records are gone (expired)")
    rec = record(ds, session)
    ds.put(session, REDRIVE_KEY, {"count": n, "dates": list(rec.get("dates") or []) + [now]}, exp)
    # the failures go first, then the frontier, then `result`: an execution that finds no
    # result runs, and must not find its committed failure
    ds.delete(session, failed_ckpts)
    ds.delete(session, [slot_key(k) for k in range(len(log))])
    if reopen is not None:
        reopen()
    else:
        ds.delete(session, [RESULT_KEY])
    calls[0] = (calls[0][0], {**calls[0][1], REDRIVEN: n})  # one ExecutionRedriven event
    invoker.invoke_many(calls)
    return {"redriveCount": n, "redriveDate": now, "invocations": instances}
