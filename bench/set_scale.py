"""API calls and bytes per `set_add` for one fan-in of N branches, on moto_server (DynamoDB)
and the Firestore emulator, for the current adapters ("after") and the adapters of a git
revision ("before", default c4f974d: main before issue 8).

    .venv/bin/python bench/set_scale.py [--n 100 1000 10000] [--backends aws gcp]
                                        [--before-ref c4f974d] [--json out.json]

For each backend, implementation and N, one fan-in set receives the members
`W-UnumIndex-0 .. N-1` one add at a time (sequentially; the returned size is checked).
Observed on the wire by unumctl_testing/conformance/meters.py: API calls by operation, HTTP response
body bytes (DynamoDB JSON) or serialized response messages (Firestore gRPC), and request
bytes. Reported per add: mean calls, mean and max response bytes, mean request bytes; and
the total response bytes of the whole fan-in.

Sampling: when N is above `--full-max-<backend>`, the first N - S members are written
directly in the implementation's own layout (fast bulk writes, not measured) and only the
last S = `--sample` adds go through `set_add`; the first add of an empty set is measured
too, and the fan-in total is estimated as N x (first + mean of the last S) / 2 (exact for a
layout whose response grows linearly with the set, like the former DynamoDB string set, and
for a constant one). Such rows are marked `sampled`. Numbers are counts and bytes, never
timings (moto copies the whole table on every TransactWriteItems, so a full 10,000-member
run on moto takes many minutes; that is moto's cost, not DynamoDB's).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from unumctl.aws.emulate.moto_local import aws_env, find_moto_server, moto_server  # noqa: E402
from unumctl_testing.conformance.meters import ApiMeter, WireMeter  # noqa: E402

EXP = time.time() + 3600


def load_revision(module: str, rel_path: str, ref: str):
    """Import `rel_path` as it is at git `ref`, as module `module` (a sibling of the current
    adapter, so its relative imports resolve)."""
    src = subprocess.run(["git", "show", f"{ref}:{rel_path}"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / Path(rel_path).name
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(module, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[module] = mod
    spec.loader.exec_module(mod)
    return mod


def member(i: int) -> str:
    return f"W-UnumIndex-{i}"


def measure(ds, meter, prefill, n: int, full_max: int, sample: int) -> dict:
    """Add members 0..n-1 to one set of `ds` (a fresh session), metered."""
    session = f"bench-{uuid.uuid4().hex[:12]}"
    name = "fanin/J"
    sampled = n > full_max
    first_bytes = None
    if sampled:
        probe = f"bench-{uuid.uuid4().hex[:12]}"
        meter.reset()
        assert ds.set_add(probe, name, member(0), EXP) == 1
        first_bytes = sum(meter.response_bytes)
        start = n - sample
        prefill(session, name, start)
    else:
        start = 0
    meter.reset()
    per_add = []
    for i in range(start, n):
        before = len(meter.response_bytes)
        size = ds.set_add(session, name, member(i), EXP)
        assert size == i + 1, (size, i + 1)
        per_add.append(sum(meter.response_bytes[before:]))
    adds = n - start
    mean_resp = sum(per_add) / adds
    total = (n * (first_bytes + mean_resp) / 2) if sampled else sum(per_add)
    return {"n": n, "sampled": sampled, "adds_measured": adds,
            "calls_per_add": round(meter.calls / adds, 3),
            "ops_per_add": {k: round(v / adds, 3) for k, v in sorted(meter.ops.items())},
            "response_bytes_per_add_mean": round(mean_resp, 1),
            "response_bytes_per_add_max": max(per_add),
            "request_bytes_per_add_mean": round(sum(meter.request_bytes) / adds, 1),
            "fanin_total_response_bytes": int(total)}


# ---------------------------------------------------------------- DynamoDB on moto
def run_aws(ns, before_ref, full_max, sample) -> dict:
    if find_moto_server() is None:
        raise SystemExit("moto_server not installed (pip install 'moto[server]')")
    with moto_server() as url:
        os.environ.update(aws_env(url))
        from runtime.aws import datastore as after_mod
        from unumctl_testing.aws.deployment import create_datastore_for_tests
        before_mod = load_revision("runtime.aws._datastore_before", "runtime/aws/datastore.py", before_ref)
        out = {}
        for label, mod in (("before", before_mod), ("after", after_mod)):
            rows = []
            for n in ns:
                table = f"unum-bench-{uuid.uuid4().hex[:8]}"
                create_datastore_for_tests(table, table)  # one table per run: moto copies it per transaction
                ds = mod.DynamoDBDatastore(table)
                meter = WireMeter(ds.client)
                rows.append(measure(ds, meter, _aws_prefill(ds, label), n, full_max, sample))
                print(f"aws {label:6} N={n:>6}: {_line(rows[-1])}", flush=True)
            out[label] = rows
        return out


def _aws_prefill(ds, label):
    """Bulk-write members 0..count-1 in the layout of `label` (not metered)."""
    import boto3

    client = boto3.client("dynamodb")
    exp = {"N": str(int(EXP))}

    def before(session, name, count):  # one string set, ADD in chunks of 500
        for i in range(0, count, 500):
            client.update_item(TableName=ds.table, Key=ds._key(session, name),
                               UpdateExpression="ADD members :m SET expires_at = :e",
                               ExpressionAttributeValues={":m": {"SS": [member(j) for j in range(i, min(count, i + 500))]},
                                                          ":e": exp})

    def after(session, name, count):  # one item per member + the counter
        from runtime.aws.datastore import SEP
        reqs = [{"PutRequest": {"Item": {**ds._key(session, f"{name}{SEP}m{member(j)}"),
                                         "m": {"S": member(j)}, "expires_at": exp}}}
                for j in range(count)]
        for i in range(0, len(reqs), 25):
            client.batch_write_item(RequestItems={ds.table: reqs[i:i + 25]})
        client.put_item(TableName=ds.table, Item={**ds._key(session, name), "size": {"N": str(count)},
                                                  "expires_at": exp})
    return before if label == "before" else after


# ---------------------------------------------------------------- Firestore emulator
def run_gcp(ns, before_ref, full_max, sample) -> dict:
    from unumctl.gcp.emulate.emulators import Emulators

    with tempfile.TemporaryDirectory() as tmp, Emulators(Path(tmp) / "emu") as emu:
        os.environ.update(emu.env)
        from google.cloud import firestore

        from runtime.gcp import datastore as after_mod
        before_mod = load_revision("runtime.gcp._datastore_before", "runtime/gcp/datastore.py", before_ref)
        out = {}
        for label, mod in (("before", before_mod), ("after", after_mod)):
            rows = []
            for n in ns:
                client = firestore.Client(project=emu.project)
                coll = f"unum-bench-{uuid.uuid4().hex[:8]}"
                ds = mod.FirestoreDatastore(client, coll)
                meter = ApiMeter(client)
                rows.append(measure(ds, meter, _gcp_prefill(firestore.Client(project=emu.project), mod, coll),
                                    n, full_max, sample))
                print(f"gcp {label:6} N={n:>6}: {_line(rows[-1])}", flush=True)
                client.close()
            out[label] = rows
        return out


def _gcp_prefill(client, mod, coll):
    """Bulk-write members 0..count-1 as member documents + the counter document (the layout
    of both revisions), 400 per commit (not metered)."""
    def prefill(session, name, count):
        c = client.collection(coll)
        exp = mod._ts(EXP)
        for i in range(0, count, 400):
            batch = client.batch()
            for j in range(i, min(count, i + 400)):
                batch.set(c.document(f"{mod.doc_id(session, name)}|{mod._quote(member(j))}"),
                          {"session": session, "name": name, "member": member(j), "expires_at": exp})
            batch.commit()
        c.document(mod.doc_id(session, name)).set({"session": session, "name": name, "size": count,
                                                    "expires_at": exp})
    return prefill


def _line(r: dict) -> str:
    ops = ", ".join(f"{k} {v:g}" for k, v in r["ops_per_add"].items())
    return (f"{r['calls_per_add']:.2f} calls/add ({ops}); response bytes/add mean "
            f"{r['response_bytes_per_add_mean']:,.0f} max {r['response_bytes_per_add_max']:,}; "
            f"fan-in total {r['fanin_total_response_bytes']:,} B{' (sampled)' if r['sampled'] else ''}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--backends", nargs="+", default=["aws", "gcp"], choices=["aws", "gcp"])
    ap.add_argument("--before-ref", default="c4f974d")
    ap.add_argument("--sample", type=int, default=100)
    ap.add_argument("--full-max-aws", type=int, default=1000)
    ap.add_argument("--full-max-gcp", type=int, default=10000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    report = {"before_ref": args.before_ref}
    if "aws" in args.backends:
        report["aws"] = run_aws(args.n, args.before_ref, args.full_max_aws, args.sample)
    if "gcp" in args.backends:
        report["gcp"] = run_gcp(args.n, args.before_ref, args.full_max_gcp, args.sample)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2))
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
