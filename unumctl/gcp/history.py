"""The gcp target's execution history (the read side of runtime/gcp/history.py).

Sessions, their records and events come from the Firestore collection
`<collection>-history` (layout in runtime/gcp/history.py); the status and output come from
the session's `result` item in the datastore, which is authoritative (history documents are
observations: an end whose write failed is simply missing). The functions' output lines come
from the emulated platform's logs (unumctl/gcp/logs.py); in the cloud they are in Cloud
Logging, which this reader does not query (no Cloud Logging client among the project's
dependencies): `logs` then names the `gcloud logging read` filter to use instead.
"""

from __future__ import annotations

import time
from typing import Any

from runtime.gcp.history import history_collection, read_session
from runtime.session import read_result, session_status

from ..targets import TargetError
from ..observe.reader import STATUSES, HistoryReader, UnknownSession, description, event_counts

__all__ = ["GcpHistoryReader"]


class GcpHistoryReader(HistoryReader):
    """History of `app` (unumctl.manifest.App) on gcp.

    `ports`: GcpTarget.observe_ports() (project, datastore, blobs, emulated); built from
    `unumctl invoke --cloud gcp`'s settings when None. `log_source`: an object with
    `read(session, function, cursor)` (unumctl.gcp.logs.EmulatorLogSource); by default the
    emulated platform's logs when the emulators are in use, else None. Raises TargetError
    as the gcp target does (no project, emulator not answering, not deployed)."""

    def __init__(self, app: Any, ports: dict[str, Any] | None = None, log_source: Any = None):
        if ports is None:
            from ..targets import get_target
            ports = get_target("gcp", app).observe_ports()  # type: ignore[attr-defined]
        self.app = app
        self.ds = ports["datastore"]
        self.blobs = ports["blobs"]
        self.project = ports["project"]
        self.coll = self.ds.client.collection(history_collection(self.ds.coll.id))
        if log_source is None and ports.get("emulated"):
            from .logs import EmulatorLogSource, emulator_log_dir
            log_source = EmulatorLogSource(emulator_log_dir(app), app.name)
        self.log_source = log_source

    @classmethod
    def for_app(cls, app: Any, **options: Any) -> "GcpHistoryReader":
        """HistoryReader.for_app: the ports of the gcp target with these CLI options (region,
        project, `stage`: --stage), so the history read is that stage's."""
        from ..targets import get_target
        return cls(app, get_target("gcp", app, **options).observe_ports())  # type: ignore[attr-defined]

    # ------------------------------------------------------------------ helpers
    def _result(self, session: str) -> dict[str, Any] | None:
        return read_result(self.ds, self.blobs, session)

    @staticmethod
    def _status(result: dict[str, Any] | None, end: dict[str, Any] | None) -> str:
        if result is not None:
            return session_status(result)
        return str(end["status"]) if end and end.get("status") else "RUNNING"

    # ------------------------------------------------------------------ HistoryReader
    def sessions(self, status=None, limit=None):
        from google.cloud import firestore
        if status is not None and status not in STATUSES:
            raise ValueError(f"--status: {status!r} must be one of {', '.join(STATUSES)}")
        q = self.coll.order_by("started_at", direction=firestore.Query.DESCENDING)
        if status is None and limit is not None:
            q = q.limit(int(limit))
        now = time.time()
        out = []
        for snap in q.stream():  # only start documents have started_at
            start = snap.to_dict()
            sid = start["session"]
            info = read_session(self.coll, sid)
            st = self._status(self._result(sid), info["end"])
            if status is not None and st != status:
                continue
            t0 = start.get("started_at")
            end = (info["end"] or {}).get("ended_at")
            dur = end if end is not None else (now if st == "RUNNING" else None)
            out.append({"session": sid, "status": st, "start": t0, "end": end,
                        "duration": (dur - t0) if dur is not None and t0 is not None else None,
                        "invocations": event_counts(info["events"])["invocations"]})
            if limit is not None and len(out) >= limit:
                break
        return out

    def describe(self, session):
        info = read_session(self.coll, session)
        result = self._result(session)
        start_doc, end_doc, events = info["start"], info["end"], info["events"]
        if start_doc is None and end_doc is None and result is None and not events:
            raise UnknownSession(session)
        return description(
            session, status=self._status(result, end_doc), function=(start_doc or {}).get("function"),
            start=(start_doc or {}).get("started_at"), end=(end_doc or {}).get("ended_at"),
            input=(start_doc or {}).get("input"),
            outcome=result if result is not None else (end_doc or {}).get("result"),
            finished=result is not None, events=events, indexed=bool(start_doc or end_doc), now=time.time())

    def history(self, session):
        info = read_session(self.coll, session)
        if not info["events"] and info["start"] is None and info["end"] is None \
                and self._result(session) is None:
            raise UnknownSession(session)
        return info["events"]

    def logs(self, session=None, function=None, after=None):
        if self.log_source is None:
            flt = "labels.unum_session:*"
            if session:
                flt = f'labels.unum_session="{session}"'
            raise TargetError("logs --cloud gcp reads the emulated functions' output only; in the cloud the "
                              f"output is in Cloud Logging: gcloud logging read '{flt}' --project "
                              f"{self.project} (docs/observability.md)")
        rows, cursor = self.log_source.read(session, function, after)
        return [{k: r.get(k) for k in ("session", "function", "instance", "attempt", "t", "line")}
                for r in rows], cursor
