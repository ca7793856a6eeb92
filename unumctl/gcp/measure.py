"""The measured run on the gcp target (`unumctl cost` / `tune --emulated`, unumctl/cost/measure.py
describes the measurement and runs it as `python -m unumctl.cost.measure APP --cloud gcp`):
the Firestore and Pub/Sub emulators, the GCS stand-in and functions-framework; each execution
prints its adapters' counters (runtime/gcp/entry.py, UNUM_USAGE_LOG=1)."""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from ..cost.measure import (MissingComponent, SessionFailed, close_windows, consumer_sessions, load_for_measure,
                            need, open_window, wait_closed, window_names)
from ..install_hint import install_hint

__all__ = ["measure_gcp"]

GCP_INSTALL = (f"{install_hint('gcp,emulate')} and the Google Cloud SDK's emulators "
               "(gcloud components install cloud-firestore-emulator pubsub-emulator)")


def measure_gcp(app_dir: Path, value: Any, sessions: int = 1, emulators: Any = None,
                check: Callable[[dict], None] | None = None, at_least_once: bool = False,
                use_plan: bool = True, history: dict[str, list] | None = None) -> dict[str, Any]:
    """As `measure_aws` (`at_least_once`, `use_plan` and `history` too: read from the Firestore
    emulator through the gcp HistoryReader), on the GCP emulators (started here unless `emulators`, a running
    unumctl.gcp.emulate.emulators.Emulators, is given). Raises MissingComponent (the emulators,
    functions-framework or the Google client libraries are missing), SessionFailed,
    TimeoutError. `at_least_once`, `use_plan`: load_for_measure. Windows across sessions:
    after the sessions `close_windows` publishes each ByTime window's Cloud Scheduler message
    (the rendered job's data) to its consumer's topic, as the scheduler would (the emulators
    do not run jobs), and the consumer sessions that fire are counted with the producers'."""
    need("google.cloud.firestore", GCP_INSTALL)
    need("functions_framework", GCP_INSTALL)
    from runtime.session import entry_payload

    from unumctl.gcp.emulate.emulators import EmulatorMissing, Emulators
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app = load_for_measure(app_dir, "gcp", at_least_once, use_plan)
    saved = dict(os.environ)
    with tempfile.TemporaryDirectory() as tmp:
        try:
            own = None
            if emulators is None:
                try:
                    own = Emulators(Path(tmp) / "emu").start()
                except EmulatorMissing as exc:
                    raise MissingComponent(f"{exc} ({GCP_INSTALL})") from None
                emulators = own
            os.environ.update(emulators.env)
            # THREADS=1: one execution at a time per function server (gen2's default
            # concurrency of 1 per instance), so each execution's usage delta is its own
            env = {"UNUM_USAGE_LOG": "1", "THREADS": "1"}
            session_ms: list[float] = []
            with EmulatorPlatform(app, emulators, Path(tmp) / "run", env=env, log_dir=Path(tmp) / "logs") as plat:
                from runtime.gcp.invoker import topic_id
                from unumctl.pipeline import deployment

                def tick(t: Any) -> None:  # what the rendered google_cloud_scheduler_job publishes
                    topic = plat.publisher.topic_path(emulators.project, topic_id(app.name, t.consumer, plat.topic_prefix))
                    plat.publisher.publish(topic, data=t.input.encode()).result(timeout=30)

                wins = window_names(app)
                start = {w: open_window(plat.ds, w) for w in wins}
                sids: list[str] = []
                for _ in range(sessions):
                    t0 = time.perf_counter()
                    sid = plat.start_session(value)
                    item = plat.wait_result(sid, 120, poll=0.02)
                    session_ms.append((time.perf_counter() - t0) * 1000)
                    if item.get("status") != "SUCCEEDED":
                        raise SessionFailed(f"session {sid} did not succeed: {json.dumps(item)[:500]}")
                    if check is not None:
                        check(item)
                    sids.append(sid)
                timers = deployment(app, "gcp").timers
                before = {t.name: open_window(plat.ds, t.name) for t in timers}
                ticks = close_windows(timers, tick)
                wait_closed(plat.ds, before)
                consumers = consumer_sessions(plat.ds, start, {w: open_window(plat.ds, w) for w in wins})
                sids += consumers
                time.sleep(2)  # GC and late sweeps finish after the result
                if history is not None:
                    from unumctl.gcp.history import GcpHistoryReader
                    reader = GcpHistoryReader(app)
                    history.update({sid: reader.history(sid) for sid in sids})
                records = _usage_records(p.log.read_text() for p in plat.servers.values())
                left = _documents_left(app, emulators.project, sids)
        finally:
            if own is not None:
                own.stop()
            os.environ.clear()
            os.environ.update(saved)
    ops: Counter[str] = left
    executions = []
    from runtime.triggers.window import store_session

    # a scheduler tick's delivery carries the window store's session (tick_payload): the
    # consumer execution it runs is counted under it
    counted = set(sids) | {store_session(w) for w in wins}
    for rec in records:
        if rec["session"] in counted:
            ops.update(rec["unum_usage"])
            executions.append([rec["function"], float(rec["duration_ms"])])
    return {"app": app.name, "cloud": "gcp", "sessions": sessions,
            "target": "Firestore + Pub/Sub emulators, GCS stand-in, functions-framework (unumctl.gcp.emulate)",
            "executions": executions,
            "memory_mb": {fn: spec.memory for fn, spec in app.manifest.functions.items()},
            "operations": dict(ops), "item_bytes": {},
            "log_bytes": ops.get("history_log_bytes", 0), "log_bytes_history": ops.get("history_log_bytes", 0),
            "session_ms": session_ms, "entry_bytes": len(json.dumps(entry_payload("x" * 36, value))),
            "functions": sorted(app.workflow.functions),
            **({"windows": {"ticks": ticks, "consumer_sessions": consumers}} if wins else {})}


def _documents_left(app: Any, project: str, sids: list[str]) -> Counter:
    """Firestore documents the sessions `sids` left behind (the datastore's `unum-<app>` and
    the history's collection), which the TTL policies delete later: Firestore bills a TTL
    delete as a document delete. Counters `firestore_ttl_deletes` (the `result` item, and
    with `runtime.gc: none` every item, counter and set member) and `history_ttl_deletes`."""
    from google.cloud import firestore

    from runtime.gcp.history import history_collection
    from unumctl.gcp.model import build

    store = build(app, {"project": project}).datastore  # the names the emulated platform uses
    client = firestore.Client(project=project, database=store.database)
    out: Counter[str] = Counter()
    try:
        for key, coll in (("firestore_ttl_deletes", store.name),
                          ("history_ttl_deletes", history_collection(store.name))):
            for sid in sids:
                q = client.collection(coll).where(filter=firestore.FieldFilter("session", "==", sid)).select([])
                out[key] += sum(1 for _ in q.stream())
    finally:
        client.close()
    return out


def _usage_records(texts) -> list[dict]:
    """The `{"unum_usage": ...}` JSON lines of the function servers' logs (lines of concurrent
    executions may interleave, so each object is decoded where it starts)."""
    out = []
    dec = json.JSONDecoder()
    for text in texts:
        pos = text.find('{"unum_usage"')
        while pos >= 0:
            try:
                rec, end = dec.raw_decode(text, pos)
                out.append(rec)
            except json.JSONDecodeError:
                end = pos + 1
            pos = text.find('{"unum_usage"', end)
    return out
