"""Firestore billed operations per transition, by engine call, for chain and map + fan-in.

    python bench/firestore_ops.py [--branches 100] [--gc safe,eager,none] [--json]
    python bench/firestore_ops.py --example wordcount [--gc safe] [--json]

Runs the real runtime engine in one process over `runtime/gcp/datastore.py`
(FirestoreDatastore) on the Firestore emulator (started here on a free 127.0.0.1 port and
stopped by process id, or the one FIRESTORE_EMULATOR_HOST names), with the shapes and FIFO
invoker of bench/datastore_ops.py. Each Datastore call's billed units (the adapter's own
`usage`: document reads, writes, deletes, counted as Firestore bills them, see
docs/gcp.md "What a transition costs") are attributed to the port method that issued them,
so the table says where each read, write and delete of a transition comes from. Documents
still there when the session is over are counted as `ttl.deletes`: the TTL policy deletes
them later, and Firestore bills a TTL delete as a delete (`result` in every mode; with
`gc: none` everything).
A transition is one invocation of a function by another one (chain of 10: 9; map + fan-in
of N branches: 2N). With --example, the example's GCP bundles (unumctl build) run in this
process on its input.json, with the manifest's gc mode unless --gc is given, and a
transition is one function execution (as bench/gcp_calls.py counts them; history off).
Prices: unumctl/cost/prices.json ("gcp").
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.datastore_ops import FifoInvoker, shapes  # noqa: E402
from runtime.engine import Engine, Options  # noqa: E402
from runtime.ir import build_workflow, load_function  # noqa: E402
from runtime.local.datastore import FileBlobStore  # noqa: E402
from runtime.ports import Datastore  # noqa: E402
from runtime.session import entry_payload  # noqa: E402
from unumctl.cost.prices import load_prices  # noqa: E402


class ByMethod(Datastore):
    """Delegates to a FirestoreDatastore and attributes the growth of its `usage` (reads,
    writes, deletes) during each call to the port method called: Counter keys
    `<method>.<unit>`."""

    def __init__(self, inner):
        self.inner = inner
        self.max_item_bytes = inner.max_item_bytes
        self.units: Counter[str] = Counter()

    def _call(self, method, *args):
        before = Counter(self.inner.usage)
        try:
            return getattr(self.inner, method)(*args)
        finally:
            for unit, n in (Counter(self.inner.usage) - before).items():
                self.units[f"{method}.{unit}"] += n

    def get_many(self, session, names):
        return self._call("get_many", session, names)

    def create_if_absent(self, session, name, item, expires_at):
        return self._call("create_if_absent", session, name, item, expires_at)

    def set_add(self, session, name, member, expires_at):
        return self._call("set_add", session, name, member, expires_at)

    def put(self, session, name, item, expires_at):
        return self._call("put", session, name, item, expires_at)

    def delete(self, session, names):
        return self._call("delete", session, list(names))

    def sweep(self, session, keep):
        return self._call("sweep", session, keep)


def _documents(client, session: str) -> int:
    """Documents of `session` left in the bench collection (items, counters, members)."""
    from google.cloud import firestore
    q = client.collection("unum-bench-ops").where(
        filter=firestore.FieldFilter("session", "==", session)).select([])
    return sum(1 for _ in q.stream())


def run(client, nodes, value, gc: str) -> tuple[Counter, int]:
    """One session of the workflow on Firestore; (units by method, invocations)."""
    from runtime.gcp.datastore import FirestoreDatastore

    wf = build_workflow((load_function(n), n["Name"]) for n in nodes)
    inner = FirestoreDatastore(client, "unum-bench-ops")
    ds = ByMethod(inner)
    session = str(uuid.uuid4())
    with tempfile.TemporaryDirectory() as tmp:
        blobs = FileBlobStore(Path(tmp) / "blobs")
        inv = FifoInvoker()
        engines = {name: Engine(ir, lambda e, c: e, ds, inv, blobs, Options(gc=gc))
                   for name, ir in wf.functions.items()}
        inv.queue.append((wf.entry.name, entry_payload(session, value)))
        n = 0
        while inv.queue:
            fn, payload = inv.queue.popleft()
            engines[fn].handle(payload)
            n += 1
    left = inner.dump(session)
    ds.units["ttl.deletes"] += _documents(client, session)
    expect = {session: ["result"]} if gc != "none" else None
    if expect is not None and left != expect:
        raise AssertionError(f"left behind: {left}")
    return ds.units, n


def run_example(client, example: Path, gc: str | None) -> tuple[Counter, int, str]:
    """One session of `example` (its built GCP bundles, in process) on Firestore; (units by
    method, executions, gc mode)."""
    import dataclasses
    import importlib

    from runtime.bundle import load_bundle
    from runtime.gcp.datastore import FirestoreDatastore
    from unumctl.build import build_app
    from unumctl.manifest import load_app

    inner = FirestoreDatastore(client, "unum-bench-ops")
    ds = ByMethod(inner)
    session = str(uuid.uuid4())
    with tempfile.TemporaryDirectory() as tmp:
        import zipfile
        engines = {}
        blobs = FileBlobStore(Path(tmp) / "blobs")
        inv = FifoInvoker()
        for fn, art in build_app(load_app(example), "gcp", Path(tmp) / "build").items():
            root = Path(tmp) / "bundles" / fn
            with zipfile.ZipFile(art.path) as zf:
                zf.extractall(root)
            mod = json.loads((root / "unum_function.json").read_text())["handler"].rpartition(".")[0]
            sys.modules.pop(mod, None)  # every function's handler module may be called `app`
            importlib.invalidate_caches()
            b = load_bundle(root)
            sys.path.remove(str(root))
            if gc is not None:
                b.options = dataclasses.replace(b.options, gc=gc)
            b.options = dataclasses.replace(b.options, history="off")
            engines[fn] = b.engine(ds, inv, blobs)
            mode = b.options.gc
        inv.queue.append((next(iter(e for e in engines.values() if e.ir.start)).ir.name,
                          entry_payload(session, json.loads((example / "input.json").read_text()))))
        n = 0
        while inv.queue:
            fn, payload = inv.queue.popleft()
            engines[fn].handle(payload)
            n += 1
    result = inner.get(session, "result")
    ds.units["ttl.deletes"] += _documents(client, session)
    if not result or result.get("status") != "SUCCEEDED":
        raise AssertionError(f"{example.name}: session did not succeed: {str(result)[:300]}")
    return ds.units, n, mode


def summary(units: Counter, transitions: int, invocations: int, price: dict) -> dict:
    """Per-transition units (total and by method) and Firestore $ per million sessions."""
    totals: Counter[str] = Counter()
    for k, v in units.items():
        totals[k.split(".")[1]] += v
    usd = sum(totals[u] * price[u] / 1e5 for u in price) * 1e6
    return {"transitions": transitions, "invocations": invocations,
            "per_transition": {u: round(totals[u] / transitions, 2) for u in price},
            "by_method_per_transition": {k: round(v / transitions, 2) for k, v in sorted(units.items())},
            "firestore_usd_per_million_sessions": round(usd, 2)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--branches", type=int, default=100)
    ap.add_argument("--gc", default="safe,eager,none")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--example", action="append", help="an example's name (repeatable)")
    args = ap.parse_args(argv)
    g = load_prices()["gcp"]
    price = {"reads": g["firestore_read_per_100k"], "writes": g["firestore_write_per_100k"],
             "deletes": g["firestore_delete_per_100k"]}
    emu = None
    if not os.environ.get("FIRESTORE_EMULATOR_HOST"):
        from unumctl.gcp.emulate.emulators import firestore_command, free_port, start_process
        port = free_port()
        emu = start_process("firestore", firestore_command("127.0.0.1", port), "127.0.0.1", port,
                            Path(tempfile.mkdtemp()) / "logs")
        os.environ["FIRESTORE_EMULATOR_HOST"] = emu.address
    report = {}
    try:
        from google.cloud import firestore
        client = firestore.Client(project="unum-bench")
        for ex in args.example or []:
            gcs = [x.strip() for x in args.gc.split(",") if x.strip()] if "--gc" in (argv or sys.argv) else [None]
            for gc in gcs:
                units, n, mode = run_example(client, ROOT / "examples" / ex, gc)
                report[f"{ex} [gc={mode}]"] = summary(units, n, n, price)
        for name, (nodes, value, transitions) in ([] if args.example else shapes(args.branches).items()):
            for gc in [x.strip() for x in args.gc.split(",") if x.strip()]:
                units, invocations = run(client, nodes, value if value is not None else 1, gc)
                report[f"{name} [gc={gc}]"] = summary(units, transitions, invocations, price)
    finally:
        if emu is not None:
            emu.stop()
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        for k, v in report.items():
            pt = v["per_transition"]
            print(f"{k}: {v['transitions']} transitions; per transition reads={pt['reads']} "
                  f"writes={pt['writes']} deletes={pt['deletes']}; "
                  f"Firestore ${v['firestore_usd_per_million_sessions']}/M sessions")
            print("   by method:", ", ".join(f"{a}={b}" for a, b in v["by_method_per_transition"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
