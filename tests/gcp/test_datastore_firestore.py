"""The Firestore datastore passes the datastore conformance suite on the Firestore
emulator; the GCS blob store round-trips on the GCS stand-in."""

from __future__ import annotations

import time
import uuid

import pytest

from tests.conformance.datastore_suite import DatastoreSuite


@pytest.fixture(scope="module")
def fs_client(emulators):
    from google.cloud import firestore

    return firestore.Client(project=emulators.project)


class TestFirestoreDatastore(DatastoreSuite):
    @pytest.fixture
    def store(self, fs_client):
        from runtime.gcp.datastore import FirestoreDatastore

        yield FirestoreDatastore(fs_client, "unum-conformance")


def test_documents_carry_expiry_timestamp_and_escaped_ids(fs_client):
    from runtime.gcp.datastore import FirestoreDatastore, doc_id

    ds = FirestoreDatastore(fs_client, "unum-ttl")
    s = f"s/{uuid.uuid4()}|x"
    exp = time.time() + 100
    ds.put(s, "ckpt/A-UnumIndex-0", {"v": 1}, exp)
    ds.set_add(s, "fanin/B", "A-UnumIndex-0", exp)
    snaps = {d.id: d.to_dict() for d in fs_client.collection("unum-ttl").stream()}
    ids = [doc_id(s, "ckpt/A-UnumIndex-0"), doc_id(s, "fanin/B")]
    assert all("/" not in i for i in ids) and set(ids) <= set(snaps)
    for i in ids:
        assert abs(snaps[i]["expires_at"].timestamp() - exp) < 1  # a Firestore timestamp
    assert snaps[ids[1]]["size"] == 1
    assert snaps[ids[1] + "|A-UnumIndex-0"]["member"] == "A-UnumIndex-0"
    assert sorted(ds.dump(s)[s]) == ["ckpt/A-UnumIndex-0", "fanin/B"]
    assert ds.usage["writes"] == 3 and ds.usage["reads"] == 0
    ds.delete(s, ["fanin/B"])
    assert ds.set_add(s, "fanin/B", "A-UnumIndex-0", exp) == 1  # members were deleted too


def test_gcs_blob_store_round_trip(emulators):
    from google.cloud import storage

    from runtime.gcp.blobs import GcsBlobStore

    client = storage.Client(project=emulators.project)
    bucket = f"unum-blobs-{uuid.uuid4().hex[:8]}"
    client.create_bucket(bucket)
    blobs = GcsBlobStore(client, bucket, "payloads/app")
    s = str(uuid.uuid4())
    big = b"x" * 2_000_000
    assert blobs.put(s, "ckpt/A/v", big) == "ckpt/A/v"
    blobs.put(s, "result/v", b"[1]")
    assert blobs.get(s, "ckpt/A/v") == big
    blobs.sweep(s, keep=("result/v",))
    with pytest.raises(KeyError):
        blobs.get(s, "ckpt/A/v")
    assert blobs.get(s, "result/v") == b"[1]"
