"""The `LogResult` of a `lambda:invoke` Task with `"LogType": "Tail"`.

Source: AWS Lambda API reference "Invoke" (LogType Tail: "the last 4 KB of the execution
log", base64-encoded, in the LogResult field) and the AWS Step Functions developer guide
"Invoke Lambda" (the Task result is the Invoke response: Payload, StatusCode, LogResult...).
A Lambda execution log is `START RequestId: <id> Version: $LATEST`, what the function
printed, `END RequestId: <id>` and a `REPORT` line.

The function runs in the process and thread of the Task's wrapper on every target, so the
capture tees `sys.stdout` and `sys.stderr` for the calling thread only (other threads'
output is passed through untouched, and everything captured is still written to the real
streams). Output of the `logging` module is captured when its handler writes to
`sys.stdout`/`sys.stderr` at emit time (the default `lastResort` handler, a StreamHandler
created inside the function); a handler bound to the original stream object before the
call is not.
"""

from __future__ import annotations

import base64
import contextlib
import sys
import threading
import time
from typing import Iterator

__all__ = ["TAIL_BYTES", "capture"]

TAIL_BYTES = 4096

_lock = threading.Lock()
_active: dict[int, list[str]] = {}
_installed: dict[str, "_Tee"] = {}


class _Tee:
    """Stands in for sys.stdout/sys.stderr while a capture is active."""

    def __init__(self, inner):
        self._inner = inner

    def write(self, text: str) -> int:
        buf = _active.get(threading.get_ident())
        if buf is not None:
            buf.append(text)
        return self._inner.write(text)

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


class Capture:
    """What one call printed; `result(request_id, seconds)` is the LogResult value."""

    def __init__(self) -> None:
        self.chunks: list[str] = []
        self.seconds = 0.0

    def text(self) -> str:
        """Everything the calling thread wrote to stdout/stderr during the call."""
        return "".join(self.chunks)

    def result(self, request_id: str) -> str:
        """Base64 of the last TAIL_BYTES bytes of the Lambda-style execution log."""
        body = self.text()
        if body and not body.endswith("\n"):
            body += "\n"
        ms = self.seconds * 1000
        log = (f"START RequestId: {request_id} Version: $LATEST\n{body}"
               f"END RequestId: {request_id}\n"
               f"REPORT RequestId: {request_id}\tDuration: {ms:.2f} ms\t"
               f"Billed Duration: {max(1, int(ms + 0.999))} ms\t\n")
        return base64.b64encode(log.encode("utf-8")[-TAIL_BYTES:]).decode("ascii")


@contextlib.contextmanager
def capture() -> Iterator[Capture]:
    """Capture what the current thread writes to sys.stdout/sys.stderr inside the block."""
    cap = Capture()
    tid = threading.get_ident()
    with _lock:
        if not _active:
            for name in ("stdout", "stderr"):
                cur = getattr(sys, name)
                if not isinstance(cur, _Tee):
                    _installed[name] = _Tee(cur)
                    setattr(sys, name, _installed[name])
        outer = _active.get(tid)
        _active[tid] = cap.chunks
    t0 = time.perf_counter()
    try:
        yield cap
    finally:
        cap.seconds = time.perf_counter() - t0
        with _lock:
            if outer is not None:
                outer.extend(cap.chunks)
                _active[tid] = outer
            else:
                _active.pop(tid, None)
            if not _active:
                for name, tee in list(_installed.items()):
                    if getattr(sys, name) is tee:  # nobody replaced it meanwhile
                        setattr(sys, name, tee._inner)
                    _installed.pop(name)
