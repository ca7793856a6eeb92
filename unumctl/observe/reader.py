"""Reading a target's execution history: sessions, one session's description, its events and
the functions' output (the read side of runtime.ports.Events)."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.local.history import SqliteHistory
from runtime.session import STATUSES, read_result, session_status

from ..deploy import names
from ..deploy.statepath import runner_alive
from ..targets import TargetError

__all__ = ["HistoryReader", "LocalHistoryReader", "STARTS", "STATUSES", "UnknownSession", "description",
           "event_counts", "with_states"]

STARTS = ("ran", "adopted", "failed", "suspended")  # kinds that mean "the invocation executed"


class UnknownSession(KeyError):
    """No session with this id on the target (an error, not "no result yet")."""


def event_counts(events: list[dict[str, Any]]) -> dict[str, int]:
    """The counts of `HistoryReader.describe` from a session's events (shared by every
    target's reader): invocations (distinct invocations that executed), executions,
    retries, duplicates_dropped, adopted, crashes, timeouts, duplicated_deliveries.
    An execution that crashed after creating its checkpoint (`checkpoint_bytes` set) counts
    as executed: its invocation ran and committed, and later deliveries only drop.
    `executions` counts deliveries: two events of one (request id, attempt) are one
    execution (an AWS attempt killed after it recorded `ran` is also `crashed`)."""
    kinds = [e["kind"] for e in events]
    executed = [e for e in events if e["kind"] in STARTS + ("dropped", "crashed")]
    return {
        "invocations": len({e.get("instance") for e in events
                            if e["kind"] in STARTS or (e["kind"] == "crashed" and e.get("checkpoint_bytes"))}),
        "executions": len({(e["request_id"], e.get("attempt")) if e.get("request_id") else i
                           for i, e in enumerate(executed)}),
        "retries": kinds.count("retried"),
        "duplicates_dropped": kinds.count("dropped"),
        "adopted": kinds.count("adopted"),
        "crashes": kinds.count("crashed"),
        "timeouts": kinds.count("timed_out"),
        "duplicated_deliveries": kinds.count("duplicated"),
    }


def description(session: str, *, status: str, function: str | None, start: float | None,
                end: float | None, input: Any, outcome: dict[str, Any] | None, finished: bool,
                events: list[dict[str, Any]], indexed: bool, now: float) -> dict[str, Any]:
    """The dict `HistoryReader.describe` returns, from what a target's reader found (shared by
    every reader): {"session", "status", "function", "start", "end", "duration", "input",
    "output" | "error"/"cause"/"failed_in"[/"failed_state"], "counts" (event_counts), "history" ("full" when
    events exist, "session-only" when only the session record (`indexed`) does, else "off")}.
    `outcome` is the result item (or the end record's copy of it); `finished` says the session
    has a result, in which case a missing `end` is taken from its last event. Times in Unix
    seconds; a running session's duration runs to `now`."""
    if end is None and finished and events:
        end = max(e.get("t1") or e.get("t0") or 0 for e in events)
    out: dict[str, Any] = {"session": session, "status": status, "function": function,
                           "start": start, "end": end,
                           "duration": ((end if end is not None else now) - start) if start else None,
                           "input": input}
    if outcome is not None and outcome.get("status") == "SUCCEEDED":
        out["output"] = outcome.get("v")
    elif outcome is not None:
        out.update(error=outcome.get("error"), cause=outcome.get("cause"), failed_in=outcome.get("instance"))
        if outcome.get("state"):  # a Step Functions app: the ASL state that failed
            out["failed_state"] = outcome["state"]
    out["counts"] = event_counts(events)
    out["history"] = "full" if events else ("session-only" if indexed else "off")
    return out


def with_states(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`events` with each Step Functions execution's `states` as runtime.asl.steps.expand
    gives them (every step with its `t`, `scope`, `in` and `out` as far as recorded)."""
    from runtime.asl.steps import expand
    out = []
    for e in events:
        if e.get("states"):
            e = {**e, "states": expand(e["states"], t0=e.get("t0"),
                                       **{k: e[k] for k in ("input", "output") if k in e})}
        out.append(e)
    return out


class HistoryReader(ABC):
    """What the observability commands need from a target. Times are Unix seconds,
    durations seconds."""

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> "HistoryReader":
        """The reader of `app` (unumctl.manifest.App) as `unumctl.observe.reader` builds it
        for a target (TargetSpec `history`, unumctl/registry.py); `options`: the target's CLI
        options (region, profile ...), which a reader that needs none ignores."""
        return cls(app)  # type: ignore[call-arg]

    @abstractmethod
    def sessions(self, status: str | None = None, limit: int | None = None) -> list[dict[str, Any]]:
        """Sessions newest first: [{"session", "status", "start", "end" (None while running),
        "duration" (s, up to now while running), "invocations"}]; `status` one of STATUSES."""

    @abstractmethod
    def describe(self, session: str) -> dict[str, Any]:
        """{"session", "status", "function", "start", "end", "duration", "input", "output"
        (SUCCEEDED) or "error"/"cause"/"failed_in" (FAILED/TIMED_OUT), "counts": {"invocations",
        "executions", "retries", "duplicates_dropped", "adopted", "crashes", "timeouts",
        "duplicated_deliveries"}, "history": the runtime.history level seen}. Raises
        UnknownSession."""

    @abstractmethod
    def history(self, session: str) -> list[dict[str, Any]]:
        """The session's events in order (runtime.ports.Events fields). Raises UnknownSession."""

    @abstractmethod
    def logs(self, session: str | None = None, function: str | None = None,
             after: Any = None) -> tuple[list[dict[str, Any]], Any]:
        """Output lines after cursor `after` (None: from the start), oldest first:
        ([{"session", "function", "instance", "attempt", "t", "line"}], next cursor)."""

    def ended(self, session: str) -> bool:
        """Whether the session has an outcome."""
        try:
            return self.describe(session)["status"] != "RUNNING"
        except UnknownSession:
            return False


# shown instead of RUNNING for a local session that no process runs (its invoke was stopped);
# `unumctl resume` finishes it (docs/observability.md)
STOPPED = "STOPPED"


class LocalHistoryReader(HistoryReader):
    """The local target's history: tables of APP/.unum/local/<stage>/unum.db (runtime/local/history.py),
    the session registry and the `result` items (authoritative for the status and output:
    history records are observations and may miss an end whose write failed)."""

    def __init__(self, app: Any, stage: str | None = None):
        """`stage`: the stage read (None: the manifest's `stage:`, else "dev"; its state
        directory `<app>/.unum/local/<stage>`, unumctl/deploy/statepath.py)."""
        from ..deploy.stage import resolve_stage
        from ..deploy.statepath import local_dir
        self.app = app
        self.state = local_dir(app, resolve_stage(stage, app.manifest.stage))
        db = self.state / names.LOCAL_DATASTORE
        if not db.exists():
            raise TargetError(f"no local runs of {app.name} yet; run: unumctl invoke {app.root} --data FILE")
        self.ds = SqliteDatastore(db)
        self.store = SqliteHistory(self.ds)
        self.blobs = FileBlobStore(Path(db).parent / names.LOCAL_BLOBS)

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> "LocalHistoryReader":
        """HistoryReader.for_app: the reader of the stage in `options` (`stage`: --stage)."""
        return cls(app, options.get("stage"))

    def close(self) -> None:
        """Close the database connection."""
        self.ds.close()

    # ------------------------------------------------------------------ helpers
    def _registry(self) -> dict[str, dict[str, Any]]:
        try:
            rows = self.ds.db.execute("SELECT session, function, started_at FROM local_sessions").fetchall()
        except Exception:  # noqa: BLE001  (no registry table yet)
            return {}
        return {r[0]: {"function": r[1], "started_at": r[2]} for r in rows}

    def _result(self, session: str) -> dict[str, Any] | None:
        return read_result(self.ds, self.blobs, session)

    # ------------------------------------------------------------------ HistoryReader
    def sessions(self, status=None, limit=None):
        if status is not None and status not in (*STATUSES, STOPPED):
            raise ValueError(f"--status: {status!r} must be one of {', '.join((*STATUSES, STOPPED))}")
        stopped = not runner_alive(self.state)
        rows = {r["session"]: r for r in self.store.session_rows()}
        for s, reg in self._registry().items():  # started here but no history (off, or not run yet)
            rows.setdefault(s, {"session": s, "function": reg["function"], "started_at": reg["started_at"],
                                "ended_at": None, "status": None, "invocations": 0})
        now = time.time()
        out = []
        for r in rows.values():
            st = r["status"]
            if st is None:
                result = self._result(r["session"])
                st = session_status(result)
            if st == "RUNNING" and stopped:
                st = STOPPED
            if status is not None and st != status:
                continue
            start, end = r["started_at"], r["ended_at"]
            dur = (end if end is not None else (now if st == "RUNNING" else None))
            row = {"session": r["session"], "status": st, "start": start, "end": end,
                   "duration": (dur - start) if dur is not None and start is not None else None,
                   "invocations": r["invocations"]}
            if st == STOPPED:
                row["resume"] = self._resume(r["session"])
            out.append(row)
        out.sort(key=lambda r: (-(r["start"] or 0), r["session"]))
        return out[:limit] if limit is not None else out

    def describe(self, session):
        rec = self.store.session_row(session)
        reg = self._registry().get(session)
        result = self._result(session)
        events = self.store.events(session)
        if rec is None and reg is None and result is None and not events:
            raise UnknownSession(session)
        rec = rec or {}
        inp = rec.get("input")
        if (inp is None or (isinstance(inp, dict) and inp.get("omitted"))) and reg is not None:
            row = self.ds.db.execute("SELECT input FROM local_sessions WHERE session=?", (session,)).fetchone()
            inp = json.loads(row[0]) if row and row[0] else None
        st = session_status(result) if result is not None else (rec.get("status") or "RUNNING")
        stopped = st == "RUNNING" and not runner_alive(self.state)
        d = description(
            session, status=STOPPED if stopped else st,
            function=rec.get("function") or (reg or {}).get("function"),
            start=rec.get("started_at") or (reg or {}).get("started_at"), end=rec.get("ended_at"),
            input=inp, outcome=result, finished=result is not None, events=events, indexed=bool(rec),
            now=time.time())
        if stopped:  # no process runs it: its duration does not grow; resume finishes it
            d["duration"] = None
            d["resume"] = self._resume(session)
        return d

    def _resume(self, session: str) -> str:
        return f"unumctl resume {self.app.root} {session}"

    def history(self, session):
        events = self.store.events(session)
        if not events and self.store.session_row(session) is None and session not in self._registry() \
                and self._result(session) is None:
            raise UnknownSession(session)
        return events

    def logs(self, session=None, function=None, after=None):
        rows = self.store.log_lines(session, function, int(after or 0))
        nxt = rows[-1]["id"] if rows else (after or 0)
        return [{k: r[k] for k in ("session", "function", "instance", "attempt", "t", "line")}
                for r in rows], nxt
