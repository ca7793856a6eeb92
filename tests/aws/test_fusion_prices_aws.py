"""What `unumctl tune` says a fusion saves on AWS prices a value the way the runtime stores it
(unumctl/aws/tuning.py storage_usd): in the DynamoDB item up to the adapter's inline limit, in
S3 behind a pointer above it (runtime.storage.ValueStore.piece). A storage model that priced a
21 KB value at 21 WRU claimed savings above what `unumctl cost` measures for the whole app."""

from __future__ import annotations

import json
import os

import pytest

from runtime.aws.datastore import DynamoDBDatastore
from runtime.storage import ValueStore
from unumctl.aws import tuning
from unumctl.cost.prices import load_prices


class _Blobs:
    """A BlobStore that keeps what is put (the test only asks where a value goes)."""

    def __init__(self) -> None:
        self.put_keys: list[str] = []

    def put(self, session: str, key: str, data: bytes) -> str:
        self.put_keys.append(key)
        return key


def _incompressible(nbytes: int) -> str:
    """A JSON string value of about `nbytes` that zlib cannot shrink."""
    return os.urandom(nbytes // 2).hex()[: nbytes - 2]


def _s3_path(prices, reads: int = 1) -> float:
    p = prices["aws"]
    return (p["dynamodb_write_request_unit_per_million"] / 1e6 + reads * p["dynamodb_read_request_unit_per_million"] / 1e6
            + p["s3_put_per_thousand"] / 1e3 + reads * p["s3_get_per_thousand"] / 1e3)


@pytest.mark.parametrize("nbytes", [600, 5_000, 10_000, 10_500, 21_000, 120_000])
def test_storage_price_follows_where_the_runtime_puts_the_value(nbytes):
    """For an incompressible value, tune prices the S3 path exactly when the runtime's
    ValueStore (with the DynamoDB adapter) writes a blob, and the item otherwise."""
    prices = load_prices()
    blobs = _Blobs()
    store = ValueStore(DynamoDBDatastore("t", client=object()), blobs)  # type: ignore[arg-type]
    value = _incompressible(nbytes)
    data_len = len(json.dumps(value))
    piece = store.piece("s", "p", value)
    priced = tuning.storage_usd(data_len, prices)
    if "blob" in piece:
        assert blobs.put_keys and priced == pytest.approx(_s3_path(prices))
    else:
        assert not blobs.put_keys and priced < _s3_path(prices) * 1.2


def test_a_large_value_costs_no_more_than_its_s3_path():
    """Above the inline limit the price no longer grows with the value's size (1 WRU per KB
    would make a 120 KB value 120 WRU)."""
    prices = load_prices()
    assert tuning.inline_limit() == DynamoDBDatastore.inline_value_bytes
    assert tuning.storage_usd(21_000, prices) == tuning.storage_usd(120_000, prices) == pytest.approx(_s3_path(prices))
    assert tuning.storage_usd(21_000, prices, reads=3) == pytest.approx(_s3_path(prices, reads=3))


def test_checker_catches_the_uncompressed_item_model(monkeypatch):
    """The old model (every value in the item, 1 WRU per KB up to DynamoDB's item size) is
    caught: a 21 KB value then costs several times its S3 path."""
    prices = load_prices()
    monkeypatch.setattr(tuning, "inline_limit", lambda: DynamoDBDatastore.max_item_bytes)
    assert tuning.storage_usd(21_000, prices) > 2 * _s3_path(prices)
