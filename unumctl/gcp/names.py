"""Every deployed name of an app on GCP, computed in one place (docs/gcp.md "What is deployed").

A deployment is one app in one stage (`--stage`, `^[a-z][a-z0-9]{0,9}$`) in one region. Names
a project holds once, whatever the region, carry app + stage + region; names a region holds
carry app + stage:

| resource | scope | name | limit |
|---|---|---|---|
| Cloud Function (and its Cloud Run service), one per version | region | `<app>-<stage>-<fn>-<version>` lower-cased, '_' -> '-' | 63 |
| Cloud Scheduler job | region | `<app>-<stage>-window-<window>` | 500 |
| Pub/Sub topic of a function (one per version) | project | `<app>-<stage>-<region>-<version>-<fn>` (UNUM_TOPIC_PREFIX + fn) | 255 |
| dead-letter topic / its subscription | project | `<app>-<stage>-<region>-dead-letter[-hold]` | 255 |
| runtime service account (per-app) | project | `<app>-<stage>-<hash>` | 6-30 |
| runtime service account (per-function) | project | `<app>-<stage>-<fn>-<hash>` | 6-30 |
| Cloud Build service account | project | `<app>-<stage>-build-<hash>` | 6-30 |
| Firestore database | project | `unum-<app>-<stage>-<region>` | 4-63 |
| Firestore collection | database | `unum-<app>-<stage>-<region>` | 1500 B |
| buckets | global | `unum-<app>-<stage>-<region>[-src]-<8 random hex>` (prefix ≤ 50) | 63 |

A name over its limit keeps a readable head and ends in a hash of everything it stands for
(`_fit`), so names of different deployments stay distinct; a topic cannot be hashed (the
runtime appends the function to UNUM_TOPIC_PREFIX) and is checked at model time instead
(unumctl/gcp/model.py). Limits, from Google's reference pages:
- service account id: 6-30 characters, `[a-z]([-a-z0-9]*[a-z0-9])`, unique within a project
  (IAM API, projects.serviceAccounts.create `accountId`,
  https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts/create);
- topic id: 3-255 characters, starting with a letter, not `goog...` (Pub/Sub, "Resource
  names", https://cloud.google.com/pubsub/docs/pubsub-basics#resource_names and the Topic
  `name` field of https://cloud.google.com/pubsub/docs/reference/rest/v1/projects.topics);
- Firestore database id: 4-63 characters of a-z, 0-9, '-', a letter first, not ending in '-'
  (https://cloud.google.com/firestore/docs/reference/rest/v1/projects.databases/create);
- Cloud Functions id: 4-63 characters of a-z, 0-9, '-' (Cloud Functions v2
  CreateFunctionRequest `function_id`,
  https://cloud.google.com/functions/docs/reference/rest/v2/projects.locations.functions/create);
- bucket name: 3-63 characters, one namespace for all of Cloud Storage
  (https://cloud.google.com/storage/docs/buckets#naming);
- Cloud Scheduler job id: up to 500 characters
  (https://cloud.google.com/scheduler/docs/reference/rest/v1/projects.locations.jobs).
The runtime's own fallbacks (no UNUM_* variable set) are runtime/names.py and
runtime/gcp/invoker.py `topic_id`.
"""

from __future__ import annotations

import re

from runtime.gcp.invoker import topic_id
from runtime.names import payload_prefix, store_name

from ..deploy.names import short_hash

__all__ = ["payload_prefix", "topic_id", "topic_prefix", "version_topic_prefix", "version_function_name", "function_name", "service_account_id",
           "runtime_service_account_id", "build_service_account_id", "bucket_prefix", "database_name",
           "collection", "dead_letter_topic", "dead_letter_subscription", "scheduler_job",
           "SERVICE_ACCOUNT_ID_MAX", "TOPIC_ID_MAX", "DATABASE_ID_MAX", "FUNCTION_ID_MAX", "BUCKET_NAME_MAX",
           "BUCKET_PREFIX_MAX", "SCHEDULER_JOB_MAX", "SERVICE_ACCOUNT_ID", "SERVICE_ACCOUNT_ID_MIN"]

SERVICE_ACCOUNT_ID_MIN, SERVICE_ACCOUNT_ID_MAX = 6, 30
TOPIC_ID_MIN, TOPIC_ID_MAX = 3, 255
DATABASE_ID_MAX = 63
FUNCTION_ID_MAX = 63
BUCKET_NAME_MAX = 63
BUCKET_PREFIX_MAX = 50  # <prefix>-src-<8 hex> within BUCKET_NAME_MAX (terraform/modules/gcp-unum-datastore)
SCHEDULER_JOB_MAX = 500
SERVICE_ACCOUNT_ID = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])")


_h = short_hash  # the shared rule (unumctl/deploy/names.py)


