"""The `gcp` target as the registry sees it (unumctl/registry.py): Cloud Functions gen2 + one
Pub/Sub topic per function + Firestore + GCS, deployed with Terraform. Only references here:
importing this module loads no SDK."""

from __future__ import annotations

from ..registry import TargetSpec

__all__ = ["SPEC"]

SPEC = TargetSpec(
    name="gcp",
    target="unumctl.gcp.target:GcpTarget",
    entry_line="from runtime.gcp.entry import handle_cloudevent  # noqa: F401\n",
    model="unumctl.gcp.model:build",
    history="unumctl.gcp.history:GcpHistoryReader.for_app",
    settings="unumctl.gcp.settings:GcpSection",
    bundle_hook="unumctl.gcp.bundle:gcp_bundle_entries",
    billing="unumctl.gcp.billing:BILLING",
    sizing="unumctl.gcp.sizing:SIZING",
    tuning="unumctl.gcp.tuning:TUNING",
    # runtime.gc of an app that sets none (unumctl.manifest.default_gc): Firestore bills a TTL
    # delete like any delete, so collecting early only adds tombstone writes, GC-set writes and
    # reads; leaving everything to the TTL policy halves the Firestore bill (docs/cost.md, "GCP:
    # Firestore operations per transition", per GC mode; docs/protocol.md "GC modes").
    gc_default="none",
    emulator="unumctl.gcp.emulate.run:EMULATOR",
    measure="unumctl.gcp.measure:measure_gcp",
    # the keys of the price table's "gcp" section (what billing.py reads)
    price_keys=("functions_invocation_per_million", "functions_vcpu_second", "functions_gib_second",
                "functions_billing_increment_ms", "functions_vcpu_by_memory_mb",
                "firestore_read_per_100k", "firestore_write_per_100k", "firestore_delete_per_100k",
                "pubsub_per_tib", "pubsub_min_message_bytes", "gcs_class_a_per_thousand",
                "gcs_class_b_per_thousand", "cloud_logging_ingestion_per_gib",
                # Google Cloud Workflows, the hosted orchestrator on gcp (unumctl/cost/systems.py)
                "workflows_internal_step_per_thousand", "workflows_external_step_per_thousand",
                # window timers (unumctl/gcp/timers.py)
                "cloud_scheduler_job_per_31_days"),
)
