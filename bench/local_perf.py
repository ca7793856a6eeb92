"""Local-target performance: chain overhead per transition and Map + fan-in scaling.

    python bench/local_perf.py chain [--steps 100] [--sessions 20] [--history full|session-only|off]
    python bench/local_perf.py map [--branches 100,1000,10000,100000] [--repeat 1]
    python bench/local_perf.py loop [--iterations 100000]

chain: a chain of `steps` distinct no-op functions, warm (every worker started by a first
session), then `sessions` sessions one after another. Overhead per transition =
(median session latency - the same no-op handlers called directly in one process) / (steps-1);
cpu_ms_per_transition: CPU seconds of the platform process and all workers during the sessions
/ (sessions x (steps-1)), less sensitive to machine load than the latency;
worker_cpu_ms_per_transition: the workers' part of it.
map: S -> Map -> N x W -> fan-in -> J, no-op functions; end-to-end seconds per N, seconds per
branch (median of --repeat sessions), CPU ms per branch (platform process + workers), and the
peak resident memory of the platform process plus all worker processes (sampled from /proc
every 50 ms). Issue 13's figure: `python bench/local_perf.py map --branches
100,1000,10000,100000 --repeat 1` (target: 100,000 in <= 20 s, flat per-branch cost, < 1 GiB).
loop: A -> L (a cycle that Pops its frame, `iterations` passes) -> D, one session, with
runtime.max_transitions raised above it: seconds, ms per pass, peak memory.
Numbers are printed, never asserted.
"""

from __future__ import annotations

import argparse
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

from unumctl_testing.apps import make_app  # noqa: E402
from unumctl.local import LocalRunner  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402

NOOP = "def handler(event, context):\n    return event\n"


