"""GCP target adapter: Firestore datastore, GCS blob store, Pub/Sub invoker and the entry
point of a Pub/Sub-triggered Cloud Functions gen2 function (seed 001 §4.2).

Only this package imports google-cloud-* libraries; the runtime core never does.
"""

__all__: list[str] = []  # submodules only
