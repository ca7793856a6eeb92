"""CPU of one local execution without the platform: a chain's instances in one process.

    python bench/local_instance.py [--steps 10] [--sessions 300] [--history full] [--statements]

Builds a chain of `steps` no-op functions for the local target (the bundles `unumctl` builds),
creates one `LocalFunction` per function in this process, each with its own SQLite
connection as a worker has (so, as in a worker, each execution starts with the page cache
that SQLite discarded because another connection wrote), and runs `sessions` sessions by
handing each execution's queued invocation to the next function directly: no platform, no
messages, no process wake-ups, warm caches. A thread checkpoints the WAL every 0.1 s, as the
platform does. Prints the CPU microseconds per execution (thread CPU time of
`LocalFunction.handle`; median and minimum over sessions of the per-session mean); with
--statements also the SQLite time per execution of each statement (wall µs). Compare with
`bench/local_perf.py chain` (`worker_cpu_ms_per_transition`): the difference is the workers'
messages and running cold. Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.local.datastore import SqliteDatastore  # noqa: E402
from runtime.local.entry import LocalFunction  # noqa: E402
from runtime.session import entry_payload  # noqa: E402
from unumctl_testing.apps import make_app  # noqa: E402
from unumctl.pipeline import deployment  # noqa: E402
from unumctl.local.platform import extract_bundles  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402

NOOP = "def handler(event, context):\n    return event\n"


class _TimedConnection:
    """A sqlite3 connection whose execute/executemany add their wall time per statement."""

    def __init__(self, db, acc: collections.Counter, cnt: collections.Counter):
        self._db, self._acc, self._cnt = db, acc, cnt

    def __getattr__(self, name):
        return getattr(self._db, name)

    @property
    def in_transaction(self):
        return self._db.in_transaction

    def _timed(self, fn, sql, *args):
        t = time.perf_counter()
        try:
            return fn(sql, *args)
        finally:
            self._acc[sql[:60]] += time.perf_counter() - t
            self._cnt[sql[:60]] += 1

    def execute(self, sql, *args):
        return self._timed(self._db.execute, sql, *args)

    def executemany(self, sql, *args):
        return self._timed(self._db.executemany, sql, *args)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--sessions", type=int, default=300)
    ap.add_argument("--gc", default="safe")
    ap.add_argument("--history", default="full")
    ap.add_argument("--statements", action="store_true", help="also time each SQL statement")
    a = ap.parse_args(argv)
    fns = {f"F{i}": ({**({"Start": True} if i == 0 else {}),
                      **({"Next": {"Name": f"F{i + 1}"}} if i < a.steps - 1 else {})}, NOOP)
           for i in range(a.steps)}
    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        app = load_app(make_app(tmp / "app", "instance-bench", fns, {"gc": a.gc, "history": a.history}))
        (tmp / "bundles").mkdir()
        dep = deployment(app, "local")
        bundles = extract_bundles({f.unum_name: f.zip_path for f in dep.functions}, tmp / "bundles")
        env = {"db": str(tmp / "unum.db"), "blobs": str(tmp / "blobs"), "owner": f"{os.getpid()}:0:bench",
               "wal_autocheckpoint": 16384, "max_attempts": 3}
        instances = {fn: LocalFunction(str(d), env, lambda msg: None) for fn, d in bundles.items()}
        acc: collections.Counter = collections.Counter()
        cnt: collections.Counter = collections.Counter()
        for f in instances.values():
            f.coalesce = True  # notices kept in f.notices, as a worker does
            if a.statements:
                f.ds.db = _TimedConnection(f.ds.db, acc, cnt)
        checkpointer = SqliteDatastore(env["db"])
        stop = threading.Event()

        def checkpoints():
            while not stop.wait(0.1):
                checkpointer.checkpoint()

        threading.Thread(target=checkpoints, daemon=True).start()

        def session(k: int) -> float:
            msg = ("F0", entry_payload(f"s{k}", {"x": 1}), None)
            n, cpu = 0, 0.0
            while msg is not None:
                fn, payload, qid = msg
                f = instances[fn]
                t0 = time.thread_time()
                f.handle(payload, 1, n, qid, qid is not None)
                cpu += time.thread_time() - t0
                n += 1
                msg = next(((fn2, p2, i) for notice, _ in f.notices for i, fn2, p2 in notice), None)
            return cpu / n

        for k in range(20):  # warm-up
            session(-k - 1)
        acc.clear()
        cnt.clear()
        per = [session(k) for k in range(a.sessions)]
        stop.set()
        out = {"steps": a.steps, "sessions": a.sessions, "gc": a.gc, "history": a.history,
               "cpu_us_per_execution": round(statistics.median(per) * 1e6, 1),
               "cpu_us_per_execution_min": round(min(per) * 1e6, 1),
               "loadavg": [round(x, 2) for x in os.getloadavg()]}
        if a.statements:
            n = a.sessions * a.steps
            out["sqlite_us_per_execution"] = {q: [round(v / n * 1e6, 1), round(cnt[q] / n, 2)]
                                              for q, v in acc.most_common()}
        print(json.dumps(out))
        for f in instances.values():
            f.ds.close()
        checkpointer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
