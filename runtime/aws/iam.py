"""What each AWS adapter of the runtime calls, as IAM actions on which resource: the one table
the functions' execution roles are rendered from.

`PERMISSIONS` has one row per API operation a caller makes: (caller, operation, IAM actions
the operation needs, resource). The callers are the adapters of this package (`datastore`,
`blobs`, `invoker`, `history`: runtime/aws/datastore.py, invoker.py, history.py) and the
Lambda service acting with the function's execution role (`lambda`: the log lines of stdout
and stderr, the on-failure record of an SQS destination, a customer-managed key). A resource
is a logical name; terraform/modules/aws-unum-function/iam.tf maps each to its ARNs and makes
one policy statement of it, with the resource name as its `Sid`:

    Datastore         the app's DynamoDB table
    Blobs             objects below the blob prefix of the app's bucket (`<bucket>/<prefix>*`)
    ListBlobs         the bucket itself
    InvokeSuccessors  the functions this one may invoke (successors, error handler)
    Logs              the streams of the function's own log group
    OnFailureQueue    the app's failure queue (the error handler's SQS destination only)
    Kms               the customer-managed key (only when `clouds.aws.kms_key_arn` is set)

Sources, per row below: the IAM Service Authorization Reference ("Actions, resources, and
condition keys for Amazon DynamoDB / Amazon S3 / AWS Lambda"); DynamoDB Developer Guide,
"Using IAM policies with DynamoDB transactions": a TransactWriteItems call is authorised by
the actions of the writes inside it (PutItem, UpdateItem, DeleteItem, ConditionCheckItem),
not by an action of its own; S3 API reference, GetObject "Permissions"
(https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html): "If the object that you
request doesn't exist, the error that Amazon S3 returns depends on whether you also have the
s3:ListBucket permission": 404 NoSuchKey with it, 403 AccessDenied without it. A GetObject
request carries no `s3:prefix` context key, so ListBucket must be granted without an
`s3:prefix` condition for a missing blob to be a 404 (the bucket holds only the app's blobs).

The Step Functions integration Tasks a compiled function runs add statements of their own
(`integration_statements`, Sid `Integration<n>`: the Task's actions on the resource its
definition names, runtime.asl.integrations.iam); iam.tf renders them after the table's.

Adding an API call to an adapter means adding its row here; tests/aws/test_iam_aws.py records
every call the deployed runtime makes under moto's IAM enforcement and fails on a call the
rendered policy does not grant and on a granted action no test called.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["BLOBS", "BUCKET", "DATASTORE", "FAILURE_QUEUE", "INVOKE", "KMS", "LOGS", "PERMISSIONS",
           "PLATFORM", "actions_of", "integration_statements", "role_permissions"]

DATASTORE = "Datastore"
BLOBS = "Blobs"
BUCKET = "ListBlobs"
INVOKE = "InvokeSuccessors"
LOGS = "Logs"
FAILURE_QUEUE = "OnFailureQueue"
KMS = "Kms"
RESOURCES = (DATASTORE, BLOBS, BUCKET, INVOKE, LOGS, FAILURE_QUEUE, KMS)

# callers made by the Lambda service with the execution role, not by runtime code
PLATFORM = "lambda"


class Permission(NamedTuple):
    """One row: `caller` (adapter, or PLATFORM), `operation` ("service:ApiOperation" as
    botocore names it), `actions` (IAM actions it needs), `resource` (a name of RESOURCES)."""

    caller: str
    operation: str
    actions: tuple[str, ...]
    resource: str


PERMISSIONS: tuple[Permission, ...] = (
    # runtime/aws/datastore.py DynamoDBDatastore
    Permission("datastore", "dynamodb:BatchGetItem", ("dynamodb:BatchGetItem",), DATASTORE),  # get_many
    Permission("datastore", "dynamodb:PutItem", ("dynamodb:PutItem",), DATASTORE),  # create_if_absent, put
    Permission("datastore", "dynamodb:GetItem", ("dynamodb:GetItem",), DATASTORE),  # set_add past the inline members, set_size
    Permission("datastore", "dynamodb:UpdateItem", ("dynamodb:UpdateItem",), DATASTORE),  # set_add (inline members)
    Permission("datastore", "dynamodb:TransactWriteItems", ("dynamodb:PutItem", "dynamodb:UpdateItem"),
               DATASTORE),  # set_add: Put member + Update counter
    Permission("datastore", "dynamodb:DeleteItem", ("dynamodb:DeleteItem",), DATASTORE),  # delete (one key)
    Permission("datastore", "dynamodb:BatchWriteItem", ("dynamodb:BatchWriteItem",), DATASTORE),  # delete, sweep
    Permission("datastore", "dynamodb:Query", ("dynamodb:Query",), DATASTORE),  # set members, sweep
    # runtime/aws/history.py CloudWatchEvents: the session index
    Permission("history", "dynamodb:UpdateItem", ("dynamodb:UpdateItem",), DATASTORE),
    # runtime/aws/datastore.py S3BlobStore
    Permission("blobs", "s3:PutObject", ("s3:PutObject",), BLOBS),
    Permission("blobs", "s3:GetObject", ("s3:GetObject",), BLOBS),
    Permission("blobs", "s3:GetObject", ("s3:ListBucket",), BUCKET),  # a missing blob is a 404, not a 403
    Permission("blobs", "s3:DeleteObjects", ("s3:DeleteObject",), BLOBS),
    Permission("blobs", "s3:ListObjectsV2", ("s3:ListBucket",), BUCKET),  # sweep
    # runtime/aws/invoker.py LambdaInvoker
    Permission("invoker", "lambda:Invoke", ("lambda:InvokeFunction",), INVOKE),
    # the Lambda service with the execution role (Lambda developer guide, "Lambda execution role")
    Permission(PLATFORM, "logs:CreateLogStream", ("logs:CreateLogStream",), LOGS),
    Permission(PLATFORM, "logs:PutLogEvents", ("logs:PutLogEvents",), LOGS),
    Permission(PLATFORM, "sqs:SendMessage", ("sqs:SendMessage",), FAILURE_QUEUE),
    Permission(PLATFORM, "kms:Decrypt", ("kms:Decrypt",), KMS),
    Permission(PLATFORM, "kms:GenerateDataKey", ("kms:GenerateDataKey",), KMS),
)


def role_permissions() -> dict[str, list[str]]:
    """The execution role of every function: resource name -> the sorted IAM actions granted
    on it (the `permissions` input of terraform/modules/aws-unum-function). Every function
    gets the same table; the module grants a resource only where the function has one
    (successors, an SQS failure destination, a KMS key)."""
    out: dict[str, set[str]] = {}
    for p in PERMISSIONS:
        out.setdefault(p.resource, set()).update(p.actions)
    return {r: sorted(out[r]) for r in RESOURCES if r in out}


def actions_of(operation: str) -> dict[str, tuple[str, ...]]:
    """Resource name -> the IAM actions `operation` ("service:ApiOperation") needs there;
    empty when no adapter may call it."""
    out: dict[str, tuple[str, ...]] = {}
    for p in PERMISSIONS:
        if p.operation == operation:
            out[p.resource] = tuple(sorted(set(out.get(p.resource, ())) | set(p.actions)))
    return out


# ------------------------------------------------------------------ integration Tasks
INTEGRATION_SID = "Integration"  # Sid prefix of the integration statements (Integration0, ...)


def integration_statements(wrapper: dict | None) -> list[dict]:
    """The statements of the Step Functions integration Tasks a compiled function runs
    (its IR wrapper's `Integrations`: [scope, state] pairs, or [scope, Map state,
    "ItemReader" | "ResultWriter"] for a Distributed Map's S3 access; unumctl/asl/compiler.py), as
    [{"sid", "actions", "resources"}] for the `integrations` input of
    terraform/modules/aws-unum-function: the actions of each Task's integration on the
    resource its definition names (an ARN template with `{partition}`, `{region}`,
    `{account}`), or on `*` when the Task chooses it at run time
    (runtime.asl.integrations.iam). Statements with the same resources are merged; [] for
    a function that runs none. Raises KeyError for a state the definition lacks."""
    from runtime.asl.integrations import registry as integrations
    from runtime.asl.integrations.iam import statements
    from runtime.asl.machine import scope_states

    from runtime.asl.wrapper_ir import of
    if not isinstance(wrapper, dict) or not wrapper.get("Integrations"):
        return []
    w = of(wrapper)
    if w is None:
        return []
    definition = w.definition
    by_resources: dict[tuple[str, ...], set[str]] = {}
    for scope, name, *part in w.integrations:
        st = scope_states(definition, scope)[name]
        jsonata = (st.get("QueryLanguage") or definition.get("QueryLanguage")) == "JSONata"
        if part:  # a Distributed Map's ItemReader or ResultWriter: [scope, state, field]
            st = st[part[0]]
        target = integrations.find(st.get("Resource", ""))
        if target is None or not (target.inline or (scope, name) in w.external):
            continue  # the app's own Lambda functions: InvokeSuccessors
        for s in statements(target, st, jsonata):
            by_resources.setdefault(s.resources, set()).update(s.actions)
    return [{"sid": f"{INTEGRATION_SID}{k}", "actions": sorted(actions), "resources": list(res)}
            for k, (res, actions) in enumerate(sorted(by_resources.items()))]
