"""`Datastore` on DynamoDB and `BlobStore` on S3 (boto3).

Source: seed 001 §4.1 (Unum on AWS: DynamoDB conditional writes and atomic set updates);
DynamoDB API: PutItem/UpdateItem `ConditionExpression`, `ReturnValues`,
`ReturnValuesOnConditionCheckFailure`, BatchGetItem `ConsistentRead` and `UnprocessedKeys`,
BatchWriteItem `UnprocessedItems`, Query; TTL on a Number attribute holding epoch seconds.

Table layout (created by terraform/modules/aws-unum-datastore):
    partition key `session` (S), sort key `name` (S)
    `j`           (S)  the item as compact JSON (exact JSON types; no Decimal conversion)
    `z`           (B)  instead of `j` for an item whose JSON is above COMPRESS_ABOVE bytes:
                       that JSON compressed with zlib (DynamoDB Developer Guide, "Best
                       practices for storing large items": compressing large attribute
                       values), kept only when smaller; DynamoDB bills writes per KB and
                       strongly consistent reads per 4 KB of the stored item
    `size`        (N)  a coordination set's member counter (fan-in / GC sets), on the
                       set's own item `name` and, with counter shards, `name<US>c<i>`
    `expires_at`  (N)  epoch seconds; the table's TTL attribute
    a session's `result` is not in the session's partition: it is the session's record in
    the history's session index, key (`#sessions/<shard>`, session id)
    (runtime/aws/history.py `index_key`), so that one write can create the result and
    record the session (the entry execution of a session it also ends: runtime.ports.Events
    `result_fields`); the record's own attributes (function, started_at, input, ...) sit
    beside `j`/`z`, and an index record without `j`/`z` reads as no result
    a set member is its own item `name<US>m<member>` (US = U+001F, which instance names
    never contain), or `name<US>h<sha256 hex>` for a member longer than 300 characters
    (sort keys are at most 1024 bytes); the member itself is in attribute `m` (S)
An item larger than `max_item_bytes` never reaches the table: the engine puts the value in
the BlobStore (S3) and stores a pointer (runtime/storage.py `ValueStore.piece`).

Consistency note: `get_many` uses strongly consistent BatchGetItem (100 keys per call,
UnprocessedKeys retried with exponential backoff). Each item read sees every write that
completed before the call, but the items of one call are not read at a single instant
(TransactGetItems would be, but costs twice the read units and caps a call at 100 items and
4 MB). The engine tolerates this: the items it reads together are the session result, its
own checkpoint and its fan-in inputs; inputs are immutable once created (until a tombstone),
and the worst interleaving (own checkpoint swept after the session ended while the result
was read just before it was written) makes a stale duplicate run once more; its writes are
removed by the item expiry.

Sets at scale (docs/sets.md): one item per member plus a counter, written together by one
TransactWriteItems (Put member with `attribute_not_exists`, Update counter `ADD size 1`), so
a crash cannot separate them, after a GetItem that settles duplicate adds without a
transaction, then the counter read back with a strongly consistent GetItem.
Each add moves O(1) bytes whatever the set size and a set has no size bound (the 400 KB item
limit applied to the former string-set layout, about 10,000 names).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import time
import zlib
from typing import Any, Iterable, Sequence

from ..payload import RESULT_KEY
from ..ports import BlobStore, Datastore
from ..session import RECORD_FIELD
from .history import index_key

__all__ = ["COMPRESS_ABOVE", "DynamoDBDatastore", "S3BlobStore", "SEP", "WRITE_UNIT_BYTES", "item_bytes"]

_BATCH_GET = 100
_BATCH_WRITE = 25
SEP = "\x1f"          # between a set's name and its member / counter-shard suffix
_MAX_MEMBER = 300     # longer members are stored under their SHA-256 (sort key <= 1024 bytes)
INLINE_SET_MEMBERS = 16  # members a set keeps in its counter item (set_add step 0)
COMPRESS_ABOVE = 1024    # items whose JSON is longer are stored zlib-compressed in `z` (layout)
WRITE_UNIT_BYTES = 1024  # DynamoDB on demand: one write request unit per 1 KB of item
                         # (aws.amazon.com/dynamodb/pricing/on-demand; unumctl/cost/prices.json)
# GetObject's answers for an absent key: NoSuchKey (404) with s3:ListBucket, AccessDenied (403)
# without it (S3BlobStore)
MISSING_OBJECT_CODES = ("NoSuchKey", "404", "AccessDenied", "403")


def item_bytes(item: dict[str, Any]) -> int:
    """Size of a DynamoDB item (attribute names + values, typed AttributeValue form) by the
    rules of the DynamoDB Developer Guide, "Item sizes and formats": strings and binaries
    their UTF-8/raw length, numbers about one byte per two significant digits + 1, booleans
    and nulls 1 byte, lists and maps 3 bytes + 1 per element + their elements."""
    return sum(len(k.encode()) + _value_bytes(v) for k, v in item.items())


def _value_bytes(v: dict[str, Any]) -> int:
    (t, x), = v.items()
    if t == "S":
        return len(x.encode())
    if t == "B":
        return len(x)
    if t == "N":
        return len(x.strip("-").replace(".", "").lstrip("0")) // 2 + 1
    if t in ("BOOL", "NULL"):
        return 1
    if t == "L":
        return 3 + sum(1 + _value_bytes(e) for e in x)
    if t == "M":
        return 3 + sum(1 + len(k.encode()) + _value_bytes(e) for k, e in x.items())
    if t == "SS":
        return sum(len(e.encode()) for e in x)
    if t == "NS":
        return sum(len(e) // 2 + 1 for e in x)
    if t == "BS":
        return sum(len(e) for e in x)
    return 1


def _value_attr(text: str, other: int) -> dict[str, Any]:
    """The attribute holding an item's JSON `text` (layout), `other` being the bytes of the
    item's other attributes (`item_bytes`): `z` when `_compressed` says so, or when the
    compressed JSON takes the item below a write-unit boundary (DynamoDB bills a write
    request unit per WRITE_UNIT_BYTES of the item: a 700-byte result in a session record
    beside a 400-byte input is 2 units as text and 1 compressed); else `j`."""
    data = text.encode()
    z = _compressed(data)
    plain = other + 1 + len(data)
    if z is None and plain > WRITE_UNIT_BYTES:
        packed = zlib.compress(data, 6)
        if -(-(other + 1 + len(packed)) // WRITE_UNIT_BYTES) < -(-plain // WRITE_UNIT_BYTES):
            z = packed
    return {"j": {"S": text}} if z is None else {"z": {"B": z}}


def _compressed(data: bytes) -> bytes | None:
    """`data` compressed (zlib level 6) when it is above COMPRESS_ABOVE bytes and that
    saves bytes, else None."""
    if len(data) <= COMPRESS_ABOVE:
        return None
    z = zlib.compress(data, 6)
    return z if len(z) < len(data) else None


def _tag(member: str) -> str:
    """A member as the counter item's inline set `ms` holds it (long ones by their SHA-256)."""
    return member if len(member) <= 64 else "h" + hashlib.sha256(member.encode()).hexdigest()


