"""Cloud Functions gen2 memory sizes and compute price for `unumctl tune`
(unumctl/tuning/sizing.py).

gen2 functions are Cloud Run services: memory from 128 MiB up to 32 GiB, each size with its
minimum vCPU ("Configure memory limits",
https://cloud.google.com/functions/docs/configuring/memory); the vCPU per size used here is
the price table's `gcp.functions_vcpu_by_memory_mb` (the size's default vCPU, as
`unumctl cost` bills it). Candidates: the settings 128 MB to 8 GB by powers of two. Prices:
`functions_gib_second`, `functions_vcpu_second`, `functions_invocation_per_million`, billed
per `functions_billing_increment_ms`."""

from __future__ import annotations

from typing import Any

from ..tuning.sizing import Sizing
from .billing import vcpu_for_memory

__all__ = ["SIZING"]


def _usd(memory_mb: int, billed_seconds: float, prices: dict[str, Any]) -> float:
    g = prices["gcp"]
    return (billed_seconds * memory_mb / 1024 * g["functions_gib_second"]
            + billed_seconds * vcpu_for_memory(prices, memory_mb) * g["functions_vcpu_second"]
            + g["functions_invocation_per_million"] / 1e6)


SIZING = Sizing(
    candidates_mb=(128, 256, 512, 1024, 2048, 4096, 8192),
    memory_range_mb=(128, 32768),
    increment_ms=lambda prices: float(prices["gcp"]["functions_billing_increment_ms"]),
    vcpu=lambda memory_mb, prices: vcpu_for_memory(prices, memory_mb),
    usd=_usd,
    source="https://cloud.google.com/functions/docs/configuring/memory",
)
