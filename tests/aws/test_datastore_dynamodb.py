"""The DynamoDB datastore and S3 blob store pass the conformance suite against moto_server,
directly and with adversarial (item by item, reversed) reads; large sets stay O(1) bytes per
add (responses observed on the wire by a botocore event hook)."""

import json

import pytest

from runtime.aws.datastore import SEP, DynamoDBDatastore, S3BlobStore
from runtime.aws.history import index_key
from runtime.payload import RESULT_KEY

from unumctl_testing.conformance.datastore_suite import AdversarialReadsSuite, DatastoreSuite, LargeSetSuite
from unumctl_testing.conformance.meters import WireMeter


def raw_session_names(client, table, session):
    """The logical name (item or set) of every raw item of the session, members and
    counter shards included (one entry per raw item, and one per member a counter item
    holds inline in its string set `ms`, runtime/aws/datastore.py set_add step 0), and
    "result" when the session's record in the session index holds its result (layout)."""
    rec = client.get_item(TableName=table, Key=index_key(session), ConsistentRead=True).get("Item")
    out = [RESULT_KEY] if rec and DynamoDBDatastore.key_of(rec) else []
    kwargs: dict = dict(TableName=table, KeyConditionExpression="#s = :s", ConsistentRead=True,
                        ExpressionAttributeNames={"#s": "session"}, ExpressionAttributeValues={":s": {"S": session}})
    while True:
        resp = client.query(**kwargs)
        for it in resp["Items"]:
            name = it["name"]["S"].split(SEP, 1)[0]
            out += [name] * (1 + len(it.get("ms", {}).get("SS", [])))
        if "LastEvaluatedKey" not in resp:
            return out
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]


class DynamoStore:
    """`store` on a fresh moto table (a wire meter on its client); `other_store` has its own
    client."""

    counter_shards = 1
    # the concurrent set_add test runs: moto_server serves one request at a time here
    # (unumctl/aws/emulate/moto_serialized.py), as DynamoDB serializes transactions on an item

    @pytest.fixture
    def store(self, unum_table):
        return DynamoDBDatastore(unum_table, counter_shards=self.counter_shards)

    @pytest.fixture
    def meter(self, store):
        return WireMeter(store.client)

    @pytest.fixture
    def other_store(self, unum_table):
        return DynamoDBDatastore(unum_table, counter_shards=self.counter_shards)

    @pytest.fixture
    def raw_names(self, store):
        return lambda session: raw_session_names(store.client, store.table, session)


class TestDynamoDBDatastore(DynamoStore, DatastoreSuite, LargeSetSuite):
    exact_concurrent_sizes = False  # the size is read back after the add
    # moto deep-copies the whole table on every TransactWriteItems (O(table) per add, O(N^2)
    # per set; real DynamoDB has no such cost), so the default run keeps to 500 members (31
    # times the 16 a counter item holds inline; 1,000 took 56 s of CI) and UNUM_LONG_SETS=1
    # runs 3,000 (about 15 minutes on moto here); test_set_beyond_the_400kb_item_limit covers
    # the size bound
    large_n = 500
    large_n_long = 3_000
    max_calls_per_add = 3
    max_response_bytes = 600


class TestDynamoDBDatastoreShardedCounter(DynamoStore, DatastoreSuite):
    counter_shards = 4
    exact_concurrent_sizes = False


class TestDynamoDBDatastoreAdversarialReads(DynamoStore, AdversarialReadsSuite):
    exact_concurrent_sizes = False


def test_set_add_moves_constant_bytes_per_add(unum_table):
    """Responses of the 1st and the 300th add differ only by the digits of the size (the
    former layout returned the whole set: ~12 MB in total for 1,000 branches)."""
    ds = DynamoDBDatastore(unum_table, inline_set_members=0)
    meter = WireMeter(ds.client)
    per_add, ops = [], []
    for i in range(300):
        meter.reset()
        assert ds.set_add("s1", "fanin/J", f"W-UnumIndex-{i}", 5678.0) == i + 1
        per_add.append(sum(meter.response_bytes))
        ops.append(meter.ops)
    assert per_add[0] < 100 and per_add[-1] <= per_add[0] + 2  # '1' vs '300'
    assert all(o == {"TransactWriteItems": 1, "GetItem": 2} for o in ops)
    meter.reset()
    assert ds.set_add("s1", "fanin/J", "W-UnumIndex-7", 5678.0) == 300  # idempotent
    assert meter.ops == {"GetItem": 2}  # a duplicate is settled by reads, no transaction


