"""Every deployed name of an app on AWS, computed in one place (docs/aws.md).

Functions `<app>_<Function>` (Lambda: at most 64 characters), the error handler
`<app>_UnumErrorHandler`, the table `unum-<app>`, the bucket `unum-<app>-<suffix>` (Terraform
`bucket_prefix`, at most 37 characters), large values under the key prefix `s/`. The names of
the other targets are in unumctl/deploy/names.py (shared) and their own packages; the
runtime's fallbacks use the same rules (runtime/names.py).
"""

from __future__ import annotations

from runtime.names import store_name

__all__ = ["ERROR_HANDLER", "BLOB_PREFIX", "FUNCTION_NAME_MAX", "FUNCTION_SEPARATOR", "ROLE_SUFFIX",
           "IAM_ROLE_NAME_MAX", "function_prefix", "function_pattern", "function", "error_handler",
           "bucket_prefix"]

ERROR_HANDLER = "UnumErrorHandler"  # unum name of the per-app error handler
BLOB_PREFIX = "s/"                   # S3 key prefix of large values
FUNCTION_NAME_MAX = 64               # Lambda's limit on function names
ROLE_SUFFIX = "-role"                # the role the aws-unum-function module creates: <function>-role (iam.tf)
IAM_ROLE_NAME_MAX = 64               # RoleName: 1-64 characters (IAM API reference, CreateRole,
                                     # https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html)

FUNCTION_SEPARATOR = "_"  # between the app and the function: never in an app name (manifest.APP_NAME_RE)


def function_prefix(app: str) -> str:
    """Prefix of every deployed Lambda name of `app`: `<app>_` (UNUM_FUNCTION_PREFIX). App
    names are a-z, 0-9 and '-' only (manifest.APP_NAME_RE), so the '_' after the app is the
    first '_' of every name: the IAM resource pattern `...:function:<app>_*` matches this
    app's functions and no other app's, even one whose name starts with this one's (`shop`
    and `shop-eu`: `shop_*` does not match `shop-eu_Cart`); the error handler and the
    fan-out roles are granted that pattern (unumctl/aws/policies.py)."""
    return f"{app}{FUNCTION_SEPARATOR}"


def function_pattern(app: str) -> str:
    """The IAM resource-name pattern of every Lambda function of `app` and no other app's:
    `<app>_*` (the function part of `arn:...:lambda:REGION:ACCOUNT:function:<app>_*`)."""
    return function_prefix(app) + "*"


def function(app: str, fn: str) -> str:
    """Deployed Lambda name of IR function `fn`: `<app>_<fn>`."""
    return function_prefix(app) + fn


def error_handler(app: str) -> str:
    """Deployed Lambda name of the app's error handler: `<app>_UnumErrorHandler`."""
    return function(app, ERROR_HANDLER)


def bucket_prefix(app: str) -> str:
    """S3 `bucket_prefix` (Terraform adds a 26-character suffix; bucket names ≤ 63)."""
    return f"{store_name(app)}-"[:37]
