"""A local instance killed (SIGKILL) between its commit point and the commit of its
transaction leaves the state of a crash just before the commit point (docs/local.md
"Transactions"), blob deletes included (runtime/local/datastore.py, FileBlobStore `gate`).

Issue 22, defect 1: the GC of B's input blob used to delete the file at once while the
tombstones and queue rows waited in the open transaction; a kill then lost the transaction
but not the delete, and the redelivered B dropped as "input already collected": the session
never ended."""

from __future__ import annotations

from runtime.faults import FaultSpec, SeededFaults
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

BIG = 300_000  # characters: above the local invoker's 256 KiB inline limit, so B's input is a blob


def chain_app(tmp_path):
    root = make_app(tmp_path / "app", "kill-chain", {
        "A": ({"Start": True, "Next": {"Name": "B"}},
              f"def handler(e, c):\n    return 'x' * ({BIG} + e['n'])\n"),
        "B": ({"Next": {"Name": "C"}}, "def handler(e, c):\n    return len(e)\n"),
        "C": ({}, "def handler(e, c):\n    return {'len': e}\n"),
    }, runtime={"max_delivery_attempts": 3})
    return load_app(root)


def test_a_kill_before_the_commit_keeps_the_input_blob_and_the_session_finishes(tmp_path):
    """Every execution is SIGKILLed after its egress (GC included), before its transaction
    commits, on each attempt but the last: the redelivery must still find B's input blob.
    Fails without the gate (FileBlobStore deleting at once): B's third attempt drops and the
    platform goes idle with no result."""
    spec = FaultSpec.parse("seed=1,kill_before_commit=1")
    with LocalRunner(chain_app(tmp_path), faults=spec, state=tmp_path / "state", quiet=True) as r:
        session = r.start({"n": 5}, "kill-1")
        r.platform.wait_idle(90)
        item = r.platform.result(session)
        stats = dict(r.platform.stats)
        left = r.platform.ds.dump(session)
        blob_dir = r.platform.blob_dir / session
        files = sorted(p.name for p in blob_dir.rglob("*") if p.is_file()) if blob_dir.exists() else []
    assert item is not None, f"the session never ended: {stats}"
    assert stats.get("kill_before_commit") == 6, stats  # A, B and C: 2 kills each
    assert item["status"] == "SUCCEEDED" and item["v"] == {"len": BIG + 5}
    assert left == {session: ["result"]} and files == []


def test_blob_deletes_wait_for_the_deferred_transaction(tmp_path):
    """The gate itself: a delete or sweep made inside a deferred transaction happens at its
    commit, is dropped by its rollback, and a put after a delete of the same key wins."""
    ds = SqliteDatastore(tmp_path / "unum.db")
    blobs = FileBlobStore(tmp_path / "blobs", gate=ds)
    for key in ("payload/B", "ckpt/A/1", "keep"):
        blobs.put("s", key, b"v")
    path = tmp_path / "blobs" / "s"
    ds.defer_from("ckpt/")
    ds.create_if_absent("s", "ckpt/B", {"v": 1}, 1e12)  # the commit point: the transaction opens
    blobs.delete("s", ["payload/B"])
    assert (path / "payload" / "B").exists()  # still there before the commit
    ds.rollback_deferred()  # (a lost transaction: the delete goes with it)
    assert (path / "payload" / "B").exists()
    ds.defer_from("ckpt/")
    ds.create_if_absent("s", "ckpt/B", {"v": 1}, 1e12)
    blobs.delete("s", ["payload/B", "ckpt/A/1"])
    blobs.put("s", "ckpt/A/1", b"again")  # written after its delete: kept
    assert (path / "payload" / "B").exists()
    ds.commit_deferred()
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == ["1", "keep"]
    ds.defer_from("ckpt/")
    ds.create_if_absent("s", "ckpt/C", {"v": 1}, 1e12)
    blobs.sweep("s", keep=("keep",))
    blobs.put("s", "late", b"w")  # written after the sweep: kept
    assert (path / "ckpt" / "A" / "1").exists()
    ds.commit_deferred()
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == ["keep", "late"]
    blobs.delete("s", ["late"])  # no transaction open: at once
    assert not (path / "late").exists()
    ds.close()
    assert sorted(p.name for p in path.rglob("*") if p.is_file()) == ["keep"]


def test_kill_kinds_parse_round_trip_and_spare_the_last_attempt():
    spec = FaultSpec.parse("seed=3,kill=0.1,timeout=0.2,oom=0.3,max_kill_ms=7,kill_before_commit=1")
    assert FaultSpec.parse(spec.encode()) == spec
    assert spec.rates == {"kill": 0.1, "timeout": 0.2, "oom": 0.3, "kill_before_commit": 1.0}
    assert [SeededFaults(spec, a, 3, "k").kills("kill_before_commit", "s", "F") for a in (1, 2, 3)] == \
        [True, True, False]


def test_the_final_sweep_lists_the_local_blob_store_without_the_marker(tmp_path):
    """An execution that writes a payload blob after its commit point creates the session's
    `blobs` marker inside its deferred transaction; killed before the commit, it loses the
    marker but not the file. If the redelivery writes no blob (a nondeterministic value now
    small enough to travel inline), nothing would name the file: the end of the session
    still sweeps it, since listing a local directory is cheap (FileBlobStore.sweep_is_cheap;
    fails when the sweep waits for the marker)."""
    from runtime.session import BLOBS_MARKER, end

    ds = SqliteDatastore(tmp_path / "unum.db")
    blobs = FileBlobStore(tmp_path / "blobs", gate=ds)
    ds.defer_from("ckpt/")
    ds.create_if_absent("s", "ckpt/B", {"v": 1}, 1e12)
    ds.put("s", BLOBS_MARKER, {"blobs": True}, 1e12)
    blobs.put("s", "payload/C/1", b"x" * 10)
    ds.rollback_deferred()  # what a kill before the commit leaves
    assert ds.get("s", BLOBS_MARKER) is None and (tmp_path / "blobs" / "s" / "payload" / "C" / "1").exists()
    result = {"status": "SUCCEEDED", "instance": "C", "v": 1}
    ds.create_if_absent("s", "result", result, 1e12)
    end(ds, blobs, "s", result)
    assert not (tmp_path / "blobs" / "s").exists()
    ds.close()
