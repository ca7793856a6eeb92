"""Lambda's memory sizes and compute price for `unumctl tune` (unumctl/tuning/sizing.py).

Lambda: 128 MB to 10,240 MB in 1-MB increments; CPU in proportion to memory, 1,769 MB =
one vCPU (https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html). The
candidates are AWS Lambda Power Tuning's default power values (128, 256, 512, 1024, 1536,
3008; https://github.com/alexcasalboni/aws-lambda-power-tuning) with 1,769 (one vCPU) and
5,120 / 10,240 up to Lambda's maximum. Prices: the price table's `aws` section
(lambda_gb_second, lambda_request_per_million, lambda_billing_increment_ms)."""

from __future__ import annotations

from typing import Any

from ..tuning.sizing import Sizing

__all__ = ["SIZING"]

MB_PER_VCPU = 1769


def _usd(memory_mb: int, billed_seconds: float, prices: dict[str, Any]) -> float:
    a = prices["aws"]
    return billed_seconds * memory_mb / 1024 * a["lambda_gb_second"] + a["lambda_request_per_million"] / 1e6


SIZING = Sizing(
    candidates_mb=(128, 256, 512, 1024, 1536, 1769, 3008, 5120, 10240),
    memory_range_mb=(128, 10240),
    increment_ms=lambda prices: float(prices["aws"]["lambda_billing_increment_ms"]),
    vcpu=lambda memory_mb, prices: memory_mb / MB_PER_VCPU,
    usd=_usd,
    source="https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html",
)