def test_set_beyond_the_400kb_item_limit(unum_table):
    """440 KB of member names in one set: the former string-set layout failed here with
    ValidationException (item size exceeded); now each member is its own item."""
    ds = DynamoDBDatastore(unum_table)
    members = [f"{i:04d}" + "m" * 1096 for i in range(400)]
    for i, m in enumerate(members):
        assert ds.set_add("s1", "fanin/J", m, 5678.0) == i + 1
    assert ds.set_add("s1", "fanin/J", members[0], 5678.0) == 400
    assert ds.sweep("s1", []) == 1
    assert ds.client.scan(TableName=unum_table)["Items"] == []


def _cancelled(ds, *codes):
    return ds.client.exceptions.TransactionCanceledException(
        error_response={"Error": {"Code": "TransactionCanceledException", "Message": "cancelled"},
                        "CancellationReasons": [{"Code": c} for c in codes]},
        operation_name="TransactWriteItems")


def test_transaction_conflicts_are_retried_other_cancellations_raise(unum_table, monkeypatch):
    """moto never reports TransactionConflict, so it is injected: the add is retried and
    counted once; a cancellation for another reason is raised, not taken for 'already a
    member'."""
    monkeypatch.setattr("runtime.aws.datastore._backoff", lambda attempt: None)
    ds = DynamoDBDatastore(unum_table, inline_set_members=0)
    real = ds.client.transact_write_items
    script = [_cancelled(ds, "None", "TransactionConflict"), _cancelled(ds, "TransactionConflict", "None")]

    def flaky(**kw):
        if script:
            raise script.pop(0)
        return real(**kw)

    ds.client.transact_write_items = flaky
    assert ds.set_add("s1", "fanin/J", "A", 5678.0) == 1 and script == []
    script.append(_cancelled(ds, "None", "ValidationError"))
    with pytest.raises(ds.client.exceptions.TransactionCanceledException):
        ds.set_add("s1", "fanin/J", "B", 5678.0)
    assert ds.set_add("s1", "fanin/J", "B", 5678.0) == 2
    ds.txn_attempts = 2
    script += [_cancelled(ds, "None", "TransactionConflict")] * 2
    with pytest.raises(ds.client.exceptions.TransactionCanceledException):
        ds.set_add("s1", "fanin/J", "C", 5678.0)
    assert ds.set_add("s1", "fanin/J", "A", 5678.0) == 2


def test_member_added_between_precheck_and_transaction(unum_table):
    """A concurrent duplicate commits between this add's GetItem and its transaction: the
    transaction is cancelled (ConditionalCheckFailed) and the size is not incremented."""
    ds = DynamoDBDatastore(unum_table, inline_set_members=0)
    assert ds.set_add("s1", "fanin/J", "A", 5678.0) == 1
    real_get = ds.client.get_item
    calls = []

    def stale_first_get(**kw):
        calls.append(kw["Key"]["name"]["S"])
        return {} if len(calls) == 1 else real_get(**kw)  # the pre-check saw no member yet

    ds.client.get_item = stale_first_get
    meter = WireMeter(ds.client)
    assert ds.set_add("s1", "fanin/J", "A", 5678.0) == 1
    assert meter.ops == {"TransactWriteItems": 1, "GetItem": 1} and calls == [f"fanin/J{SEP}mA", "fanin/J"]


def test_items_carry_expiry_for_ttl(unum_table):
    ds = DynamoDBDatastore(unum_table, inline_set_members=0)
    ds.create_if_absent("s1", "ckpt/A", {"v": 1}, 1234.9)
    ds.set_add("s1", "fanin/B", "A", 5678.0)
    ds.put("s1", "ckpt/C", {"gc": True}, 42.0)
    items = ds.client.scan(TableName=unum_table)["Items"]
    assert sorted((i["name"]["S"], i["expires_at"]["N"]) for i in items) == [
        ("ckpt/A", "1234"), ("ckpt/C", "42"), ("fanin/B", "5678"), (f"fanin/B{SEP}mA", "5678")]
    assert ds.names("s1") == ["ckpt/A", "ckpt/C", "fanin/B"]


def test_long_members_are_hashed_into_the_key(unum_table):
    ds = DynamoDBDatastore(unum_table)
    long_a, long_b = "A" * 1500, "A" * 1499 + "B"
    assert ds.set_add("s1", "gc/X", long_a, 5678.0) == 1
    assert ds.set_add("s1", "gc/X", long_b, 5678.0) == 2
    assert ds.set_add("s1", "gc/X", long_a, 5678.0) == 2
    ds.delete("s1", ["gc/X"])
    assert ds.client.scan(TableName=unum_table)["Items"] == []


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