def _client(service: str, region: str | None = None):
    """A boto3 client with the standard retry mode (throttling and 5xx retried by botocore).
    Endpoint overrides come from the standard AWS_ENDPOINT_URL[_<SERVICE>] variables."""
    import boto3
    from botocore.config import Config

    cfg = Config(retries={"mode": "standard", "max_attempts": 8},
                 max_pool_connections=int(os.environ.get("UNUM_MAX_POOL", "50")))
    return boto3.session.Session().client(service, region_name=region, config=cfg)


def _backoff(attempt: int) -> None:
    time.sleep(min(1.0, 0.02 * (2 ** attempt)) * random.uniform(0.5, 1.0))


class DynamoDBDatastore(Datastore):
    """Datastore on one DynamoDB table (layout in the module docstring).

    `table`: table name; `client`: a boto3 DynamoDB client (default: a new one);
    `counter_shards`: counter items per set (1 = one counter; more spreads concurrent adds
    of a wide fan-in over several items, at the cost of reading them all on every add;
    every client of a table must use the same value);
    `txn_attempts`: attempts of a set_add cancelled by a TransactionConflict.
    Raises botocore ClientError for infrastructure failures (the platform retries)."""

    max_item_bytes = 350_000  # DynamoDB's item limit is 400 KB including names and keys
    # Values above 10 KB go to S3 (runtime/storage.py): on demand, an item of N KB costs N
    # write units ($0.625/M each) plus ceil(N/4) strongly consistent read units ($0.125/M)
    # when its consumer reads it, about $0.66/M per KB; in S3 it costs a PUT ($5/M), a GET
    # ($0.40/M) and a pointer item (1 WRU + 1 RRU), about $6.15/M whatever N: break-even
    # near 9.4 KB at the list prices of unumctl/cost/prices.json (2026-11, us-east-1).
    inline_value_bytes = 10_240

    def __init__(self, table: str, client=None, counter_shards: int = 1, txn_attempts: int = 10,
                 inline_set_members: int = INLINE_SET_MEMBERS):
        if counter_shards < 1:
            raise ValueError("counter_shards must be >= 1")
        self.table = table
        self.client = client or _client("dynamodb")
        self.counter_shards = counter_shards
        self.inline_set_members = inline_set_members  # 0: every member gets an item (set_add)
        self._full: set[tuple[str, str]] = set()  # sets whose inline members are full (set_add)
        self.txn_attempts = txn_attempts

    @staticmethod
    def _key(session: str, name: str) -> dict[str, Any]:
        if name == RESULT_KEY:  # the session's record in the session index (layout)
            return index_key(session)
        return {"session": {"S": session}, "name": {"S": name}}

    @staticmethod
    def key_of(attrs: dict[str, Any]) -> tuple[str, str] | None:
        """(session, item name) of a stored item's attributes (the inverse of the layout's
        keys): a session record holding a result is (session id, "result"); a session
        record without one (runtime/aws/history.py) is None."""
        session, name = attrs["session"]["S"], attrs["name"]["S"]
        if index_key(name)["session"]["S"] == session:
            return (name, RESULT_KEY) if ("j" in attrs or "z" in attrs) else None
        return session, name

    @staticmethod
    def _decode(attrs: dict[str, Any] | None) -> dict[str, Any] | None:
        if not attrs:
            return None
        if "j" in attrs:
            return json.loads(attrs["j"]["S"])
        if "z" in attrs:
            return json.loads(zlib.decompress(attrs["z"]["B"]))
        if "size" in attrs:
            return {"size": int(attrs["size"]["N"])}  # a set's counter item
        return {}

    def _item(self, session: str, name: str, item: dict[str, Any], expires_at: float,
              beside: dict[str, Any] | None = None) -> dict[str, Any]:
        """The stored attributes of `item` (layout); `beside`: other attributes written to
        the same item in the same request (they count toward its write units)."""
        text = json.dumps(item, separators=(",", ":"), ensure_ascii=False)
        attrs = {**self._key(session, name), "expires_at": {"N": str(int(expires_at))}}
        return {**attrs, **_value_attr(text, item_bytes(attrs) + item_bytes(beside or {}))}

    def stored_bytes(self, data: bytes) -> int:
        """The bytes `data` takes in an item: compressed above COMPRESS_ABOVE (layout)."""
        z = _compressed(data)
        return len(data) if z is None else len(z)

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        """Strongly consistent BatchGetItem in chunks of 100 with UnprocessedKeys retries;
        order and duplicates kept. Each item is read after every write that completed before
        the call, but the items are not read at one instant (see the consistency note in the
        module docstring and runtime/ports.py)."""
        return [self._decode(a) for a in self._raw_get_many(session, names)]

    def _raw_get_many(self, session: str, names: Sequence[str],
                      projection: bool = False) -> list[dict[str, Any] | None]:
        uniq = list(dict.fromkeys(names))
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for i in range(0, len(uniq), _BATCH_GET):
            spec: dict[str, Any] = {"Keys": [self._key(session, n) for n in uniq[i:i + _BATCH_GET]],
                                    "ConsistentRead": True}
            if projection:  # counter items: the key and the size only
                spec.update(ProjectionExpression="#n, #z",
                            ExpressionAttributeNames={"#n": "name", "#z": "size"})
            request = {self.table: spec}
            attempt = 0
            while request:
                resp = self.client.batch_get_item(RequestItems=request)
                for attrs in resp.get("Responses", {}).get(self.table, []):
                    part = attrs["session"]["S"] if "session" in attrs else session  # projected: own partition
                    found[(part, attrs["name"]["S"])] = attrs
                request = resp.get("UnprocessedKeys") or {}
                if request:
                    _backoff(attempt)
                    attempt += 1
        out = []
        for n in names:
            k = self._key(session, n)
            attrs = found.get((k["session"]["S"], k["name"]["S"]))
            # a session record without a result (runtime/aws/history.py) is no result
            out.append(None if n == RESULT_KEY and attrs is not None and "j" not in attrs and "z" not in attrs
                       else attrs)
        return out

    def create_if_absent(self, session, name, item, expires_at):
        """PutItem with `attribute_not_exists(#n)`; on conflict the stored item comes back in
        the same round trip (ReturnValuesOnConditionCheckFailure=ALL_OLD). The `result` is an
        UpdateItem of the session's record instead (`_create_result`)."""
        if name == RESULT_KEY:
            return self._create_result(session, item, expires_at)
        ex = self.client.exceptions.ConditionalCheckFailedException
        try:
            self.client.put_item(TableName=self.table, Item=self._item(session, name, item, expires_at),
                                 ConditionExpression="attribute_not_exists(#n)",
                                 ExpressionAttributeNames={"#n": "name"},
                                 ReturnValuesOnConditionCheckFailure="ALL_OLD")
            return True, item
        except ex as err:
            stored = self._decode(err.response.get("Item"))
            if stored is None:  # an emulator that does not return the old item: read it
                stored = self.get(session, name) or {}
            return False, stored

    def _create_result(self, session: str, item: dict[str, Any], expires_at: float) -> tuple[bool, dict[str, Any]]:
        """Create the session's result in its session record (layout): one UpdateItem that sets
        `j` or `z` and `expires_at` on the condition that neither `j` nor `z` exists, keeping
        the record's other attributes. `item[RECORD_FIELD]` (runtime.session), when present,
        holds the record's attributes as UpdateItem SET clauses (runtime/aws/history.py
        `record_update`) written in the same request; it is not part of the result."""
        record = item.get(RECORD_FIELD)
        item = {k: v for k, v in item.items() if k != RECORD_FIELD}
        value = self._result_attrs(session, item, expires_at, (record or {}).get("attrs"))
        sets = [f"#{k} = :{k}" for k in value]
        names = {f"#{k}": k for k in value}
        values = {f":{k}": v for k, v in value.items()}
        if record:
            sets += record["sets"]
            names.update(record["names"])
            values.update(record["values"])
        try:
            self.client.update_item(TableName=self.table, Key=self._key(session, RESULT_KEY),
                                    UpdateExpression="SET " + ", ".join(sets),
                                    ConditionExpression="attribute_not_exists(#j) AND attribute_not_exists(#z)",
                                    ExpressionAttributeNames={**names, "#j": "j", "#z": "z"},
                                    ExpressionAttributeValues=values,
                                    ReturnValuesOnConditionCheckFailure="ALL_OLD")
            return True, item
        except self.client.exceptions.ConditionalCheckFailedException as err:
            stored = self._decode(err.response.get("Item"))
            if not stored:  # an emulator that does not return the old item: read it
                stored = self.get(session, RESULT_KEY) or {}
            return False, stored

    # ------------------------------------------------------------------ sets
    def _member_name(self, name: str, member: str) -> str:
        if len(member) > _MAX_MEMBER:  # `h` + digest cannot collide with `m` + a member
            return f"{name}{SEP}h{hashlib.sha256(member.encode()).hexdigest()}"
        return f"{name}{SEP}m{member}"

    def _shard_name(self, name: str, member: str) -> str:
        """The counter item this member increments: the set's own item with one shard,
        else `name<US>c<i>`, i = a stable hash of the member modulo `counter_shards`."""
        if self.counter_shards == 1:
            return name
        i = int.from_bytes(hashlib.sha256(member.encode()).digest()[:4], "big") % self.counter_shards
        return name if i == 0 else f"{name}{SEP}c{i}"

    def set_size(self, session: str, name: str) -> int:
        """Current size of a set (0 when absent): the sum of its counter items, read with a
        strongly consistent GetItem (one shard) or BatchGetItem (several)."""
        shards = [name] + [f"{name}{SEP}c{i}" for i in range(1, self.counter_shards)]
        if len(shards) == 1:
            resp = self.client.get_item(TableName=self.table, Key=self._key(session, name),
                                        ConsistentRead=True, ProjectionExpression="#z",
                                        ExpressionAttributeNames={"#z": "size"})
            return int(resp.get("Item", {}).get("size", {}).get("N", 0))
        return sum(int((it or {}).get("size", {}).get("N", 0)) for it in
                   self._raw_get_many(session, shards, projection=True))

    def set_add(self, session, name, member, expires_at):
        """Add `member` to set `name`; returns the set's size read after the add.

        0. The first `inline_set_members` (default INLINE_SET_MEMBERS) members (one counter
           shard) are added with one
           conditional UpdateItem on the counter item: `ADD size 1, ms <member>` under
           `NOT contains(ms, member) AND size(ms) < INLINE_SET_MEMBERS`, returning the new
           size (ReturnValues UPDATED_NEW): one call and one write unit (the item stays under
           1 KB), no read. A failed condition returns the old item
           (ReturnValuesOnConditionCheckFailure): the member is in `ms` -> its size; else
           the inline set is full and this member takes steps 1-3 (this adapter remembers
           it and skips step 0 for the set from then on). A member is in `ms` or has a
           member item, never both (`ms` only grows until the set is deleted), so step 1
           reads the member item and the counter item together (one BatchGetItem).
        1. GetItem (strongly consistent, keys only) of the member item `name<US>m<member>`:
           if it exists, the member was committed with its count: return the current size
           (step 3) without a transaction.
        2. One TransactWriteItems of two writes: Put the member item with
           `attribute_not_exists` and `ADD size 1` on the counter item, so the member and its
           count are committed together or not at all. If the member appeared meanwhile (a
           concurrent duplicate) the transaction is cancelled (CancellationReasons[0] =
           ConditionalCheckFailed) and nothing changes. A cancellation for
           TransactionConflict (another transaction on the counter in flight) is retried
           with jittered exponential backoff, `txn_attempts` times.
        3. The counter is read back: GetItem, strongly consistent (BatchGetItem of the
           shards with `counter_shards` > 1).

        Every response is O(1) bytes whatever the set size. The pre-check of step 1 settles
        duplicate adds (at-least-once delivery) with reads only, and keeps cancelled
        transactions rare: moto_server implements a cancellation by restoring a copy of the
        whole table, which loses concurrent writes of other clients. The returned size counts
        this member and every add that committed before the read: it is never below the
        size right after this add and never above the final size, so the add that completes
        an expected set always sees it complete; when adds overlap, more than one caller may
        see the complete size (runtime/ports.py, docs/sets.md).
        Raises botocore ClientError (TransactionCanceledException for other cancellation
        reasons or exhausted conflict retries) for other failures."""
        counter = self._shard_name(name, member)
        member_key = self._key(session, self._member_name(name, member))
        if self.counter_shards == 1 and self.inline_set_members > 0:
            if (session, name) not in self._full:
                size = self._inline_add(session, name, member, expires_at)
                if size is not None:
                    return size
                if len(self._full) > 1024:
                    self._full.clear()
                self._full.add((session, name))  # it only grows: later adds skip step 0
            # step 1 with the inline set: a member may be in `ms` or have a member item
            mine, head = self._raw_get_many(session, [self._member_name(name, member), name])
            if mine is not None or _tag(member) in (head or {}).get("ms", {}).get("SS", []):
                return int((head or {}).get("size", {}).get("N", 0))
        elif "Item" in self.client.get_item(TableName=self.table, Key=member_key, ConsistentRead=True,
                                            ProjectionExpression="#n",
                                            ExpressionAttributeNames={"#n": "name"}):
            return self.set_size(session, name)  # already a member: no transaction at all
        exp = {"N": str(int(expires_at))}
        items = [
            {"Put": {"TableName": self.table,
                     "Item": {**member_key,
                              "m": {"S": member}, "expires_at": exp},
                     "ConditionExpression": "attribute_not_exists(#n)",
                     "ExpressionAttributeNames": {"#n": "name"}}},
            {"Update": {"TableName": self.table, "Key": self._key(session, counter),
                        "UpdateExpression": "ADD #z :one SET expires_at = if_not_exists(expires_at, :e)",
                        "ExpressionAttributeNames": {"#z": "size"},
                        "ExpressionAttributeValues": {":one": {"N": "1"}, ":e": exp}}},
        ]
        ex = self.client.exceptions.TransactionCanceledException
        for attempt in range(self.txn_attempts):
            try:
                self.client.transact_write_items(TransactItems=items)
                break
            except ex as err:
                codes = [r.get("Code") for r in err.response.get("CancellationReasons", [])]
                if codes and codes[0] == "ConditionalCheckFailed":
                    break  # already a member: nothing changed
                if "TransactionConflict" not in codes or attempt == self.txn_attempts - 1:
                    raise
                _backoff(attempt)
        return self.set_size(session, name)

    def _inline_add(self, session: str, name: str, member: str, expires_at: float) -> int | None:
        """Step 0 of `set_add`: the size after adding `member` to the counter item's inline
        set, or None when that set is full (the caller adds a member item)."""
        tag = _tag(member)
        key = self._key(session, name)
        try:
            resp = self.client.update_item(
                TableName=self.table, Key=key,
                UpdateExpression="ADD #z :one, #ms :m SET expires_at = if_not_exists(expires_at, :e)",
                ConditionExpression="attribute_not_exists(#ms) OR (NOT contains(#ms, :t) AND size(#ms) < :cap)",
                ExpressionAttributeNames={"#z": "size", "#ms": "ms"},
                ExpressionAttributeValues={":one": {"N": "1"}, ":m": {"SS": [tag]}, ":t": {"S": tag},
                                           ":cap": {"N": str(self.inline_set_members)},
                                           ":e": {"N": str(int(expires_at))}},
                ReturnValues="UPDATED_NEW", ReturnValuesOnConditionCheckFailure="ALL_OLD")
            return int(resp["Attributes"]["size"]["N"])
        except self.client.exceptions.ConditionalCheckFailedException as err:
            old = err.response.get("Item")
            if old is None:  # an emulator that does not return the old item: read it
                old = self.client.get_item(TableName=self.table, Key=key, ConsistentRead=True).get("Item", {})
            if tag in old.get("ms", {}).get("SS", []):
                return int(old.get("size", {}).get("N", 0))
            return None

    def put(self, session, name, item, expires_at):
        if name != RESULT_KEY:
            self.client.put_item(TableName=self.table, Item=self._item(session, name, item, expires_at))
            return
        value = self._result_attrs(session, item, expires_at)  # keep the session record's attributes
        other = "z" if "j" in value else "j"
        self.client.update_item(TableName=self.table, Key=self._key(session, RESULT_KEY),
                                UpdateExpression="SET " + ", ".join(f"#{k} = :{k}" for k in value) + f" REMOVE #{other}",
                                ExpressionAttributeNames={**{f"#{k}": k for k in value}, f"#{other}": other},
                                ExpressionAttributeValues={f":{k}": v for k, v in value.items()})

    def _result_attrs(self, session: str, item: dict[str, Any], expires_at: float,
                      beside: dict[str, Any] | None = None) -> dict[str, Any]:
        """The attributes a result adds to its session record: `j` or `z`, and `expires_at`."""
        return {k: v for k, v in self._item(session, RESULT_KEY, item, expires_at, beside).items()
                if k not in ("session", "name")}

    def delete(self, session, names: Iterable[str]):
        """Delete items and sets; absent names are ignored.

        A set is its counter item(s) and one item per member: for every name that can be a
        set (any name except `result` and `ckpt/...`, whose items are never sets) one
        strongly consistent Query `begins_with(name, name<US>)` (keys only, paginated) finds
        them. Deletes go by DeleteItem for one key, else BatchWriteItem (25 per call,
        UnprocessedItems retried). A set must not be added to while it is deleted (the
        engine deletes a set once it is complete); a member added meanwhile may survive
        until the sweep or its expiry. Deleting `result` deletes the session's record that
        holds it (layout)."""
        names = list(dict.fromkeys(names))
        keys = [self._key(session, n) for n in names]
        for n in names:
            if n != RESULT_KEY and not n.startswith("ckpt/"):
                keys += [self._key(session, m) for m in self._names(session, n + SEP)]
        if len(keys) == 1:
            self.client.delete_item(TableName=self.table, Key=keys[0])
            return
        self._batch_delete(keys)

    def _batch_delete(self, keys: list[dict[str, Any]]) -> None:
        for i in range(0, len(keys), _BATCH_WRITE):
            request = {self.table: [{"DeleteRequest": {"Key": k}} for k in keys[i:i + _BATCH_WRITE]]}
            attempt = 0
            while request:
                resp = self.client.batch_write_item(RequestItems=request)
                request = resp.get("UnprocessedItems") or {}
                if request:
                    _backoff(attempt)
                    attempt += 1

    def _names(self, session: str, prefix: str = "") -> list[str]:
        """Sort keys of the session's items (starting with `prefix` when given): strongly
        consistent Query, keys only, paginated (1 MB per page)."""
        out: list[str] = []
        cond, values = "#s = :s", {":s": {"S": session}}
        if prefix:
            cond += " AND begins_with(#n, :p)"
            values[":p"] = {"S": prefix}
        kwargs: dict[str, Any] = dict(
            TableName=self.table, KeyConditionExpression=cond, ConsistentRead=True,
            ExpressionAttributeNames={"#s": "session", "#n": "name"},
            ExpressionAttributeValues=values, ProjectionExpression="#n")
        while True:
            resp = self.client.query(**kwargs)
            out += [it["name"]["S"] for it in resp.get("Items", [])]
            if "LastEvaluatedKey" not in resp:
                return out
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def names(self, session: str) -> list[str]:
        """Every item and set name of the session (a set's member and counter-shard items
        are not listed): strongly consistent Query, paginated."""
        return list(dict.fromkeys(n.split(SEP, 1)[0] for n in self._names(session)))

    def sweep(self, session, keep):
        """Delete every item of the session except `keep` (a kept set keeps its members):
        one paginated Query, then BatchWriteItem. Returns the number of items and sets
        deleted (a set's member and counter-shard items are not counted)."""
        keep_set = set(keep)
        doomed = [n for n in self._names(session) if n.split(SEP, 1)[0] not in keep_set]
        self._batch_delete([self._key(session, n) for n in doomed])
        return len({n.split(SEP, 1)[0] for n in doomed})


