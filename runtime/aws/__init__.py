"""AWS target adapter: DynamoDB datastore, S3 blob store, Lambda invoker, Lambda entry point
and the per-app error handler; the execution history adapter (history.py: CloudWatch Logs
lines and a session index in the table); iam.py: the IAM actions each adapter's calls need,
from which the execution roles are rendered. boto3 is imported only here (the Lambda Python runtime ships
it; it is not bundled into function archives).

The Lambda runtime and architecture the archives are built for are deployment settings
(`clouds.aws.runtime` / `.architecture`, unumctl/deploy/settings.py), not runtime constants.
"""

__all__ = ["ENV_ALIAS", "ENV_APP_VERSION", "ENV_BLOB_PREFIX", "ENV_BUCKET", "ENV_FUNCTION_PREFIX", "ENV_HISTORY", "ENV_MAX_ATTEMPTS",
           "ENV_RESULT_RETENTION", "ENV_TABLE"]

# Environment variables set by the rendered Terraform on every function.
ENV_TABLE = "UNUM_TABLE"                  # DynamoDB table name
ENV_BUCKET = "UNUM_BUCKET"                # S3 bucket name for large values
ENV_BLOB_PREFIX = "UNUM_BLOB_PREFIX"      # key prefix inside the bucket (ends with '/')
ENV_FUNCTION_PREFIX = "UNUM_FUNCTION_PREFIX"  # deployed name = prefix + IR function name
ENV_MAX_ATTEMPTS = "UNUM_MAX_DELIVERY_ATTEMPTS"  # error handler: total delivery attempts
ENV_RESULT_RETENTION = "UNUM_RESULT_RETENTION_SECONDS"  # error handler: failure item expiry
ENV_HISTORY = "UNUM_HISTORY"              # error handler: runtime.history (full | session-only | off)
ENV_APP_VERSION = "UNUM_APP_VERSION"      # the app version the function belongs to (pins.py)
ENV_ALIAS = "UNUM_ALIAS"                  # the stage alias new sessions start through (pins.py)
