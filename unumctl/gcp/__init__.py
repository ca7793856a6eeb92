"""The `gcp` target: Cloud Functions gen2 + one Pub/Sub topic per function + Firestore.

Importing this package registers the bundle hook (`unumctl.build.TARGETS['gcp']`) and the
Target (`unumctl.targets.register`).
"""

from __future__ import annotations

from ..build import TARGETS
from .bundle import gcp_bundle_entries

TARGETS["gcp"] = gcp_bundle_entries

from . import target  # noqa: E402,F401  (registers GcpTarget)
