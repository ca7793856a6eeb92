"""Names the runtime and the deployment share (stdlib only; runtime never imports unumctl).

`unumctl/deploy/names.py` computes every deployed name and imports the two rules below, so
a function that finds no name in its environment falls back to the same one Terraform was
given. Source: docs/aws.md / docs/gcp.md "What is deployed".
"""

from __future__ import annotations

__all__ = ["database_name", "payload_prefix", "store_name"]


def store_name(app: str) -> str:
    """The app's datastore: DynamoDB table and Firestore collection `unum-<app>`."""
    return f"unum-{app}"


def database_name(app: str) -> str:
    """The app's own Firestore database `unum-<app>` (GCP; a trailing '-' dropped): a
    database id is 4-63 characters of a-z, 0-9, '-', starting with a letter and ending with a
    letter or digit, not UUID-like (Firestore REST projects.databases.create, `databaseId`:
    https://cloud.google.com/firestore/docs/reference/rest/v1/projects.databases/create).
    An app name (3-40 characters of a-z, 0-9, '-', starting with a letter) always gives one."""
    return store_name(app).rstrip("-")


def payload_prefix(app: str) -> str:
    """GCS object prefix of the app's large values: `payloads/<app>` (no trailing '/')."""
    return f"payloads/{app}"
