"""GCP target adapter: Firestore datastore, GCS blob store, Pub/Sub invoker and the entry
point of a Pub/Sub-triggered Cloud Functions gen2 function (seed 001 §4.2).

Only this package imports google-cloud-* libraries; the runtime core never does.
"""

__all__ = ["GC_DEFAULT"]

# runtime.gc of an app that sets none (unumctl.manifest.default_gc): Firestore bills a TTL
# delete like any delete, so collecting early only adds tombstone writes, GC-set writes and
# reads; leaving everything to the TTL policy halves the Firestore bill (docs/cost.md, "GCP:
# Firestore operations per transition", per GC mode; docs/protocol.md "GC modes").
GC_DEFAULT = "none"
