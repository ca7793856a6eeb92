"""Every deployed name of an app, computed in one place.

AWS (docs/aws.md): functions `<app>_<Function>` (Lambda: at most 64 characters), the error
handler `<app>_UnumErrorHandler`, the table `unum-<app>`, the bucket `unum-<app>-<suffix>`
(Terraform `bucket_prefix`, at most 37 characters), large values under the key prefix `s/`.
Other targets' names live in their folders (unumctl/<cloud>/names.py).
Local: `unum.db` (SQLite) and `blobs/` in the state directory `<app>/.unum/local`.
The runtime's own fallbacks use the same rules (runtime/names.py).
"""

from __future__ import annotations

from runtime.names import store_name

__all__ = ["store_name", "AWS_ERROR_HANDLER", "AWS_BLOB_PREFIX",
           "aws_function_prefix", "aws_function_pattern", "aws_function", "aws_error_handler", "aws_bucket_prefix",
           "AWS_FUNCTION_NAME_MAX", "AWS_FUNCTION_SEPARATOR", "AWS_ROLE_SUFFIX", "IAM_ROLE_NAME_MAX", "LOCAL_DATASTORE", "LOCAL_BLOBS"]

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


LOCAL_DATASTORE = "unum.db"  # local: the SQLite datastore in the state directory
LOCAL_BLOBS = "blobs"         # local: the file blob store's directory beside it
