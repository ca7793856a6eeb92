"""The functions' own output on gcp: where the emulated platform keeps it, and reading it
back for `unumctl logs --cloud gcp` (docs/observability.md, "GCP").

In the cloud, Cloud Functions gen2 sends each line a function writes on stdout/stderr to
Cloud Logging as one entry (resource `cloud_run_revision`, `service_name` = the function); a
JSON line becomes a structured entry (Cloud Logging "Structured logging"). The runtime writes
the user code's output as such lines, labelled with the session and invocation
(runtime/gcp/output.py). Cloud Logging has no emulator, so under the emulators the platform
of the tests (unumctl/gcp/emulate/platform.py) keeps each function server's stdout and stderr, appended, in
`emulator_log_dir(app)/<app>-<function>.log`, and `EmulatorLogSource` does what the Cloud
Run logging agent does with each line (`to_entry`: JSON -> jsonPayload with its special
fields lifted, else textPayload) before selecting the labelled output lines.

Reading Cloud Logging itself (`entries.list`) would need google-cloud-logging, which the
project does not depend on: `unumctl logs --cloud gcp` outside the emulators says so and
gives the `gcloud logging read` filter instead.
"""

from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

from runtime.gcp.output import LABELS_FIELD

from ..build import state_dir

__all__ = ["EmulatorLogSource", "emulator_log_dir", "log_name", "to_entry"]

# jsonPayload keys of the runtime's own records (history, fault injection): not user output
RECORD_KEYS = ("unum_event", "unum_session_record", "unum_fault", "unum_usage")


def emulator_log_dir(app: Any) -> Path:
    """Directory of the emulated functions' output (`<app>/.unum/gcp/emulator-logs`)."""
    return state_dir(app) / "gcp" / "emulator-logs"


def log_name(app_name: str, function: str) -> str:
    """The process / file stem of a function's server (`<app>-<function>`)."""
    return f"{app_name}-{function}"


def _unix(ts: Any) -> float | None:
    if not isinstance(ts, str):
        return None
    try:
        return _dt.datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def to_entry(line: str, function: str) -> dict[str, Any]:
    """A LogEntry-shaped dict for one output line of `function`, as the logging agent makes
    it: {"resource": {"type", "labels": {"service_name"}}, "severity", "timestamp" (Unix s or
    None), "labels", and "jsonPayload" (special fields removed) or "textPayload"}."""
    entry: dict[str, Any] = {"resource": {"type": "cloud_run_revision", "labels": {"service_name": function}},
                             "severity": "DEFAULT", "timestamp": None, "labels": {}}
    payload: Any = None
    if line.startswith("{"):
        try:
            payload = json.loads(line)
        except ValueError:
            payload = None
    if not isinstance(payload, dict):
        entry["textPayload"] = line
        return entry
    payload = dict(payload)
    entry["severity"] = str(payload.pop("severity", "DEFAULT"))
    entry["timestamp"] = _unix(payload.pop("time", None) or payload.pop("timestamp", None))
    entry["labels"] = {str(k): str(v) for k, v in (payload.pop(LABELS_FIELD, None) or {}).items()}
    entry["jsonPayload"] = payload
    return entry


def output_row(entry: dict[str, Any]) -> dict[str, Any] | None:
    """The `HistoryReader.logs` row of an entry that is a function's own output line (labelled
    with a session, not one of the runtime's records), else None."""
    labels, payload = entry["labels"], entry.get("jsonPayload")
    if "unum_session" not in labels or payload is None or any(k in payload for k in RECORD_KEYS):
        return None
    if "message" in payload and len(payload) == 1:
        line = str(payload["message"])
    else:
        line = json.dumps(payload, separators=(",", ":"), default=str)
    attempt = labels.get("unum_attempt")
    return {"session": labels["unum_session"], "function": labels.get("unum_function"),
            "instance": labels.get("unum_instance"),
            "attempt": int(attempt) if attempt and attempt.isdigit() else None,
            "t": entry["timestamp"], "line": line, "execution_id": labels.get("execution_id")}


class EmulatorLogSource:
    """The emulated functions' output lines of app `app_name` in `log_dir`.

    `read(session, function, cursor)` returns (rows oldest first, next cursor); the cursor is
    {file name: byte offset read so far} (None: from the start). Only complete lines are read."""

    def __init__(self, log_dir: Path, app_name: str):
        self.dir = Path(log_dir)
        self.app = app_name

    def files(self) -> dict[str, Path]:
        """{function: log file} of the functions that have run here."""
        prefix = f"{self.app}-"
        if not self.dir.is_dir():
            return {}
        return {p.stem[len(prefix):]: p for p in sorted(self.dir.glob(f"{prefix}*.log"))}

    def read(self, session: str | None = None, function: str | None = None,
             cursor: dict[str, int] | None = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
        cursor = dict(cursor or {})
        rows: list[dict[str, Any]] = []
        for fn, path in self.files().items():
            if function is not None and fn != function:
                continue
            start = cursor.get(path.name, 0)
            with open(path, "rb") as fh:
                fh.seek(start)
                data = fh.read()
            end = data.rfind(b"\n") + 1
            cursor[path.name] = start + end
            for raw in data[:end].decode("utf-8", "replace").splitlines():
                row = output_row(to_entry(raw, fn))
                if row is None or (session is not None and row["session"] != session):
                    continue
                rows.append(row)
        rows.sort(key=lambda r: r["t"] or 0)
        return rows, cursor