def _fit(base: str, limit: int, key: str) -> str:
    """`base` when it is at most `limit` characters, else its head and `-<6 hex of key>`."""
    return base if len(base) <= limit else f"{base[:limit - 7].rstrip('-')}-{_h(key)}"


def _lower(text: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", text.lower())


def topic_prefix(app: str, stage: str, region: str) -> str:
    """Prefix of every topic of the deployment, `<app>-<stage>-<region>-` (UNUM_TOPIC_PREFIX)."""
    return f"{app}-{stage}-{region}-"


def version_topic_prefix(app: str, stage: str, region: str, version: str) -> str:
    """Prefix of the topics of one version of the deployment, `<app>-<stage>-<region>-<version>-`
    (the UNUM_TOPIC_PREFIX of that version's functions: docs/versions.md)."""
    return f"{topic_prefix(app, stage, region)}{version}-"


def function_name(app: str, stage: str, fn: str) -> str:
    """Cloud Functions name: lower-case `<app>-<stage>-<fn>` with '_' -> '-', ≤ 63 characters
    (a hash tail when longer or when lower-casing/replacing changed it, so names stay
    distinct). Regional: the region is in the function's resource name."""
    raw = f"{app}-{stage}-{fn}"
    base = raw.lower().replace("_", "-")
    if len(base) > FUNCTION_ID_MAX or base != raw:
        base = f"{base[:FUNCTION_ID_MAX - 7].rstrip('-')}-{_h(app + '/' + stage + '/' + fn)}"
    return base


def version_function_name(app: str, stage: str, fn: str, version: str) -> str:
    """Cloud Functions name of function `fn` of one version of the deployment:
    `function_name` of `<fn>-<version>` (each version is its own function while it is kept,
    docs/versions.md)."""
    return function_name(app, stage, f"{fn}-{version}")


def runtime_service_account_id(app: str, stage: str, region: str) -> str:
    """The deployment's one runtime service account (`service_accounts: per-app`):
    `<app>-<stage>` (at most 23 characters) and a hash of app, stage and region."""
    return f"{_lower(f'{app}-{stage}')[:23].rstrip('-')}-{_h(f'{app}/{stage}/{region}//run')}"


def service_account_id(app: str, stage: str, region: str, fn: str) -> str:
    """A function's own runtime service account (`service_accounts: per-function`):
    `<app>-<stage>-<fn>` (at most 23 characters) and a hash of app, stage, region and fn."""
    return f"{_lower(f'{app}-{stage}-{fn}')[:23].rstrip('-')}-{_h(f'{app}/{stage}/{region}/{fn}')}"


def build_service_account_id(app: str, stage: str, region: str) -> str:
    """account_id of the deployment's Cloud Build service account: `<app>-<stage>` (at most
    17 characters), `-build-` and a hash of app, stage and region (6-30 characters)."""
    return f"{_lower(f'{app}-{stage}')[:17].rstrip('-')}-build-{_h(f'{app}/{stage}/{region}//build')}"


def database_name(app: str, stage: str, region: str) -> str:
    """The deployment's own Firestore database `unum-<app>-<stage>-<region>` (≤ 63)."""
    return _fit(f"{store_name(app)}-{stage}-{region}", DATABASE_ID_MAX, f"{app}/{stage}/{region}//db").rstrip("-")


def collection(app: str, stage: str, region: str) -> str:
    """The Firestore collection of the deployment's items, `unum-<app>-<stage>-<region>`: apart
    from every other stage's even in a database they share (`clouds.gcp.database`)."""
    return f"{store_name(app)}-{stage}-{region}"


def bucket_prefix(app: str, stage: str, region: str) -> str:
    """Prefix of the deployment's two GCS buckets, `unum-<app>-<stage>-<region>` (≤ 50
    characters): Terraform adds a random suffix (terraform/modules/gcp-unum-datastore:
    `<prefix>-<8 hex>` for large values, `<prefix>-src-<8 hex>` for code archives), so the
    names are unique and unguessable; the deployed name is read back from the output `bucket`."""
    return _fit(f"{store_name(app)}-{stage}-{region}", BUCKET_PREFIX_MAX, f"{app}/{stage}/{region}//bucket")


def dead_letter_topic(app: str, stage: str, region: str) -> str:
    """The deployment's dead-letter topic, `<app>-<stage>-<region>-dead-letter`."""
    return f"{topic_prefix(app, stage, region)}dead-letter"


def dead_letter_subscription(app: str, stage: str, region: str) -> str:
    """The subscription that keeps the dead letters, `<dead-letter topic>-hold`."""
    return f"{dead_letter_topic(app, stage, region)}-hold"


def scheduler_job(app: str, stage: str, window: str) -> str:
    """Cloud Scheduler job of a ByTime window: `<app>-<stage>-window-<window>` ('_' -> '-';
    regional, like the function it ticks)."""
    return f"{app}-{stage}-window-{window}".replace("_", "-")
