"""Every deployed name of an app on GCP, computed in one place (docs/gcp.md "What is deployed").

Cloud Functions `<app>-<fn>` lower-cased (≤ 63 characters), topics `<app>-<fn>`
(runtime.gcp.invoker.topic_id), service account ids (6-30 characters; the app's Cloud Build
account `<app>-build-<hash>`), the Firestore database and collection `unum-<app>`, the
buckets `unum-<app>[-src]-<random hex>`, the dead-letter topic `<app>-dead-letter`,
payloads under `payloads/<app>`. The runtime's own fallbacks use the same rules
(runtime/names.py, runtime/gcp/invoker.py).
"""

from __future__ import annotations

import re

from runtime.gcp.invoker import topic_id
from runtime.names import database_name, payload_prefix, store_name

from ..deploy.names import short_hash

__all__ = ["store_name", "database_name", "payload_prefix", "topic_id", "function_name",
           "service_account_id", "build_service_account_id", "bucket_prefix", "dead_letter_topic"]


_h = short_hash  # the shared rule (unumctl/deploy/names.py)


def function_name(app: str, fn: str) -> str:
    """Cloud Functions name: lower-case `<app>-<fn>` with '_' -> '-', ≤ 63 chars (hash tail
    when longer or when lower-casing/replacing changed it, so names stay distinct)."""
    base = f"{app}-{fn}".lower().replace("_", "-")
    if len(base) > 63 or base != f"{app}-{fn}":
        base = f"{base[:56].rstrip('-')}-{_h(app + '/' + fn)}"
    return base


def service_account_id(app: str, fn: str) -> str:
    """Service account id (6-30 chars of [a-z0-9-], starting with a letter)."""
    base = re.sub(r"[^a-z0-9-]", "-", f"{app}-{fn}".lower())
    return f"{base[:23].rstrip('-')}-{_h(app + '/' + fn)}"


def build_service_account_id(app: str) -> str:
    """account_id of the app's Cloud Build service account: `<app>-build-<6 hex>` (6-30
    characters of a-z, 0-9, '-'; the hash keeps it apart from any function's account)."""
    return f"{app[:17].rstrip('-')}-build-{_h(app + '//build')}"


def bucket_prefix(app: str) -> str:
    """Prefix of the app's two GCS buckets, `unum-<app>` (≤ 45 characters): Terraform adds a
    random suffix (terraform/modules/gcp-unum-datastore: `<prefix>-<8 hex>` for large values,
    `<prefix>-src-<8 hex>` for code archives), so the names are unique and unguessable; the
    deployed name is read back from the Terraform output `bucket`."""
    return store_name(app).rstrip("-")


def dead_letter_topic(app: str) -> str:
    """The app's dead-letter topic (terraform/modules/gcp-unum-datastore names it so)."""
    return f"{app}-dead-letter"
