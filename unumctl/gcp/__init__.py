"""The `gcp` target: Cloud Functions gen2 + one Pub/Sub topic per function + Firestore.

`spec.py` registers its parts (unumctl/registry.py).
"""

__all__: list[str] = []  # submodules only
