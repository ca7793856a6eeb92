"""What co-location saves on AWS (unumctl.tuning.colocate.choose): the price of storing an
intermediate value and of one invocation, at the price table's rates (unumctl/cost/prices.json,
section "aws", with its sources: Lambda, DynamoDB on-demand and S3 pricing pages)."""

from __future__ import annotations

import math
from typing import Any, Mapping

from runtime.aws.datastore import DynamoDBDatastore

from ..tuning.sizing import FusionPrices

__all__ = ["TUNING"]


def storage_usd(nbytes: float, prices: Mapping[str, Any], reads: int = 1) -> float:
    """USD to commit a value of `nbytes` once and read it `reads` times: a DynamoDB write of
    ceil(bytes / dynamodb_write_unit_bytes) WRU and strongly consistent reads of
    ceil(bytes / dynamodb_read_unit_bytes) RRU; above the adapter's inline limit
    (DynamoDBDatastore.max_item_bytes, under DynamoDB's 400 KB item size) a small item (1 WRU,
    1 RRU per read) plus an S3 PUT and GETs."""
    p = prices["aws"]
    wru = p["dynamodb_write_request_unit_per_million"] / 1e6
    rru = p["dynamodb_read_request_unit_per_million"] / 1e6
    if nbytes > DynamoDBDatastore.max_item_bytes:
        return wru + reads * rru + p["s3_put_per_thousand"] / 1e3 + reads * p["s3_get_per_thousand"] / 1e3
    return (math.ceil(max(nbytes, 1) / p["dynamodb_write_unit_bytes"]) * wru
            + reads * math.ceil(max(nbytes, 1) / p["dynamodb_read_unit_bytes"]) * rru)


def invocation_usd(ms: float, memory_mb: float, prices: Mapping[str, Any]) -> float:
    """USD of one Lambda request plus `ms` of duration at `memory_mb` (GB-seconds)."""
    p = prices["aws"]
    return p["lambda_request_per_million"] / 1e6 + ms / 1000 * memory_mb / 1024 * p["lambda_gb_second"]


# TargetSpec `tuning` of aws (unumctl/aws/spec.py; unumctl.tuning.colocate prices fusion with it)
TUNING = FusionPrices(storage_usd=storage_usd, invocation_usd=invocation_usd)
