"""`Datastore` on DynamoDB and `BlobStore` on S3 (boto3).

Source: seed 001 §4.1 (Unum on AWS: DynamoDB conditional writes and atomic set updates);
DynamoDB API: PutItem/UpdateItem `ConditionExpression`, `ReturnValues`,
`ReturnValuesOnConditionCheckFailure`, BatchGetItem `ConsistentRead` and `UnprocessedKeys`,
BatchWriteItem `UnprocessedItems`, Query; TTL on a Number attribute holding epoch seconds.

Table layout (created by terraform/modules/aws-unum-datastore):
    partition key `session` (S), sort key `name` (S)
    `j`           (S)  the item as compact JSON (exact JSON types; no Decimal conversion)
    `members`     (SS) a coordination set (fan-in / GC sets)
    `expires_at`  (N)  epoch seconds; the table's TTL attribute
An item larger than `max_item_bytes` never reaches the table: the engine puts the value in
the BlobStore (S3) and stores a pointer (runtime/engine.py `_store_value`).

Consistency note: `get_many` uses strongly consistent BatchGetItem (100 keys per call,
UnprocessedKeys retried with exponential backoff). Each item read sees every write that
completed before the call, but the items of one call are not read at a single instant
(TransactGetItems would be, but costs twice the read units and caps a call at 100 items and
4 MB). The engine tolerates this: the items it reads together are the session result, its
own checkpoint and its fan-in inputs; inputs are immutable once created (until a tombstone),
and the worst interleaving (own checkpoint swept after the session ended while the result
was read just before it was written) makes a stale duplicate run once more; its writes are
removed by the item expiry. Sets hold member names in a string set, so a set is bounded by
DynamoDB's 400 KB item size (about 10,000 names of 30 characters).
"""

from __future__ import annotations

import json
import os
import random
import time
from typing import Any, Iterable, Sequence

from ..ports import BlobStore, Datastore

_BATCH_GET = 100
_BATCH_WRITE = 25


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

    `table`: table name; `client`: a boto3 DynamoDB client (default: a new one).
    Raises botocore ClientError for infrastructure failures (the platform retries)."""

    max_item_bytes = 350_000  # DynamoDB's item limit is 400 KB including names and keys

    def __init__(self, table: str, client=None):
        self.table = table
        self.client = client or _client("dynamodb")

    @staticmethod
    def _key(session: str, name: str) -> dict[str, Any]:
        return {"session": {"S": session}, "name": {"S": name}}

    @staticmethod
    def _decode(attrs: dict[str, Any] | None) -> dict[str, Any] | None:
        if not attrs:
            return None
        if "j" in attrs:
            return json.loads(attrs["j"]["S"])
        if "members" in attrs:
            return {"members": sorted(attrs["members"]["SS"])}
        return {}

    def _item(self, session: str, name: str, item: dict[str, Any], expires_at: float) -> dict[str, Any]:
        return {**self._key(session, name),
                "j": {"S": json.dumps(item, separators=(",", ":"), ensure_ascii=False)},
                "expires_at": {"N": str(int(expires_at))}}

    def get_many(self, session: str, names: Sequence[str]) -> list[dict[str, Any] | None]:
        """Strongly consistent BatchGetItem in chunks of 100 with UnprocessedKeys retries
        (see the consistency note in the module docstring); order and duplicates kept."""
        uniq = list(dict.fromkeys(names))
        found: dict[str, dict[str, Any] | None] = {}
        for i in range(0, len(uniq), _BATCH_GET):
            request = {self.table: {"Keys": [self._key(session, n) for n in uniq[i:i + _BATCH_GET]],
                                    "ConsistentRead": True}}
            attempt = 0
            while request:
                resp = self.client.batch_get_item(RequestItems=request)
                for attrs in resp.get("Responses", {}).get(self.table, []):
                    found[attrs["name"]["S"]] = self._decode(attrs)
                request = resp.get("UnprocessedKeys") or {}
                if request:
                    _backoff(attempt)
                    attempt += 1
        return [found.get(n) for n in names]

    def create_if_absent(self, session, name, item, expires_at):
        """PutItem with `attribute_not_exists(#n)`; on conflict the stored item comes back in
        the same round trip (ReturnValuesOnConditionCheckFailure=ALL_OLD)."""
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

    def set_add(self, session, name, member, expires_at):
        """One UpdateItem: ADD the member to the string set and return the set
        (ReturnValues=ALL_NEW: the item holds only the set and its expiry); the size of the returned set is the result."""
        resp = self.client.update_item(
            TableName=self.table, Key=self._key(session, name),
            UpdateExpression="ADD members :m SET expires_at = if_not_exists(expires_at, :e)",
            ExpressionAttributeValues={":m": {"SS": [member]}, ":e": {"N": str(int(expires_at))}},
            ReturnValues="ALL_NEW")
        return len(resp["Attributes"]["members"]["SS"])

    def put(self, session, name, item, expires_at):
        self.client.put_item(TableName=self.table, Item=self._item(session, name, item, expires_at))

    def delete(self, session, names: Iterable[str]):
        """DeleteItem for one name, BatchWriteItem (25 per call, UnprocessedItems retried)
        for more."""
        names = list(dict.fromkeys(names))
        if len(names) == 1:
            self.client.delete_item(TableName=self.table, Key=self._key(session, names[0]))
            return
        self._batch_delete([self._key(session, n) for n in names])

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

    def names(self, session: str) -> list[str]:
        """Every item name of the session (strongly consistent Query, paginated)."""
        out: list[str] = []
        kwargs: dict[str, Any] = dict(
            TableName=self.table, KeyConditionExpression="#s = :s", ConsistentRead=True,
            ExpressionAttributeNames={"#s": "session", "#n": "name"},
            ExpressionAttributeValues={":s": {"S": session}}, ProjectionExpression="#n")
        while True:
            resp = self.client.query(**kwargs)
            out += [it["name"]["S"] for it in resp.get("Items", [])]
            if "LastEvaluatedKey" not in resp:
                return out
            kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]

    def sweep(self, session, keep):
        keep_set = set(keep)
        doomed = [n for n in self.names(session) if n not in keep_set]
        self._batch_delete([self._key(session, n) for n in doomed])
        return len(doomed)


class S3BlobStore(BlobStore):
    """Blobs as S3 objects `<prefix><session>/<key>` in `bucket` (private, SSE, lifecycle
    expiry configured by Terraform). Raises KeyError for an absent blob, botocore
    ClientError for other failures."""

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
