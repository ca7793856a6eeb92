"""What co-location saves on GCP (unumctl.tuning.colocate.choose): the price of storing an
intermediate value and of one invocation, at the price table's rates (unumctl/cost/prices.json,
section "gcp", with its sources: Firestore, Cloud Storage and Cloud Functions gen2 pricing)."""

from __future__ import annotations

from typing import Any, Mapping

from ..tuning.sizing import FusionPrices

__all__ = ["FIRESTORE_INLINE_BYTES", "TUNING"]

# the GCP adapter's inline limit (runtime/gcp/datastore.py FirestoreDatastore.max_item_bytes,
# under Firestore's 1 MiB document size); read here without importing google-cloud-firestore
FIRESTORE_INLINE_BYTES = 1_000_000


def storage_usd(nbytes: float, prices: Mapping[str, Any], reads: int = 1) -> float:
    """USD to commit a value of `nbytes` once and read it `reads` times: one Firestore
    document write and `reads` document reads; above the inline limit also a GCS class A
    write and class B reads."""
    p = prices["gcp"]
    usd = p["firestore_write_per_100k"] / 1e5 + reads * p["firestore_read_per_100k"] / 1e5
    if nbytes > FIRESTORE_INLINE_BYTES:
        usd += p["gcs_class_a_per_thousand"] / 1e3 + reads * p["gcs_class_b_per_thousand"] / 1e3
    return usd


def invocation_usd(ms: float, memory_mb: float, prices: Mapping[str, Any]) -> float:
    """USD of one Cloud Functions gen2 invocation plus `ms` at `memory_mb`: GiB-seconds and
    the memory tier's vCPU-seconds (`functions_vcpu_by_memory_mb`)."""
    p = prices["gcp"]
    tiers = p["functions_vcpu_by_memory_mb"]
    vcpu = next((v for mb, v in tiers if memory_mb <= mb), tiers[-1][1])
    return (p["functions_invocation_per_million"] / 1e6
            + ms / 1000 * (memory_mb / 1024 * p["functions_gib_second"] + vcpu * p["functions_vcpu_second"]))


# TargetSpec `tuning` of gcp (unumctl/gcp/spec.py; unumctl.tuning.colocate prices fusion with it)
TUNING = FusionPrices(storage_usd=storage_usd, invocation_usd=invocation_usd)