class S3BlobStore(BlobStore):
    """Blobs as S3 objects `<prefix><session>/<key>` in `bucket` (private, SSE, lifecycle
    expiry configured by Terraform). Raises KeyError for an absent blob, botocore
    ClientError for other failures.

    A missing object is a 404 NoSuchKey only for a caller that holds `s3:ListBucket` on the
    bucket; without it S3 answers 403 AccessDenied (S3 API reference, GetObject,
    "Permissions": https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html). The
    execution role is granted ListBucket (runtime/aws/iam.py), and `get` treats both answers
    as a missing blob, so a late duplicate whose input was collected is dropped either way
    (runtime/engine.py) rather than failed and retried by Lambda."""

    def __init__(self, bucket: str, prefix: str = "s/", client=None):
        self.bucket = bucket
        self.prefix = prefix
        self.client = client or _client("s3")

    def _key(self, session: str, key: str) -> str:
        return f"{self.prefix}{session}/{key}"

    def put(self, session, key, data):
        self.client.put_object(Bucket=self.bucket, Key=self._key(session, key), Body=data)
        return key

    def get(self, session, ref):
        try:
            return self.client.get_object(Bucket=self.bucket, Key=self._key(session, ref))["Body"].read()
        except self.client.exceptions.NoSuchKey:
            raise KeyError(f"blob s3://{self.bucket}/{self._key(session, ref)} not found") from None
        except self.client.exceptions.ClientError as err:
            if err.response.get("Error", {}).get("Code") not in MISSING_OBJECT_CODES:
                raise
            raise KeyError(f"blob s3://{self.bucket}/{self._key(session, ref)} not found "
                           f"({err.response['Error']['Code']}: missing, or not readable)") from None

    def delete(self, session, refs):
        """DeleteObjects (1000 keys per call); absent keys are ignored by S3."""
        keys = [self._key(session, r) for r in dict.fromkeys(refs)]
        for i in range(0, len(keys), 1000):
            self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": k} for k in keys[i:i + 1000]], "Quiet": True})

    def sweep(self, session, keep=()):
        """List the session's objects (ListObjectsV2) and delete all but `keep`
        (DeleteObjects, 1000 per call). No call is made when the session has no blobs."""
        kept = {self._key(session, k) for k in keep}
        doomed: list[str] = []
        kwargs: dict[str, Any] = dict(Bucket=self.bucket, Prefix=self._key(session, ""))
        while True:
            resp = self.client.list_objects_v2(**kwargs)
            doomed += [o["Key"] for o in resp.get("Contents", []) if o["Key"] not in kept]
            if not resp.get("IsTruncated"):
                break
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
        for i in range(0, len(doomed), 1000):
            self.client.delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": k} for k in doomed[i:i + 1000]], "Quiet": True})
