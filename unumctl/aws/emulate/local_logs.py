"""CloudWatch Logs delivery for the local Lambda emulator (unumctl/aws/emulate/local_lambda.py): what
Lambda does with a function's stdout and stderr.

Each emulated execution environment (worker process) gets its own log stream
`YYYY/MM/DD/[$LATEST]<32 hex>` in the function's log group `/aws/lambda/<function name>`
(runtime.aws.history.log_group; created when missing, as Lambda does when its role may);
every line the worker writes to stderr (the handler's prints and logging, Lambda's START /
END / REPORT lines, the history's event lines) becomes one log event, with the time the
line was read, sent by PutLogEvents in batches (CloudWatch Logs API reference,
PutLogEvents: events of a batch in time order, at most 10,000 events and 1,048,576 bytes,
counted as the UTF-8 bytes of each message + 26).

Also counts what would be ingested (`stats`: log_events, log_bytes, and the same for the
history's event lines under `:unum`), for the cost bench (bench/aws_cost.py).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from typing import Any

from runtime.aws.history import EVENT_MARKER, log_group

__all__ = ["LogForwarder", "stream_name"]

EVENT_OVERHEAD_BYTES = 26        # PutLogEvents counts each event as its message bytes + 26
_MAX_BATCH_EVENTS = 10_000
_MAX_BATCH_BYTES = 1_048_576
_EVENT_PREFIX = '{"' + EVENT_MARKER + '":'


def stream_name() -> str:
    """A new log stream name in Lambda's format: `YYYY/MM/DD/[$LATEST]<32 hex>` (UTC date)."""
    return time.strftime("%Y/%m/%d", time.gmtime()) + "/[$LATEST]" + uuid.uuid4().hex


class LogForwarder:
    """Buffers lines per (group, stream) and sends them with PutLogEvents every `interval` s
    (and on `flush`). `client`: a boto3 CloudWatch Logs client, or None to count only.
    Errors of the logs API are counted in stats["log_errors"] and the batch is dropped
    (Lambda's log delivery is best effort too); they never fail an execution."""

    def __init__(self, client: Any | None, interval: float = 0.2):
        self.client = client
        self.interval = interval
        self.stats: Counter[str] = Counter()
        self._buf: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self._known: set[str] = set()
        self._streams: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._last_ts: dict[tuple[str, str], int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def add(self, function: str, stream: str, line: str) -> None:
        """Queue one line (without its newline) of `function`'s environment `stream`."""
        key = (log_group(function), stream)
        size = len(line.encode("utf-8", "replace")) + EVENT_OVERHEAD_BYTES
        with self._lock:
            ts = max(int(time.time() * 1000), self._last_ts.get(key, 0))
            self._last_ts[key] = ts
            self._buf.setdefault(key, []).append({"timestamp": ts, "message": line or " "})
            self.stats["log_events"] += 1
            self.stats["log_bytes"] += size
            if line.startswith(_EVENT_PREFIX):
                self.stats["log_events:unum"] += 1
                self.stats["log_bytes:unum"] += size

    def flush(self) -> None:
        """Send everything queued so far (returns when sent or dropped)."""
        with self._send_lock:
            with self._lock:
                buf, self._buf = self._buf, {}
            if self.client is None:
                return
            for (group, stream), events in buf.items():
                try:
                    self._ensure(group, stream)
                    for batch in _batches(events):
                        self.client.put_log_events(logGroupName=group, logStreamName=stream, logEvents=batch)
                except Exception:  # noqa: BLE001  (botocore errors: best effort, counted)
                    self.stats["log_errors"] += 1

    def close(self) -> None:
        """Stop the background sender after a last flush."""
        self._stop.set()
        self._thread.join(5)
        self.flush()

    def _ensure(self, group: str, stream: str) -> None:
        if group not in self._known:
            try:
                self.client.create_log_group(logGroupName=group)  # type: ignore[union-attr]
            except self.client.exceptions.ResourceAlreadyExistsException:  # type: ignore[union-attr]
                pass
            self._known.add(group)
        if (group, stream) not in self._streams:
            try:
                self.client.create_log_stream(logGroupName=group, logStreamName=stream)  # type: ignore[union-attr]
            except self.client.exceptions.ResourceAlreadyExistsException:  # type: ignore[union-attr]
                pass
            self._streams.add((group, stream))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self.flush()


def _batches(events: list[dict[str, Any]]):
    batch: list[dict[str, Any]] = []
    size = 0
    for e in events:
        n = len(e["message"].encode("utf-8", "replace")) + EVENT_OVERHEAD_BYTES
        if batch and (len(batch) >= _MAX_BATCH_EVENTS or size + n > _MAX_BATCH_BYTES):
            yield batch
            batch, size = [], 0
        batch.append(e)
        size += n
    if batch:
        yield batch
