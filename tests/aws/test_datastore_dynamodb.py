"""The DynamoDB datastore and S3 blob store pass the conformance suite against moto_server."""

import pytest

from runtime.aws.datastore import DynamoDBDatastore, S3BlobStore

from ..conformance.datastore_suite import DatastoreSuite


class TestDynamoDBDatastore(DatastoreSuite):
    @pytest.fixture
    def store(self, unum_table):
        return DynamoDBDatastore(unum_table)


def test_items_carry_expiry_for_ttl(unum_table):
    ds = DynamoDBDatastore(unum_table)
    ds.create_if_absent("s1", "ckpt/A", {"v": 1}, 1234.9)
    ds.set_add("s1", "fanin/B", "A", 5678.0)
    ds.put("s1", "ckpt/C", {"gc": True}, 42.0)
    items = ds.client.scan(TableName=unum_table)["Items"]
    assert sorted((i["name"]["S"], i["expires_at"]["N"]) for i in items) == [
        ("ckpt/A", "1234"), ("ckpt/C", "42"), ("fanin/B", "5678")]


def test_s3_blob_store_round_trip_and_sweep(unum_table):
    blobs = S3BlobStore(unum_table)
    blobs.put("s1", "ckpt/A/v", b"x" * 500_000)
    blobs.put("s1", "result/v", b"keep")
    blobs.put("s2", "ckpt/A/v", b"other")
    assert blobs.get("s1", "ckpt/A/v") == b"x" * 500_000
    blobs.sweep("s1", keep=("result/v",))
    with pytest.raises(KeyError):
        blobs.get("s1", "ckpt/A/v")
    assert blobs.get("s1", "result/v") == b"keep"
    assert blobs.get("s2", "ckpt/A/v") == b"other"
