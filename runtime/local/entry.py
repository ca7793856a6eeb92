"""Entry point of a function bundle on the local target.

The local worker process (unumctl/local/worker.py) imports the bundle's `unum_entry`, which
re-exports `LocalFunction`, and calls `handle` once per delivered invocation.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from ..bundle import load_bundle
from ..engine import Outcome
from ..ports import Invoker
from .datastore import FileBlobStore, SqliteDatastore
from .faults import FaultSpec, SeededFaults


class QueueInvoker(Invoker):
    """Asynchronous invoke on the local target: hands the calls to the platform process,
    which queues them (send returns once the platform has the message)."""

    max_payload_bytes = 256 * 1024  # as Lambda's async invoke limit, to exercise references
    supports_delay = True  # `delay` is a platform timer (used for ASL Wait states)

    def __init__(self, send: Callable[[Any], None]):
        self.send = send

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        if calls:
            self.send(("invoke", list(calls), delay))


class LocalFunction:
    """One function instance ("container") of the local target.

    `env`: {"db": sqlite path, "blobs": blob dir, "faults": spec string or "",
    "max_attempts": delivery attempts}; `send` delivers messages to the platform process."""

    def __init__(self, bundle_dir: str, env: dict[str, Any], send: Callable[[Any], None]):
        self.bundle = load_bundle(bundle_dir)
        self.env = env
        self.ds = SqliteDatastore(env["db"])
        self.blobs = FileBlobStore(env["blobs"])
        self.invoker = QueueInvoker(send)
        self.spec = FaultSpec.parse(env.get("faults") or None)
        self.engine = self.bundle.engine(self.ds, self.invoker, self.blobs)

    def handle(self, payload: dict[str, Any], attempt: int, message_key: str) -> Outcome:
        """Run one delivery attempt (1-based) of a message; InjectedCrash propagates."""
        if self.spec is not None:
            self.engine.faults = SeededFaults(self.spec, attempt, int(self.env.get("max_attempts", 3)),
                                              message_key)
        return self.engine.handle(payload)
