"""Every deployed name of an app, computed in one place.

AWS (docs/aws.md): functions `<app>_<Function>` (Lambda: at most 64 characters), the error
handler `<app>_UnumErrorHandler`, the table `unum-<app>`, the bucket `unum-<app>-<suffix>`
(Terraform `bucket_prefix`, at most 37 characters), large values under the key prefix `s/`.
GCP (docs/gcp.md): Cloud Functions `<app>-<fn>` lower-cased (≤ 63 characters), topics
`<app>-<fn>` (runtime.gcp.invoker.topic_id), service account ids (6-30 characters; the
app's Cloud Build account `<app>-build-<hash>`), the Firestore database and collection
`unum-<app>`, the buckets `unum-<app>[-src]-<random hex>`, the dead-letter
topic `<app>-dead-letter`, payloads under `payloads/<app>`.
Local: `unum.db` (SQLite) and `blobs/` in the state directory `<app>/.unum/local`.
The runtime's own fallbacks use the same rules (runtime/names.py).
"""

from __future__ import annotations

import hashlib
import re

from runtime.gcp.invoker import topic_id
from runtime.names import database_name, payload_prefix, store_name

__all__ = ["store_name", "database_name", "payload_prefix", "topic_id", "AWS_ERROR_HANDLER", "AWS_BLOB_PREFIX",
           "aws_function_prefix", "aws_function_pattern", "aws_function", "aws_error_handler", "aws_bucket_prefix",
           "gcp_function", "gcp_service_account", "gcp_build_service_account", "gcp_bucket_prefix",
           "gcp_dead_letter_topic", "AWS_FUNCTION_NAME_MAX", "AWS_FUNCTION_SEPARATOR", "AWS_ROLE_SUFFIX", "IAM_ROLE_NAME_MAX", "LOCAL_DATASTORE", "LOCAL_BLOBS"]

AWS_ERROR_HANDLER = "UnumErrorHandler"  # unum name of the AWS per-app error handler
AWS_BLOB_PREFIX = "s/"                   # S3 key prefix of large values
AWS_FUNCTION_NAME_MAX = 64               # Lambda's limit on function names
AWS_ROLE_SUFFIX = "-role"               # the role the aws-unum-function module creates: <function>-role (iam.tf)
IAM_ROLE_NAME_MAX = 64                   # RoleName: 1-64 characters (IAM API reference, CreateRole,
                                         # https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html)


AWS_FUNCTION_SEPARATOR = "_"  # between the app and the function: never in an app name (manifest.APP_NAME_RE)


def aws_function_prefix(app: str) -> str:
    """Prefix of every deployed Lambda name of `app`: `<app>_` (UNUM_FUNCTION_PREFIX). App
    names are a-z, 0-9 and '-' only (manifest.APP_NAME_RE), so the '_' after the app is the
    first '_' of every name: the IAM resource pattern `...:function:<app>_*` matches this
    app's functions and no other app's, even one whose name starts with this one's (`shop`
    and `shop-eu`: `shop_*` does not match `shop-eu_Cart`); the error handler and the
    fan-out roles are granted that pattern (unumctl/aws/policies.py)."""
    return f"{app}{AWS_FUNCTION_SEPARATOR}"


def aws_function_pattern(app: str) -> str:
    """The IAM resource-name pattern of every Lambda function of `app` and no other app's:
    `<app>_*` (the function part of `arn:...:lambda:REGION:ACCOUNT:function:<app>_*`)."""
    return aws_function_prefix(app) + "*"


def aws_function(app: str, fn: str) -> str:
    """Deployed Lambda name of IR function `fn`: `<app>_<fn>`."""
    return aws_function_prefix(app) + fn


def aws_error_handler(app: str) -> str:
    """Deployed Lambda name of the app's error handler: `<app>_UnumErrorHandler`."""
    return aws_function(app, AWS_ERROR_HANDLER)


def aws_bucket_prefix(app: str) -> str:
    """S3 `bucket_prefix` (Terraform adds a 26-character suffix; bucket names ≤ 63)."""
    return f"{store_name(app)}-"[:37]


def _h(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:6]


def gcp_function(app: str, fn: str) -> str:
    """Cloud Functions name: lower-case `<app>-<fn>` with '_' -> '-', ≤ 63 chars (hash tail
    when longer or when lower-casing/replacing changed it, so names stay distinct)."""
    base = f"{app}-{fn}".lower().replace("_", "-")
    if len(base) > 63 or base != f"{app}-{fn}":
        base = f"{base[:56].rstrip('-')}-{_h(app + '/' + fn)}"
    return base


def gcp_service_account(app: str, fn: str) -> str:
    """Service account id (6-30 chars of [a-z0-9-], starting with a letter)."""
    base = re.sub(r"[^a-z0-9-]", "-", f"{app}-{fn}".lower())
    return f"{base[:23].rstrip('-')}-{_h(app + '/' + fn)}"


def gcp_build_service_account(app: str) -> str:
    """account_id of the app's Cloud Build service account: `<app>-build-<6 hex>` (6-30
    characters of a-z, 0-9, '-'; the hash keeps it apart from any function's account)."""
    return f"{app[:17].rstrip('-')}-build-{_h(app + '//build')}"


def gcp_bucket_prefix(app: str) -> str:
    """Prefix of the app's two GCS buckets, `unum-<app>` (≤ 45 characters): Terraform adds a
    random suffix (terraform/modules/gcp-unum-datastore: `<prefix>-<8 hex>` for large values,
    `<prefix>-src-<8 hex>` for code archives), so the names are unique and unguessable; the
    deployed name is read back from the Terraform output `bucket`."""
    return store_name(app).rstrip("-")


LOCAL_DATASTORE = "unum.db"  # local: the SQLite datastore in the state directory
LOCAL_BLOBS = "blobs"         # local: the file blob store's directory beside it


def gcp_dead_letter_topic(app: str) -> str:
    """The app's dead-letter topic (terraform/modules/gcp-unum-datastore names it so)."""
    return f"{app}-dead-letter"
