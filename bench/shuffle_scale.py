"""Shuffle groups at scale: datastore operations per object and wall time (issue 26 item 2).

    python bench/shuffle_scale.py [--json] [--keys 100,1000,3000] [--producers 8] [--no-local]

1. In one process, the real engine over the SQLite datastore with a counting wrapper around
   the Datastore port and a FIFO invoker (bench/datastore_ops.py), for N producers that each
   emit one [key, value] pair per key (K keys, N*K objects), two ways:
   - shuffle: Src -Map-> Prod[N] -Shuffle-> Cons[K] -Fan-in-> Join (runtime/triggers/shuffle.py);
   - explicit: Src -Map-> Prod[N] -Fan-in-> Part -Map-> Cons[K] -Fan-in-> Join, the
     shuffle written by hand as a partition function (what Step Functions needs: Map,
     a Task, Map, a Task, as examples/wordcount-sfn does).
   Prints datastore calls by operation and item kind (ckpt/, shuffle/, fanin/, gc/, result),
   per object and per key, and the bytes the consumers' inputs took.
2. examples/shuffle-index over the whole play (input-full.json, 3,170 keys) on the local
   target (worker processes, SQLite): wall time of `LocalRunner.run`.
Numbers are printed, never asserted (README: `make bench`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from datastore_ops import FifoInvoker  # noqa: E402
from runtime.engine import Engine, Options  # noqa: E402
from runtime.ir import build_workflow, load_function  # noqa: E402
from runtime.local.datastore import FileBlobStore, SqliteDatastore  # noqa: E402
from runtime.ports import Datastore  # noqa: E402
from runtime.session import entry_payload  # noqa: E402
from runtime.storage import encode  # noqa: E402


def _kind(name: str) -> str:
    return name.split("/", 1)[0] if "/" in name else name


class KindCounter(Datastore):
    """Delegates to `inner`; counts calls by (operation, item kind) and items read."""

    def __init__(self, inner: Datastore):
        self.inner = inner
        self.max_item_bytes = inner.max_item_bytes
        self.calls: Counter[str] = Counter()

    def get_many(self, session, names):
        self.calls["read_calls"] += 1
        for n in names:
            self.calls[f"item_reads:{_kind(n)}"] += 1
        return self.inner.get_many(session, names)

    def create_if_absent(self, session, name, item, expires_at):
        self.calls[f"create:{_kind(name)}"] += 1
        return self.inner.create_if_absent(session, name, item, expires_at)

    def set_add(self, session, name, member, expires_at):
        self.calls[f"set_add:{_kind(name)}"] += 1
        return self.inner.set_add(session, name, member, expires_at)

    def put(self, session, name, item, expires_at):
        self.calls[f"put:{_kind(name)}"] += 1
        return self.inner.put(session, name, item, expires_at)

    def delete(self, session, names):
        names = list(names)
        self.calls["delete_calls"] += 1
        for n in names:
            self.calls[f"delete:{_kind(n)}"] += 1
        return self.inner.delete(session, names)

    def sweep(self, session, keep):
        self.calls["sweep_calls"] += 1
        return self.inner.sweep(session, keep)


class SizedInvoker(FifoInvoker):
    """FIFO invoker that also sums the bytes of the payloads sent to `target`."""

    def __init__(self, target: str):
        super().__init__()
        self.target, self.bytes, self.calls = target, 0, 0

    def invoke_many(self, calls, delay=0.0):
        for fn, payload in calls:
            if fn == self.target:
                self.bytes += len(encode(payload))
                self.calls += 1
        super().invoke_many(calls, delay)


def workflows(keys: int, producers: int):
    """(nodes, handlers) of the shuffle and the explicit construction for N x K objects."""
    src = {"Name": "Src", "Start": True, "Next": {"Name": "Prod", "Type": "Map"}}
    join = {"Name": "Join"}
    cons_join = {"Name": "Join", "Type": "Fan-in", "Values": ["Cons-UnumIndex-*"], "Payload Modifiers": ["Pop"]}
    shuffle = [src, {"Name": "Prod", "Next": {"Name": "Cons", "Type": "Shuffle"}},
               {"Name": "Cons", "Next": cons_join}, join]
    explicit = [src, {"Name": "Prod", "Next": {"Name": "Part", "Type": "Fan-in", "Values": ["Prod-UnumIndex-*"],
                                               "Payload Modifiers": ["Pop"]}},
                {"Name": "Part", "Next": {"Name": "Cons", "Type": "Map"}},
                {"Name": "Cons", "Next": cons_join}, join]

    def prod(e, c):
        return [[f"key{k:05d}", [c.index, k]] for k in range(keys)]

    def part(e, c):  # the shuffle by hand: group every producer's pairs by key
        groups: dict = {}
        for out in e:
            for k, v in out:
                groups.setdefault(k, []).append(v)
        return [[k, groups[k]] for k in sorted(groups)]

    handlers_s = {"Src": lambda e, c: list(range(producers)), "Prod": prod,
                  "Cons": lambda e, c: [c.key, len(e)], "Join": lambda e, c: len(e)}
    handlers_x = {**handlers_s, "Part": part, "Cons": lambda e, c: [e[0], len(e[1])]}
    return {"shuffle": (shuffle, handlers_s), "explicit (fan-in + partition + Map)": (explicit, handlers_x)}


def run(nodes, handlers, gc: str) -> tuple[Counter, int, int, float, object]:
    wf = build_workflow((load_function(n), n["Name"]) for n in nodes)
    with tempfile.TemporaryDirectory() as tmp:
        inner = SqliteDatastore(Path(tmp) / "db.sqlite")
        ds = KindCounter(inner)
        inv = SizedInvoker("Cons")
        blobs = FileBlobStore(Path(tmp) / "blobs")
        engines = {n: Engine(ir, handlers[n], ds, inv, blobs, Options(gc=gc)) for n, ir in wf.functions.items()}
        inv.queue.append((wf.entry.name, entry_payload("bench", None)))
        t = time.perf_counter()
        n = 0
        while inv.queue:
            fn, payload = inv.queue.popleft()
            engines[fn].handle(payload)
            n += 1
        wall = time.perf_counter() - t
        result = inner.get("bench", "result")
        left = inner.dump()
        inner.close()
    assert left == {"bench": ["result"]} or gc == "none", left
    return ds.calls, n, inv.bytes, wall, result


def local_full() -> dict:
    from unumctl.local import LocalRunner
    from unumctl.pipeline import load as load_app
    ex = ROOT / "examples" / "shuffle-index"
    data = json.loads((ex / "input-full.json").read_text())
    with tempfile.TemporaryDirectory() as tmp, LocalRunner(load_app(ex), state=Path(tmp), quiet=True) as r:
        t = time.perf_counter()
        item = r.run(data, timeout=600)
        wall = time.perf_counter() - t
    ok = item.get("v") == json.loads((ex / "expected_output-full.json").read_text())
    return {"keys": item.get("v", {}).get("words"), "wall_s": round(wall, 2), "correct": ok}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--keys", default="100,1000,3000")
    ap.add_argument("--producers", type=int, default=8)
    ap.add_argument("--gc", default="safe")
    ap.add_argument("--no-local", action="store_true")
    args = ap.parse_args(argv)
    report: dict = {"in_process": []}
    for k in (int(x) for x in args.keys.split(",")):
        for name, (nodes, handlers) in workflows(k, args.producers).items():
            calls, inv, nbytes, wall, _ = run(nodes, handlers, args.gc)
            objects = k * args.producers
            total = sum(v for key, v in calls.items() if ":" in key or key.endswith("_calls"))
            report["in_process"].append({
                "construction": name, "keys": k, "producers": args.producers, "objects": objects,
                "invocations": inv, "wall_s": round(wall, 2), "consumer_payload_bytes": nbytes,
                "calls": dict(sorted(calls.items())),
                "item_reads_per_object": round(sum(v for key, v in calls.items() if key.startswith("item_reads"))
                                               / objects, 3),
                "ops_per_key": round(total / k, 2)})
    if not args.no_local:
        report["local_full_text"] = local_full()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for r in report["in_process"]:
        print(f"{r['construction']}: N={r['producers']} producers x K={r['keys']} keys = {r['objects']} objects, "
              f"{r['invocations']} invocations, {r['wall_s']} s in-process, consumer payloads {r['consumer_payload_bytes']} B")
        print("   " + ", ".join(f"{a}={b}" for a, b in r["calls"].items()))
        print(f"   item reads per object {r['item_reads_per_object']}, datastore calls per key {r['ops_per_key']}")
    if "local_full_text" in report:
        print("examples/shuffle-index input-full.json on local:", report["local_full_text"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
