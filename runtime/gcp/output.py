"""The functions' own output as Cloud Logging structured entries, labelled per execution.

Source: Cloud Logging "Structured logging" (cloud.google.com/logging/docs/structured-logging):
on Cloud Functions / Cloud Run, each line a function writes to stdout or stderr becomes one
log entry; a line that is a JSON object becomes a `jsonPayload` whose special fields
`severity`, `message`, `time` and `logging.googleapis.com/labels` set the entry's severity,
text, timestamp and labels. functions-framework's own `LOG_EXECUTION_ID` mode does the same
with the label `execution_id` (functions_framework/execution_id.py).

While an execution runs (`execution_output`), every line printed on sys.stdout (severity
INFO) or sys.stderr (ERROR) by the user code, `logging`, or the runtime is written as one
JSON line with the labels

    execution_id      the platform's execution id (header Function-Execution-Id)
    unum_session, unum_function, unum_instance, unum_attempt, unum_message_id

so that `unumctl logs --session S` (and `gcloud logging read 'labels.unum_session="S"'`)
finds the output of one invocation. A line that is itself a JSON object keeps its fields
and gets the labels merged in. Output outside an execution passes through unchanged.

Concurrency: the wrapper is installed once on sys.stdout/sys.stderr and finds the current
execution's labels in a context variable (per thread), so concurrent executions in one
process (functions-framework threads) each label their own lines. Output of threads the user
code starts is not labelled (they do not inherit the context).
"""

from __future__ import annotations

import contextvars
import datetime as _dt
import json
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator

__all__ = ["LABELS_FIELD", "execution_id", "execution_output", "structured_line"]

LABELS_FIELD = "logging.googleapis.com/labels"
EXECUTION_ID_HEADER = "Function-Execution-Id"  # set by functions-framework's WsgiMiddleware


def rfc3339(unix: float) -> str:
    """Unix seconds as the RFC 3339 UTC timestamp Cloud Logging's `time` field takes."""
    return _dt.datetime.fromtimestamp(unix, tz=_dt.timezone.utc).isoformat().replace("+00:00", "Z")


def structured_line(payload: dict[str, Any], labels: dict[str, str] | None = None) -> str:
    """One structured log line (no newline): `payload` with `labels` merged into its
    `logging.googleapis.com/labels` (label values are strings, as in LogEntry.labels)."""
    out = dict(payload)
    if labels:
        merged = {k: str(v) for k, v in labels.items() if v is not None}
        merged.update(out.get(LABELS_FIELD) or {})
        out[LABELS_FIELD] = merged
    return json.dumps(out, separators=(",", ":"), default=str, ensure_ascii=False)


class _Execution:
    """The labels of the running execution and its unfinished output lines."""

    def __init__(self, labels: Callable[[], dict[str, Any]], clock: Callable[[], float]):
        self.labels = labels
        self.clock = clock
        self.partial: dict[str, str] = {}

    def line(self, text: str, severity: str) -> str:
        try:
            labels = self.labels()
        except Exception:  # noqa: BLE001  (labels are best effort)
            labels = {}
        payload: Any = None
        if text.startswith("{"):
            try:
                payload = json.loads(text)
            except ValueError:
                payload = None
        if not isinstance(payload, dict):
            payload = {"severity": severity, "message": text}
        payload.setdefault("time", rfc3339(self.clock()))
        return structured_line(payload, labels)


_CURRENT: contextvars.ContextVar[_Execution | None] = contextvars.ContextVar("unum_execution_output",
                                                                              default=None)


class LabelledStream:
    """A text stream wrapper: inside an execution, complete lines become structured JSON
    lines on the wrapped stream; elsewhere writes pass through."""

    def __init__(self, inner: Any, severity: str):
        self.inner = inner
        self.severity = severity

    def write(self, s: str) -> int:
        ex = _CURRENT.get()
        if ex is None:
            return self.inner.write(s)
        text = ex.partial.get(self.severity, "") + s
        *lines, rest = text.split("\n")
        ex.partial[self.severity] = rest
        if lines:
            self.inner.write("".join(ex.line(ln, self.severity) + "\n" for ln in lines))
            self.inner.flush()
        return len(s)

    def flush(self) -> None:
        self.inner.flush()

    def finish(self, ex: _Execution) -> None:
        """Write the execution's unfinished last line."""
        rest = ex.partial.pop(self.severity, "")
        if rest:
            self.inner.write(ex.line(rest, self.severity) + "\n")
            self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, fileno, isatty, buffer, ...
        return getattr(self.inner, name)


def install() -> tuple[LabelledStream, LabelledStream]:
    """Wrap sys.stdout and sys.stderr (once; idempotent) and return the wrappers."""
    if not isinstance(sys.stdout, LabelledStream):
        sys.stdout = LabelledStream(sys.stdout, "INFO")
    if not isinstance(sys.stderr, LabelledStream):
        sys.stderr = LabelledStream(sys.stderr, "ERROR")
    return sys.stdout, sys.stderr


def execution_id() -> str | None:
    """The platform's id of the current request (functions-framework sets the header on
    every request), or None outside a Flask request."""
    try:
        import flask
        if flask.has_request_context():
            return flask.request.headers.get(EXECUTION_ID_HEADER)
    except Exception:  # noqa: BLE001  (not under functions-framework)
        pass
    return None


@contextmanager
def execution_output(labels: Callable[[], dict[str, Any]],
                     clock: Callable[[], float] | None = None) -> Iterator[None]:
    """Label every output line written in this context with `labels()` (evaluated per
    line, so labels known only later, such as the invocation name, appear once known)."""
    import time
    out, err = install()
    ex = _Execution(labels, clock or time.time)
    token = _CURRENT.set(ex)
    try:
        yield
    finally:
        for stream in (out, err):
            try:
                stream.finish(ex)
            except Exception:  # noqa: BLE001  (output never fails an execution)
                pass
        _CURRENT.reset(token)