def test_small_sets_take_one_update_per_add_then_member_items(unum_table):
    """The first `inline_set_members` members live in the counter item: one conditional
    UpdateItem per add, no read; a duplicate add of an inline member returns the size without
    counting it again, also after the set overflowed into member items."""
    ds = DynamoDBDatastore(unum_table, inline_set_members=3)
    meter = WireMeter(ds.client)
    assert [ds.set_add("s1", "fanin/J", m, 5678.0) for m in "ABC"] == [1, 2, 3]
    assert meter.ops == {"UpdateItem": 3}
    assert ds.set_add("s1", "fanin/J", "B", 5678.0) == 3  # a duplicate: the condition fails
    assert ds.set_add("s1", "fanin/J", "D", 5678.0) == 4  # full: a member item
    assert ds.set_add("s1", "fanin/J", "A", 5678.0) == 4  # inline member, after the overflow
    assert ds.set_add("s1", "fanin/J", "D", 5678.0) == 4
    assert ds.set_size("s1", "fanin/J") == 4
    names = sorted(i["name"]["S"] for i in ds.client.scan(TableName=unum_table)["Items"])
    assert names == ["fanin/J", f"fanin/J{SEP}mD"]
    ds.delete("s1", ["fanin/J"])
    assert ds.client.scan(TableName=unum_table)["Items"] == []


def test_large_items_are_stored_compressed_and_read_back_exactly(unum_table):
    """Items whose JSON is above COMPRESS_ABOVE bytes are stored zlib-compressed in binary
    attribute `z` when that is smaller (DynamoDB bills per KB stored), small ones as JSON
    text in `j`; every path reads them back equal."""
    import os

    ds = DynamoDBDatastore(unum_table)
    words = {"counts": [[f"word{i % 50}", i, "ü"] for i in range(2000)]}  # ~40 KB, repetitive
    noise = {"v": os.urandom(3000).hex()}                                    # ~6 KB, compresses ~2x
    for name, item in (("ckpt/W", words), ("ckpt/N", noise), ("ckpt/S", {"v": 1})):
        assert ds.create_if_absent("s1", name, item, 5678.0) == (True, item)
    raw = {i["name"]["S"]: i for i in ds.client.scan(TableName=unum_table)["Items"]}
    assert set(raw["ckpt/W"]) == {"session", "name", "z", "expires_at"}
    assert len(raw["ckpt/W"]["z"]["B"]) < len(json.dumps(words)) // 5
    assert len(raw["ckpt/N"]["z"]["B"]) < len(noise["v"]) and "j" in raw["ckpt/S"]
    assert ds.get_many("s1", ["ckpt/W", "ckpt/N", "ckpt/S"]) == [words, noise, {"v": 1}]
    assert ds.create_if_absent("s1", "ckpt/W", {"other": 1}, 5678.0) == (False, words)


def test_compressible_values_stay_inline_below_the_blob_threshold(unum_table):
    """ValueStore sends a value to S3 only when its stored (compressed) size is above the
    DynamoDB inline limit: a 40 KB repetitive value stays in the item, 40 KB of noise
    becomes a blob (runtime/storage.py ValueStore.piece)."""
    import os

    from runtime.storage import ValueStore

    ds = DynamoDBDatastore(unum_table)
    values = ValueStore(ds, S3BlobStore(unum_table))
    words = [[f"word{i % 50}", i] for i in range(3000)]
    noise = os.urandom(20_000).hex()
    assert len(json.dumps(words)) > ds.inline_value_bytes and len(noise) > ds.inline_value_bytes
    assert values.piece("s1", "ckpt/A", words) == {"v": words}
    assert set(values.piece("s1", "ckpt/B", noise)) == {"blob"}
    assert len(values.written) == 1


def test_an_item_just_over_a_write_unit_is_compressed_below_it(unum_table):
    """JSON under COMPRESS_ABOVE is stored as text unless compressing it takes the item
    below a write-unit boundary (WRITE_UNIT_BYTES of item_bytes): a result whose session
    record also holds the session's input is the case (runtime/aws/history.py)."""
    from runtime.aws.datastore import COMPRESS_ABOVE, WRITE_UNIT_BYTES, item_bytes

    ds = DynamoDBDatastore(unum_table)
    over = {"v": "word " * 200}   # 1,008 B of JSON: with key and expiry, just over 1 KB
    under = {"v": "word " * 150}  # ~760 B: 1 unit as text
    assert len(json.dumps(over)) < COMPRESS_ABOVE
    for name, item in (("ckpt/O", over), ("ckpt/U", under)):
        assert ds.create_if_absent("s1", name, item, 5678.0) == (True, item)
    raw = {i["name"]["S"]: i for i in ds.client.scan(TableName=unum_table)["Items"]}
    assert "z" in raw["ckpt/O"] and item_bytes(raw["ckpt/O"]) <= WRITE_UNIT_BYTES
    assert "j" in raw["ckpt/U"]
    assert ds.get_many("s1", ["ckpt/O", "ckpt/U"]) == [over, under]