def _noop(event, context):
    return event


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (/proc/<pid>/stat fields 14-15)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode(errors="replace")
        fields = stat[stat.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _rss_kib(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class PeakMemory:
    """Samples the summed RSS of this process and the platform's workers."""

    def __init__(self, runner: LocalRunner):
        self.runner = runner
        self.peak_kib = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        while not self._stop.is_set():
            pids = [os.getpid()] + self.runner.platform.worker_pids()
            self.peak_kib = max(self.peak_kib, sum(_rss_kib(p) for p in pids))
            time.sleep(0.05)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def bench_chain(steps: int, sessions: int, gc: str, history: str = "full") -> dict:
    fns = {f"F{i}": ({**({"Start": True} if i == 0 else {}),
                      **({"Next": {"Name": f"F{i + 1}"}} if i < steps - 1 else {})}, NOOP)
           for i in range(steps)}
    with tempfile.TemporaryDirectory() as tmp:
        app = load_app(make_app(Path(tmp) / "app", "chain-bench", fns, {"gc": gc, "history": history}))
        with LocalRunner(app, state=Path(tmp) / "state", quiet=True, workers_per_function=1,
                         max_workers=steps + 10) as runner:
            runner.run({"x": 1}, timeout=300)  # warm-up: starts every worker
            workers = runner.platform.worker_pids()
            cpu0 = _cpu_s(os.getpid())
            wcpu0 = sum(_cpu_s(p) for p in workers)
            lat = []
            for _ in range(sessions):
                t0 = time.perf_counter()
                runner.run({"x": 1}, timeout=300)
                lat.append(time.perf_counter() - t0)
            wcpu = sum(_cpu_s(p) for p in workers) - wcpu0
            cpu = _cpu_s(os.getpid()) - cpu0 + wcpu
    # the same no-op handler body called directly in one process
    handlers = [_noop] * steps
    t0 = time.perf_counter()
    for _ in range(1000):
        v = {"x": 1}
        for h in handlers:
            v = h(v, None)
    direct = (time.perf_counter() - t0) / 1000
    med = statistics.median(lat)
    return {"steps": steps, "sessions": sessions, "gc": gc, "history": history, "median_session_s": round(med, 4),
            "p90_session_s": round(sorted(lat)[int(0.9 * len(lat)) - 1], 4),
            "direct_s": direct,
            "overhead_ms_per_transition": round((med - direct) / (steps - 1) * 1000, 3),
            # CPU of the platform process and every worker, per transition: less sensitive to
            # the machine's load than the latency (a loaded machine delays wake-ups)
            "cpu_ms_per_transition": round(cpu / (sessions * (steps - 1)) * 1000, 3),
            # of which the instances (worker processes: the engine, SQLite, their messages);
            # the rest is the platform process (dispatcher, WAL checkpoints, this client)
            "worker_cpu_ms_per_transition": round(wcpu / (sessions * (steps - 1)) * 1000, 3),
            "loadavg": [round(x, 2) for x in os.getloadavg()]}


def _set_memory(root: Path, mb: int) -> None:
    """Give every function of the app at `root` `mb` MB (the local target enforces it)."""
    import yaml
    path = root / "unumctl.yaml"
    doc = yaml.safe_load(path.read_text())
    for spec in doc["functions"].values():
        spec["memory"] = mb
    path.write_text(yaml.safe_dump(doc, sort_keys=False))


def bench_map(branches: list[int], workers: int, repeat: int = 5) -> list[dict]:
    fns = {"S": ({"Start": True, "Next": {"Name": "W", "Type": "Map"}}, NOOP),
           "W": ({"Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, NOOP),
           "J": ({}, "def handler(event, context):\n    return len(event)\n")}
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        root = make_app(Path(tmp) / "app", "map-bench", fns)
        _set_memory(root, max(128, max(branches) // 100))  # the source builds every payload
        app = load_app(root)
        with LocalRunner(app, state=Path(tmp) / "state", quiet=True,
                         workers_per_function=workers) as runner:
            runner.run(list(range(4)), timeout=60)  # warm-up
            for n in branches:
                times = []
                pids = [os.getpid()] + runner.platform.worker_pids()
                cpu0 = sum(_cpu_s(p) for p in pids)
                with PeakMemory(runner) as mem:
                    for _ in range(repeat):
                        t0 = time.perf_counter()
                        item = runner.run(list(range(n)), timeout=3600)
                        times.append(time.perf_counter() - t0)
                        runner.platform.wait_idle(600)
                        assert item["v"] == n, item
                cpu = sum(_cpu_s(p) for p in set(pids + runner.platform.worker_pids())) - cpu0
                dt = statistics.median(times)
                out.append({"branches": n, "repeats": repeat, "median_seconds": round(dt, 3),
                            "ms_per_branch": round(dt / n * 1000, 3),
                            "cpu_ms_per_branch": round(cpu / (repeat * n) * 1000, 3),
                            "peak_rss_mib": round(mem.peak_kib / 1024, 1), "workers_per_function": workers,
                            "loadavg": [round(x, 2) for x in os.getloadavg()]})
                print(json.dumps(out[-1]), flush=True)
    return out


def bench_loop(iterations: int) -> dict:
    fns = {"A": ({"Start": True, "Next": {"Name": "L"}}, NOOP),
           "L": ({"Next": [{"Name": "L", "Conditional": "$out > 0", "Payload Modifiers": ["Pop"]},
                           {"Name": "D", "Conditional": "$out <= 0", "Payload Modifiers": ["Pop"]}]},
                 "def handler(event, context):\n    return event - 1\n"),
           "D": ({}, "def handler(event, context):\n    return context.instance\n")}
    with tempfile.TemporaryDirectory() as tmp:
        app = load_app(make_app(Path(tmp) / "app", "loop-bench", fns,
                                {"max_transitions": iterations + 10}))
        with LocalRunner(app, state=Path(tmp) / "state", quiet=True, workers_per_function=1) as runner:
            with PeakMemory(runner) as mem:
                t0 = time.perf_counter()
                item = runner.run(iterations, timeout=3600)
                dt = time.perf_counter() - t0
            assert item["v"] == f"D-UnumIter-{iterations - 1}", item
            runner.platform.wait_idle(600)
            left = runner.platform.ds.dump()
    return {"iterations": iterations, "seconds": round(dt, 2), "ms_per_pass": round(dt / iterations * 1000, 3),
            "peak_rss_mib": round(mem.peak_kib / 1024, 1),
            "items_left": sum(len(v) for v in left.values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("chain")
    c.add_argument("--steps", type=int, default=100)
    c.add_argument("--sessions", type=int, default=20)
    c.add_argument("--gc", default="safe")
    c.add_argument("--history", default="full", help="runtime.history: full, session-only or off")
    m = sub.add_parser("map")
    m.add_argument("--branches", default="100,1000,10000")
    m.add_argument("--workers", type=int, default=2)
    m.add_argument("--repeat", type=int, default=5, help="sessions per size (median reported)")
    lp = sub.add_parser("loop")
    lp.add_argument("--iterations", type=int, default=100_000)
    args = ap.parse_args(argv)
    if args.cmd == "chain":
        print(json.dumps(bench_chain(args.steps, args.sessions, args.gc, args.history)))
    elif args.cmd == "loop":
        print(json.dumps(bench_loop(args.iterations)))
    else:
        bench_map([int(x) for x in args.branches.split(",")], args.workers, args.repeat)  # prints each row
    return 0


if __name__ == "__main__":
    sys.exit(main())
