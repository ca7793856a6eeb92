"""Every deployed name of an app on AWS, computed in one place (docs/aws.md).

Every name carries the app and the stage (`flags["stage"]`, `^[a-z][a-z0-9]{0,9}$`), and the
region too where AWS keeps the name account-global (IAM roles) or partition-global (S3
buckets), so stages and regions of one app never collide in one account:

| resource | name | scope | limit |
|---|---|---|---|
| Lambda function | `<app>-<stage>_<Function>` | region | 64 (CreateFunction FunctionName, https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html) |
| error handler | `<app>-<stage>_UnumErrorHandler` | region | 64 |
| log group | `/aws/lambda/<function>` (Lambda's) | region | 512 (CreateLogGroup, https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateLogGroup.html) |
| DynamoDB table | `unum-<app>-<stage>` | region | 255 (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html) |
| failed-event queue | `<table>-failed` (the datastore module) | region | 80 |
| schedule | `<app>-<stage>-window-<window>` | region | 64 (aws/timers.py) |
| function role | `<function>-<region>-role` | account | 64 (CreateRole RoleName, https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreateRole.html) |
| scheduler role | `<app>-<stage>-<region>-window-scheduler` | account | 64 |
| trigger function | `<app>-<stage>_trigger-<trigger>` (aws/sources.py) | region | 64 |
| trigger queue | `<app>-<stage>-<trigger>`, its DLQ `...-dlq` | region | 80 (CreateQueue QueueName) |
| trigger schedule / rule | `<app>-<stage>-trigger-<trigger>` | region | 64 (CreateSchedule Name; PutRule Name) |
| trigger scheduler role | `<app>-<stage>-<region>-trigger-scheduler` | account | 64 |
| bucket prefix | `unum-<app>-<stage>-<region>-` + Terraform's 26 characters | partition | 37 + 26 = 63 (bucket naming rules, https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html) |

App names are a-z, 0-9 and '-' (manifest.APP_NAME_RE), stage names a-z, 0-9: the first '_'
of a function name ends `<app>-<stage>`, and the IAM pattern `function:<app>-<stage>_*`
matches that stage's functions and nothing else (not another stage's, not the app `<app>-<stage>`'s,
whose names go on with `-`). Function, table and schedule names over their limit are
refused (aws/model.py, aws/timers.py: one line naming the field); the account- and
partition-global names, which nobody types, keep their readable start and end in
`short_hash` of their full text when over their limit, so they stay distinct. A model built
without a region (nothing can be deployed then: AwsTarget.region refuses) leaves the region
out of those names. The runtime's fallbacks use the same rules (runtime/names.py).
"""

from __future__ import annotations

from runtime.names import store_name

from ..deploy.names import short_hash

__all__ = ["ERROR_HANDLER", "BLOB_PREFIX", "FUNCTION_NAME_MAX", "FUNCTION_SEPARATOR", "ROLE_SUFFIX",
           "IAM_ROLE_NAME_MAX", "BUCKET_PREFIX_MAX", "TABLE_NAME_MAX", "app_stage", "function_prefix",
           "function_pattern", "function", "error_handler", "table", "bucket_prefix", "role",
           "scheduler_role", "schedule", "trigger_scheduler_role"]

ERROR_HANDLER = "UnumErrorHandler"  # unum name of the per-app error handler
BLOB_PREFIX = "s/"                   # S3 key prefix of large values
FUNCTION_NAME_MAX = 64               # Lambda: CreateFunction FunctionName (name only)
ROLE_SUFFIX = "-role"                # a function's role: <function>-<region>-role (aws-unum-function iam.tf)
IAM_ROLE_NAME_MAX = 64               # RoleName: 1-64 characters (IAM API reference, CreateRole)
TABLE_NAME_MAX = 255                 # DynamoDB table names: 3-255 characters
BUCKET_PREFIX_MAX = 37               # Terraform's bucket_prefix: 63 - its 26-character suffix
SCHEDULER_ROLE_SUFFIX = "-window-scheduler"
TRIGGER_SCHEDULER_ROLE_SUFFIX = "-trigger-scheduler"

