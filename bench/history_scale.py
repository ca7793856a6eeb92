"""How long `unumctl history` takes for a large session on the local target.

    python bench/history_scale.py [--branches 10000] [--workers 2]

Runs one S -> Map -> N x W -> fan-in -> J session (no-op functions, runtime.history full),
waits until every execution has finished (so all events are written), then times
`unumctl history APP SESSION` (text and --json) and `unumctl describe` as subprocesses (wall
time, including the interpreter start), and the reader call alone in this process.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl_testing.apps import make_app  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402
from unumctl.observe import LocalHistoryReader  # noqa: E402

NOOP = "def handler(event, context):\n    return event\n"


def _cli_seconds(*args: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True, cwd=ROOT)
    dt = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(proc.stderr.decode())
    return dt, len(proc.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, default=10_000)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args(argv)
    n = args.branches
    fns = {"S": ({"Start": True, "Next": {"Name": "W", "Type": "Map"}}, NOOP),
           "W": ({"Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, NOOP),
           "J": ({}, "def handler(event, context):\n    return len(event)\n")}
    with tempfile.TemporaryDirectory() as tmp:
        root = make_app(Path(tmp) / "app", "history-bench", fns, {"history": "full"})
        app = load_app(root)
        with LocalRunner(app, quiet=True, workers_per_function=args.workers) as runner:
            t0 = time.perf_counter()
            item = runner.run(list(range(n)), "big", timeout=3600)
            session_s = time.perf_counter() - t0
            runner.platform.wait_idle(600)
            assert item["v"] == n, item
        reader = LocalHistoryReader(app)
        t0 = time.perf_counter()
        events = reader.history("big")
        read_s = time.perf_counter() - t0
        reader.close()
        text_s, text_bytes = _cli_seconds("history", str(root), "big")
        json_s, json_bytes = _cli_seconds("history", str(root), "big", "--json")
        desc_s, _ = _cli_seconds("describe", str(root), "big")
        print(json.dumps({"branches": n, "events": len(events), "session_seconds": round(session_s, 2),
                          "reader_history_seconds": round(read_s, 3),
                          "cli_history_text_seconds": round(text_s, 3), "text_bytes": text_bytes,
                          "cli_history_json_seconds": round(json_s, 3), "json_bytes": json_bytes,
                          "cli_describe_seconds": round(desc_s, 3)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
