"""What co-location saves on AWS (unumctl.tuning.colocate.choose): the price of storing an
intermediate value and of one invocation, at the price table's rates (unumctl/cost/prices.json,
section "aws", with its sources: Lambda, DynamoDB on-demand and S3 pricing pages)."""

from __future__ import annotations

import math
from typing import Any, Mapping, cast

from runtime.aws.datastore import DynamoDBDatastore
from runtime.ports import Datastore
from runtime.storage import ValueStore

from ..tuning.sizing import FusionPrices

__all__ = ["TUNING", "inline_limit", "storage_usd"]


def inline_limit() -> int:
    """The largest value (JSON bytes) the runtime keeps in a DynamoDB item; a larger one goes
    to S3 behind a pointer unless it compresses under this (runtime.storage.ValueStore.piece
    with the adapter's DynamoDBDatastore.inline_value_bytes): the adapter's own rule, read
    from its class attributes."""
    return ValueStore(cast(Datastore, DynamoDBDatastore), cast(Any, None)).inline_limit


def storage_usd(nbytes: float, prices: Mapping[str, Any], reads: int = 1) -> float:
    """USD to commit a value of `nbytes` (its JSON) once and read it `reads` times, as the
    runtime stores it: up to `inline_limit()` (10 KB) in the item, a DynamoDB write of
    ceil(bytes / dynamodb_write_unit_bytes) WRU and strongly consistent reads of
    ceil(bytes / dynamodb_read_unit_bytes) RRU (an upper bound: the adapter compresses an
    item above COMPRESS_ABOVE when that saves a unit); above it a pointer item (1 WRU, 1 RRU
    per read) plus an S3 PUT and GETs, which is also about what a value compressed under the
    limit costs in the item (at most 10 WRU)."""
    p = prices["aws"]
    wru = p["dynamodb_write_request_unit_per_million"] / 1e6
    rru = p["dynamodb_read_request_unit_per_million"] / 1e6
    if nbytes > inline_limit():
        return wru + reads * rru + p["s3_put_per_thousand"] / 1e3 + reads * p["s3_get_per_thousand"] / 1e3
    return (math.ceil(max(nbytes, 1) / p["dynamodb_write_unit_bytes"]) * wru
            + reads * math.ceil(max(nbytes, 1) / p["dynamodb_read_unit_bytes"]) * rru)


def invocation_usd(ms: float, memory_mb: float, prices: Mapping[str, Any]) -> float:
    """USD of one Lambda request plus `ms` of duration at `memory_mb` (GB-seconds)."""
    p = prices["aws"]
    return p["lambda_request_per_million"] / 1e6 + ms / 1000 * memory_mb / 1024 * p["lambda_gb_second"]


# TargetSpec `tuning` of aws (unumctl/aws/spec.py; unumctl.tuning.colocate prices fusion with it)
TUNING = FusionPrices(storage_usd=storage_usd, invocation_usd=invocation_usd)
