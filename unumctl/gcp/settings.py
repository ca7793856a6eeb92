"""The typed `clouds.gcp` section of the manifest (docs/gcp.md "Settings"): gcp's TargetSpec
`settings` (unumctl/registry.py), resolved by the one precedence rule of
unumctl/deploy/settings.py `Section.resolved` (flag > environment > manifest > default; the
Google Cloud SDK's variables GOOGLE_CLOUD_PROJECT, CLOUDSDK_CORE_PROJECT, GCLOUD_PROJECT,
GOOGLE_CLOUD_REGION, CLOUDSDK_FUNCTIONS_REGION).
"""

from __future__ import annotations

import re
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from ..deploy.settings import Bool, Int, Section, Str

__all__ = ["GcpSection"]

# a Firestore database id: "(default)" or 4-63 of a-z, 0-9, '-', a letter first, a letter or
# digit last, not UUID-like (projects.databases.create `databaseId`,
# https://cloud.google.com/firestore/docs/reference/rest/v1/projects.databases/create)
DATABASE_ID = re.compile(r"[a-z][a-z0-9-]{2,61}[a-z0-9]")
SECRET_ID = re.compile(r"[A-Za-z0-9_-]{1,255}")
UUID_LIKE = re.compile(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")
# a service account's email (https://cloud.google.com/iam/docs/service-account-overview):
# user-managed `<id>@<project>.iam.gserviceaccount.com`, or a default account
SERVICE_ACCOUNT_EMAIL = re.compile(r"[a-z0-9][a-z0-9.-]{0,62}@[a-z][a-z0-9.-]{2,120}\.gserviceaccount\.com")


class GcpSection(Section):
    """`clouds.gcp` (docs/gcp.md). `payload_expiry_days` None = the runtime's blob expiry
    (runtime.engine.Options.retention.blob_expiry_days). `database` None = the app's own
    database `unum-<app>` (unumctl/gcp/names.py), `"(default)"` only when written so (a project's
    `(default)` database may already exist and is shared by every app that uses it).
    `build_service_account` None = a Cloud Build account created for the app with the
    documented roles; an email = the user's own account, used as it is.
    `aws_credentials_secret` None = AWS service integrations are refused; a Secret Manager
    secret id = the functions that run them read the AWS access key pair from that secret
    (a secret environment variable, runtime.asl.integrations.sdk ENV_AWS_CREDENTIALS).
    `service_accounts`: `per-app` (default) = one runtime service account for every function
    of the deployment (app + stage + region); `per-function` = each function its own, so a
    function's code cannot publish to topics its workflow does not let it call, at the price
    of one account per function against the project's quota (docs/gcp.md "Service accounts").
    `max_service_accounts`: the model fails (one line) when the deployment would create more
    accounts than this (runtime accounts + the Cloud Build account)."""

    ENV: ClassVar[dict[str, tuple[str, ...]]] = {
        "project": ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"),
        "region": ("GOOGLE_CLOUD_REGION", "CLOUDSDK_FUNCTIONS_REGION")}
    project: Str | None = None
    region: Str = "us-central1"
    database: Str | None = None
    create_database: Bool = True
    build_service_account: Str | None = None
    database_location: Str = "nam5"
    max_instances: Int(100) = 100
    payload_expiry_days: Int(7) | None = None
    aws_credentials_secret: Str | None = None
    # one runtime service account for the deployment (per-app) or one per function; and the
    # most accounts (runtime + Cloud Build) the model accepts (unumctl/gcp/model.py)
    service_accounts: Literal["per-app", "per-function"] = "per-app"
    max_service_accounts: Int(20) = 20
    # ByTime window -> seconds between the scheduler's ticks on this cloud (unumctl/gcp/timers.py)
    window_seconds: dict[str, Int(60)] = Field(default_factory=dict)

    @field_validator("aws_credentials_secret")
    @classmethod
    def _aws_secret(cls, v: str | None) -> str | None:
        # a secret ID: at most 255 of letters, digits, '-' and '_' (Secret Manager API,
        # projects.secrets.create, secretId:
        # https://cloud.google.com/secret-manager/docs/reference/rest/v1/projects.secrets/create)
        if v is not None and not SECRET_ID.fullmatch(v):
            raise ValueError(f"{v[:70]!r} must be a Secret Manager secret id (1-255 characters of "
                             "letters, digits, '-' and '_') whose value holds the AWS access key pair, "
                             "never the keys themselves")
        return v

    @field_validator("database")
    @classmethod
    def _database(cls, v: str | None) -> str | None:
        if v is not None and v != "(default)" and (not DATABASE_ID.fullmatch(v) or UUID_LIKE.fullmatch(v)):
            raise ValueError(f"{v[:70]!r} must be (default) or a Firestore database id: 4-63 characters "
                             "of a-z, 0-9 and '-', starting with a letter, not ending with '-', not a UUID")
        return v

    @field_validator("build_service_account")
    @classmethod
    def _build_sa(cls, v: str | None) -> str | None:
        if v is not None and not SERVICE_ACCOUNT_EMAIL.fullmatch(v):
            raise ValueError(f"{v[:70]!r} must be a service account email, e.g. "
                             "builder@my-project.iam.gserviceaccount.com")
        return v

    @field_validator("service_accounts", mode="before")
    @classmethod
    def _accounts(cls, v: object) -> object:
        if v not in ("per-app", "per-function"):
            raise ValueError(f"{str(v)[:40]!r} must be per-app or per-function")
        return v

    @field_validator("max_service_accounts")
    @classmethod
    def _budget(cls, v: int) -> int:
        if v < 1:
            raise ValueError(f"{v} must be at least 1 (the runtime account)")
        return v
