"""`unumctl invoke --wait`'s live progress line on a terminal: invocations done / running /
failed, read from the target's execution history (a HistoryReader, polled in a thread) and
drawn with rich (https://rich.readthedocs.io/en/stable/live.html). Nothing is drawn when
stderr is not a terminal; stdout is never touched (it holds only the result)."""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

__all__ = ["counts", "line", "live_progress"]

DONE = ("ran", "adopted")
FAILED = ("failed", "gave_up", "timed_out", "out_of_memory")


def counts(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """{"done", "running", "failed"} invocations from a session's events (runtime.ports.Events
    fields): `done` invocations that completed (ran or adopted), `failed` ones whose last
    outcome is a failure, `running` the invocations known to be started (the entry plus the
    continuations each done invocation invoked) minus those two, at least 0. An estimate
    while the history is being written: events are recorded when an execution ends."""
    done: set[str] = set()
    failed: set[str] = set()
    invoked: dict[str, int] = {}
    for e in events:
        inst = e.get("instance") or e.get("function") or "?"
        if e["kind"] in DONE:
            done.add(inst)
            failed.discard(inst)
            invoked[inst] = max(invoked.get(inst, 0), int(e.get("invoked") or 0))
        elif e["kind"] in FAILED and inst not in done:
            failed.add(inst)
    started = 1 + sum(invoked.values())
    return {"done": len(done), "running": max(0, started - len(done) - len(failed)), "failed": len(failed)}


def line(c: dict[str, int] | None, elapsed: float) -> str:
    """The progress text, e.g. `invocations: 12 done, 3 running, 0 failed (4.2 s)`; with no
    counts yet (`c` None: the history could not be read so far, e.g. a target without a
    HistoryReader) `waiting for the session's history (4.2 s)`."""
    if c is None:
        return f"waiting for the session's history ({elapsed:.1f} s)"
    return (f"invocations: {c['done']} done, {c['running']} running, {c['failed']} failed "
            f"({elapsed:.1f} s)")


class Watcher:
    """Polls `open_reader()` (a HistoryReader, or raises while nothing exists yet) for the
    events of `session` every `interval` s in a daemon thread; `latest` holds the last counts."""

    def __init__(self, open_reader: Callable[[], Any], session: str, interval: float = 0.25):
        self.open_reader = open_reader
        self.session = session
        self.interval = interval
        self.latest: dict[str, int] | None = None  # None until a read succeeds
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="unumctl-progress", daemon=True)

    def _run(self) -> None:
        holder: list[Any] = [None]
        while not self._stop.is_set():
            t0 = time.monotonic()
            self.poll_once(holder)
            # a long history costs a long read: poll less often rather than load the machine
            self._stop.wait(max(self.interval, 2 * (time.monotonic() - t0)))
        close = getattr(holder[0], "close", None)
        if close is not None:
            try:
                close()
            except Exception:  # noqa: BLE001
                pass

    def poll_once(self, holder: list[Any]) -> None:
        """Read the events once (opening the reader into holder[0] when needed); any error
        (no database yet, unknown session so far) leaves `latest` as it was."""
        try:
            if holder[0] is None:
                holder[0] = self.open_reader()
            self.latest = counts(holder[0].history(self.session))
        except Exception:  # noqa: BLE001  (progress is best effort: never fail the invoke)
            pass

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


@contextmanager
def live_progress(open_reader: Callable[[], Any], session: str, enabled: bool) -> Iterator[None]:
    """While the body runs, show the live progress line on stderr when `enabled` (the caller
    passes whether stderr is a terminal); the final counts stay on screen. A no-op otherwise."""
    if not enabled:
        yield
        return
    from rich.console import Console
    from rich.live import Live

    console = Console(stderr=True, highlight=False)
    watcher = Watcher(open_reader, session)
    t0 = time.monotonic()
    watcher.start()
    try:
        with Live(line(watcher.latest, 0.0), console=console, refresh_per_second=4, transient=False,
                  redirect_stdout=False, get_renderable=lambda: line(watcher.latest, time.monotonic() - t0)):
            try:
                yield
            finally:
                watcher.stop()
                holder: list[Any] = [None]
                watcher.poll_once(holder)  # the final counts
                close = getattr(holder[0], "close", None)
                if close is not None:
                    close()
    finally:
        watcher.stop()
