"""`BlobStore` on Google Cloud Storage (google-cloud-storage).

Source: docs/architecture.md §3 "Data size" (checkpoints above Firestore's 1 MiB document limit
and payloads above the Pub/Sub message limit go by reference), GCS JSON API objects
insert/get/list/delete. Objects live at `gs://<bucket>/<prefix>/<session>/<key>`; the
bucket's lifecycle rule expires the `payloads/` prefix (terraform/modules/gcp-unum-datastore).
Honours STORAGE_EMULATOR_HOST (the tests use PyPI gcp-storage-emulator).
"""

from __future__ import annotations

from collections import Counter
from typing import Sequence

from google.api_core import exceptions as gexc

from ..ports import BlobStore

__all__ = ["GcsBlobStore"]


class GcsBlobStore(BlobStore):
    """Blobs in one GCS bucket under `prefix` (default `payloads/<app>`).

    `client`: google.cloud.storage.Client. Raises google.api_core exceptions on errors
    (KeyError from get when the object is absent). `usage` counts class A (writes, lists)
    and class B (reads) operations, the GCS pricing units."""

    def __init__(self, client, bucket: str, prefix: str):
        self.client = client
        self.bucket = client.bucket(bucket)
        self.prefix = prefix.strip("/")
        self.usage: Counter[str] = Counter()

    def _name(self, session: str, key: str) -> str:
        return f"{self.prefix}/{session}/{key}"

    def put(self, session, key, data):
        self.bucket.blob(self._name(session, key)).upload_from_string(
            data, content_type="application/json")
        self.usage["class_a"] += 1
        return key

    def get(self, session, ref):
        self.usage["class_b"] += 1
        try:
            return self.bucket.blob(self._name(session, ref)).download_as_bytes()
        except gexc.NotFound:
            raise KeyError(f"blob gs://{self.bucket.name}/{self._name(session, ref)} not found") from None

    def delete(self, session, refs):
        """Delete objects by reference (one class A operation each); absent ones are ignored."""
        for ref in dict.fromkeys(refs):
            self.usage["class_a"] += 1
            try:
                self.bucket.blob(self._name(session, ref)).delete()
            except gexc.NotFound:
                pass

    def sweep(self, session, keep: Sequence[str] = ()):
        """List the session's objects and delete all but `keep`."""
        kept = {self._name(session, k) for k in keep}
        self.usage["class_a"] += 1
        for blob in list(self.client.list_blobs(self.bucket, prefix=f"{self.prefix}/{session}/")):
            if blob.name not in kept:
                try:
                    blob.delete()
                except gexc.NotFound:
                    pass