FUNCTION_SEPARATOR = "_"  # between `<app>-<stage>` and the function: never in an app or stage name


def app_stage(app: str, stage: str) -> str:
    """`<app>-<stage>`: the start of every name of one stage of `app`."""
    return f"{app}-{stage}"


def function_prefix(app: str, stage: str) -> str:
    """Prefix of every deployed Lambda name of `app`'s `stage`: `<app>-<stage>_`
    (UNUM_FUNCTION_PREFIX); see the module docstring for why it is exact."""
    return f"{app_stage(app, stage)}{FUNCTION_SEPARATOR}"


def function_pattern(app: str, stage: str) -> str:
    """The IAM resource-name pattern of every Lambda function of `app`'s `stage` and nothing
    else: `<app>-<stage>_*` (the function part of `arn:...:lambda:REGION:ACCOUNT:function:...`)."""
    return function_prefix(app, stage) + "*"


def function(app: str, stage: str, fn: str) -> str:
    """Deployed Lambda name of IR function `fn`: `<app>-<stage>_<fn>`."""
    return function_prefix(app, stage) + fn


def error_handler(app: str, stage: str) -> str:
    """Deployed Lambda name of the stage's error handler: `<app>-<stage>_UnumErrorHandler`."""
    return function(app, stage, ERROR_HANDLER)


def table(app: str, stage: str) -> str:
    """The stage's DynamoDB table: `unum-<app>-<stage>` (regional)."""
    return f"{store_name(app)}-{stage}"


def _fit(base: str, suffix: str, limit: int, key: str) -> str:
    """`base + suffix`, or when longer than `limit` the start of `base`, '-', the short hash
    of `key` (the full name) and `suffix`: at most `limit` characters, distinct per `key`."""
    if len(base) + len(suffix) <= limit:
        return base + suffix
    h = short_hash(key)
    return f"{base[:limit - len(suffix) - len(h) - 1].rstrip('-_')}-{h}{suffix}"


def _regional(name: str, region: str | None) -> str:
    return f"{name}-{region}" if region else name


def bucket_prefix(app: str, stage: str, region: str | None) -> str:
    """S3 `bucket_prefix` of the stage in `region`: `unum-<app>-<stage>-<region>-` (Terraform
    adds a 26-character suffix; bucket names ≤ 63, unique in the partition), hashed past 37."""
    base = _regional(table(app, stage), region)
    return _fit(base, "-", BUCKET_PREFIX_MAX, base)


def role(function_name: str, region: str | None) -> str:
    """The execution role of Lambda `function_name` in `region` (IAM names are account-wide):
    `<function>-<region>-role`, hashed past IAM's 64 characters."""
    base = _regional(function_name, region)
    return _fit(base, ROLE_SUFFIX, IAM_ROLE_NAME_MAX, base)


def scheduler_role(app: str, stage: str, region: str | None) -> str:
    """The window schedules' execution role: `<app>-<stage>-<region>-window-scheduler`,
    hashed past IAM's 64 characters."""
    base = _regional(app_stage(app, stage), region)
    return _fit(base, SCHEDULER_ROLE_SUFFIX, IAM_ROLE_NAME_MAX, base)


def trigger_scheduler_role(app: str, stage: str, region: str | None) -> str:
    """The schedule triggers' execution role: `<app>-<stage>-<region>-trigger-scheduler`,
    hashed past IAM's 64 characters (unumctl/aws/sources.py)."""
    base = _regional(app_stage(app, stage), region)
    return _fit(base, TRIGGER_SCHEDULER_ROLE_SUFFIX, IAM_ROLE_NAME_MAX, base)


def schedule(app: str, stage: str, window: str) -> str:
    """The EventBridge Scheduler schedule of ByTime window `window` (regional):
    `<app>-<stage>-window-<window>` (aws/timers.py checks its 64 characters)."""
    return f"{app_stage(app, stage)}-window-{window}"
