"""Names the runtime and the deployment share (stdlib only; runtime never imports unumctl).

`unumctl/deploy/names.py` computes every deployed name and imports the two rules below, so
a function that finds no name in its environment falls back to the same one Terraform was
given. Source: docs/aws.md / docs/gcp.md "What is deployed".
"""

from __future__ import annotations


def store_name(app: str) -> str:
    """The app's datastore: DynamoDB table and Firestore collection `unum-<app>`."""
    return f"unum-{app}"


def payload_prefix(app: str) -> str:
    """GCS object prefix of the app's large values: `payloads/<app>` (no trailing '/')."""
    return f"payloads/{app}"
