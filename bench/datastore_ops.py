"""Datastore operations per transition, by kind, for chain, fan-out and fan-in.

    python bench/datastore_ops.py [--json]

Runs the real runtime engine in one process over the SQLite datastore, with a counting
wrapper around the Datastore port and a FIFO in-process invoker, for three shapes:
  chain:   F0 -> F1 -> ... -> F9 (10 invocations, 9 transitions)
  fan-out: S -> Map -> 100 x W (terminal via a final fan-in, see fan-in)
  fan-in:  S -> Map -> N x W -> fan-in -> J
in each GC mode (safe, eager). Reported per transition (an invocation of a function by
another one), next to the paper's chain figure (1 write + 1 read + 1 delete, seed 001 §5).
Item reads are counted per item (a batch read of 2 items = 1 call, 2 items).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter, deque
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runtime.engine import Engine, Options  # noqa: E402
from runtime.ir import build_workflow, load_function  # noqa: E402
from runtime.local.datastore import FileBlobStore, SqliteDatastore  # noqa: E402
from runtime.ports import Datastore, Invoker  # noqa: E402
from runtime.session import entry_payload  # noqa: E402


class CountingDatastore(Datastore):
    """Delegates to `inner` and counts calls by operation (and items read)."""

    def __init__(self, inner: Datastore):
        self.inner = inner
        self.max_item_bytes = inner.max_item_bytes
        self.calls: Counter[str] = Counter()

    def get_many(self, session, names):
        self.calls["read_calls"] += 1
        self.calls["items_read"] += len(names)
        return self.inner.get_many(session, names)

    def create_if_absent(self, session, name, item, expires_at):
        self.calls["create_if_absent"] += 1
        return self.inner.create_if_absent(session, name, item, expires_at)

    def set_add(self, session, name, member, expires_at):
        self.calls["set_add"] += 1
        return self.inner.set_add(session, name, member, expires_at)

    def put(self, session, name, item, expires_at):
        self.calls["put"] += 1
        return self.inner.put(session, name, item, expires_at)

    def delete(self, session, names):
        names = list(names)
        self.calls["delete_calls"] += 1
        self.calls["items_deleted"] += len(names)
        return self.inner.delete(session, names)

    def sweep(self, session, keep):
        self.calls["sweep_calls"] += 1
        n = self.inner.sweep(session, keep)
        self.calls["items_swept"] += n
        return n


class FifoInvoker(Invoker):
    """In-process asynchronous invoke: appends to a FIFO drained by `run`."""

    max_payload_bytes = 256 * 1024

    def __init__(self):
        self.queue: deque = deque()

    def invoke_many(self, calls, delay=0.0):
        self.queue.extend(calls)


def run(nodes: list[dict], handlers: dict, value, gc: str) -> tuple[Counter, int, dict]:
    """Run one session of the workflow; returns (datastore counts, invocations, result)."""
    wf = build_workflow((load_function(n), n["Name"]) for n in nodes)
    with tempfile.TemporaryDirectory() as tmp:
        inner = SqliteDatastore(Path(tmp) / "db.sqlite")
        ds = CountingDatastore(inner)
        blobs = FileBlobStore(Path(tmp) / "blobs")
        inv = FifoInvoker()
        engines = {name: Engine(ir, handlers.get(name, lambda e, c: e), ds, inv, blobs, Options(gc=gc))
                   for name, ir in wf.functions.items()}
        inv.queue.append((wf.entry.name, entry_payload("bench", value)))
        n = 0
        while inv.queue:
            fn, payload = inv.queue.popleft()
            engines[fn].handle(payload)
            n += 1
        result = inner.get("bench", "result")
        left = inner.dump()
        inner.close()
    assert left == {"bench": ["result"]}, left
    return ds.calls, n, result


def shapes(n_branches: int = 100):
    chain = [{"Name": f"F{i}", **({"Start": True} if i == 0 else {}),
              **({"Next": {"Name": f"F{i + 1}"}} if i < 9 else {})} for i in range(10)]
    fanin = [{"Name": "S", "Start": True, "Next": {"Name": "W", "Type": "Map"}},
             {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                    "Payload Modifiers": ["Pop"]}},
             {"Name": "J"}]
    return {"chain (10 functions)": (chain, None, 9),
            f"map fan-out + fan-in ({n_branches} branches)": (fanin, list(range(n_branches)), 2 * n_branches)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    report = {}
    for name, (nodes, value, transitions) in shapes().items():
        for gc in ("safe", "eager"):
            calls, invocations, result = run(nodes, {}, value if value is not None else 1, gc)
            per = {k: round(v / transitions, 2) for k, v in sorted(calls.items())}
            report[f"{name} [gc={gc}]"] = {"transitions": transitions, "invocations": invocations,
                                           "per_transition": per, "total": dict(calls)}
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print("paper (seed 001 §5): chain transition = 1 write + 1 read + 1 delete")
        for k, v in report.items():
            print(f"{k}: {v['transitions']} transitions")
            print("   per transition:", ", ".join(f"{a}={b}" for a, b in v["per_transition"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
