"""The Firestore datastore passes the datastore conformance suite on the Firestore
emulator, directly and with adversarial (item by item, reversed) reads, and keeps large sets
O(1) per add (responses measured on the GAPIC client); the GCS blob store round-trips on the
GCS stand-in."""

from __future__ import annotations

import time
import uuid

import pytest

from unumctl_testing.conformance.datastore_suite import AdversarialReadsSuite, DatastoreSuite, LargeSetSuite
from unumctl_testing.conformance.meters import ApiMeter

COLLECTION = "unum-conformance"


@pytest.fixture(scope="module")
def fs_client(emulators):
    from google.cloud import firestore

    return firestore.Client(project=emulators.project)


class FirestoreStore:
    """`store` on its own client (metered); `other_store` is another client."""

    @pytest.fixture
    def store(self, emulators):
        from google.cloud import firestore

        from runtime.gcp.datastore import FirestoreDatastore

        client = firestore.Client(project=emulators.project)
        ds = FirestoreDatastore(client, COLLECTION)
        ds.meter = ApiMeter(client)
        yield ds
        client.close()

    @pytest.fixture
    def meter(self, store):
        return store.meter

    @pytest.fixture
    def other_store(self, fs_client):
        from runtime.gcp.datastore import FirestoreDatastore

        return FirestoreDatastore(fs_client, COLLECTION)

    @pytest.fixture
    def raw_names(self, fs_client):
        from google.cloud import firestore

        def names(session):
            q = fs_client.collection(COLLECTION).where(
                filter=firestore.FieldFilter("session", "==", session)).select(["name"])
            return [snap.get("name") for snap in q.stream()]
        return names


class TestFirestoreDatastore(FirestoreStore, DatastoreSuite, LargeSetSuite):
    large_n = 2_000
    large_n_long = 20_000
    max_calls_per_add = 1  # one commit; only a re-add of an existing member reads
    max_response_bytes = 200


class TestFirestoreDatastoreAdversarialReads(FirestoreStore, AdversarialReadsSuite):
    pass


def test_set_add_is_one_commit_of_constant_size(emulators):
    from google.cloud import firestore

    from runtime.gcp.datastore import FirestoreDatastore

    client = firestore.Client(project=emulators.project)
    ds = FirestoreDatastore(client, "unum-sets")
    meter = ApiMeter(client)
    s = str(uuid.uuid4())
    sizes = []
    for i in range(300):
        meter.reset()
        assert ds.set_add(s, "fanin/J", f"W-UnumIndex-{i}", time.time() + 100) == i + 1
        assert meter.ops == {"commit": 1}
        sizes.append(meter.response_bytes[0])
    assert sizes[0] < 100 and max(sizes) <= sizes[0] + 4
    meter.reset()
    assert ds.set_add(s, "fanin/J", "W-UnumIndex-3", time.time() + 100) == 300
    assert meter.ops == {"commit": 1, "batch_get_documents": 1}
    # the refused commit (ALREADY_EXISTS) is not billed; the size read is
    assert ds.usage["writes"] == 2 * 300 and ds.usage["reads"] == 1


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
    assert abs(snaps[ids[1] + "|A-UnumIndex-0"]["expires_at"].timestamp() - exp) < 1
    assert sorted(ds.dump(s)[s]) == ["ckpt/A-UnumIndex-0", "fanin/B"]
    assert ds.usage["writes"] == 3 and ds.usage["reads"] == 0
    ds.delete(s, ["fanin/B"])
    assert ds.set_add(s, "fanin/B", "A-UnumIndex-0", exp) == 1  # members were deleted too


def test_billed_reads_and_deletes_are_what_firestore_bills(fs_client):
    """get_many is one query per 30 names, billed per document found and at least one per
    query (a batchGet would bill every name asked); a refused create bills no write;
    delete finds sets with one query for all its set names and deletes only what exists."""
    from runtime.gcp.datastore import FirestoreDatastore

    ds = FirestoreDatastore(fs_client, "unum-billing")
    meter = ApiMeter(fs_client)
    s, exp = str(uuid.uuid4()), time.time() + 100
    assert ds.get_many(s, ["ckpt/A", "result"]) == [None, None]
    assert ds.usage["reads"] == 1 and meter.ops == {"run_query": 1}
    ds.create_if_absent(s, "ckpt/A", {"v": 1}, exp)
    assert ds.create_if_absent(s, "ckpt/A", {"v": 2}, exp) == (False, {"v": 1})
    assert ds.usage["writes"] == 1 and ds.usage["reads"] == 2  # the refused create: a read only
    names = [f"exit/B-{i}" for i in range(40)]
    for n in names[:35]:
        ds.create_if_absent(s, n, {"v": n}, exp)
    ds.usage.clear()
    got = ds.get_many(s, ["ckpt/A", *names, "ckpt/A", "result"])
    assert got[0] == got[-2] == {"v": 1} and got[-1] is None
    assert [g and g["v"] for g in got[1:-2]] == names[:35] + [None] * 5
    assert ds.usage["reads"] == 36  # two queries (42 distinct names), 36 documents found
    for i in range(3):
        ds.set_add(s, "fanin/J", f"W-{i}", exp)
    ds.set_add(s, "gc/S", "W-0", exp)
    ds.usage.clear()
    meter.reset()
    ds.delete(s, ["ckpt/A", "ckpt/absent", "fanin/J", "gc/S", "exit/B-0", "fanin/none"])
    # one query for the 4 names that may be sets: J's counter and 3 members, S's counter
    # and member, exit/B-0; the two checkpoints by id
    assert meter.ops == {"run_query": 1, "commit": 1}
    assert ds.usage["reads"] == 7 and ds.usage["deletes"] == 9
    assert sorted(ds.dump(s)[s]) == sorted(names[1:35])
    assert ds.set_add(s, "fanin/J", "W-0", exp) == 1


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
