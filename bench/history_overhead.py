"""Cost of the execution history per execution, in one process (no platform, no scheduling
noise): the engine runs, in turns, N executions of a no-op function with a Scalar continuation on the
local SQLite datastore, with runtime.history off, session-only and full (the local adapter,
runtime/local/history.py). Prints microseconds per execution (median of 7 rounds).

    python bench/history_overhead.py [--executions 2000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.engine import Engine, Options  # noqa: E402
from runtime.ir import load_function  # noqa: E402
from runtime.local.datastore import FileBlobStore, SqliteDatastore  # noqa: E402
from runtime.local.history import SqliteHistory  # noqa: E402
from runtime.ports import Invoker  # noqa: E402
from runtime.session import SESSION_CONTEXT, entry_payload  # noqa: E402


class Null(Invoker):
    def invoke_many(self, calls, delay=0.0):
        pass


LEVELS = ("off", "session-only", "full")


def engine(level: str, tmp: Path) -> Engine:
    ds = SqliteDatastore(tmp / f"{level}.db")
    ev = SqliteHistory(ds, level) if level != "off" else None
    ir = load_function({"Name": "A", "Next": {"Name": "B"}})
    return Engine(ir, lambda e, c: e, ds, Null(), FileBlobStore(tmp / "b"), Options(history=level), events=ev)


def rounds(n: int, tmp: Path, repeat: int = 7) -> dict[str, float]:
    """Median microseconds per execution per level; the levels take turns in every round."""
    engines = {lv: engine(lv, tmp) for lv in LEVELS}
    times: dict[str, list[float]] = {lv: [] for lv in LEVELS}
    for r in range(repeat):
        for lv, eng in engines.items():
            t0 = time.perf_counter()
            for i in range(n):
                eng.handle(entry_payload(f"s{r}-{i}", {"x": i}, context={SESSION_CONTEXT: {"Start": time.time()}}),
                           {"attempt": 1, "request_id": f"{r}/{i}"})
            times[lv].append((time.perf_counter() - t0) / n * 1e6)
    return {lv: statistics.median(v) for lv, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--executions", type=int, default=2000)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = {lv: round(v, 1) for lv, v in rounds(args.executions, Path(tmp)).items()}
    print(json.dumps({"executions": args.executions, "us_per_execution": out,
                      "full_minus_off_us": round(out["full"] - out["off"], 1)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
