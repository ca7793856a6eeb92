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
    SourceQueue       a `queue` trigger's SQS queue (its trigger function only)

The trigger functions (runtime/aws/sources.py, caller `sources`) have a role of their own,
`role_permissions(SOURCES)`: they only start sessions (runtime.session `start_once`: the
start record, a large input's blob, the entry's invocation) and, for a `queue` trigger,
receive from its queue through the event-source mapping (Lambda developer guide, "Using
Lambda with Amazon SQS", execution role permissions: sqs:ReceiveMessage, sqs:DeleteMessage,
sqs:GetQueueAttributes). The other callers' rows are the workflow functions' role.

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
           "PLATFORM", "SOURCES", "SOURCE_QUEUE", "actions_of", "integration_statements", "role_permissions"]

DATASTORE = "Datastore"
BLOBS = "Blobs"
BUCKET = "ListBlobs"
INVOKE = "InvokeSuccessors"
LOGS = "Logs"
FAILURE_QUEUE = "OnFailureQueue"
KMS = "Kms"
SOURCE_QUEUE = "SourceQueue"
RESOURCES = (DATASTORE, BLOBS, BUCKET, INVOKE, LOGS, FAILURE_QUEUE, KMS, SOURCE_QUEUE)

# callers made by the Lambda service with the execution role, not by runtime code
PLATFORM = "lambda"
SOURCES = "sources"  # the trigger functions' adapter (runtime/aws/sources.py), a role of its own


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
    # runtime/aws/sources.py: runtime.session start_once through the datastore, blob store and invoker
    Permission(SOURCES, "dynamodb:PutItem", ("dynamodb:PutItem",), DATASTORE),  # claim_start, mark_sent
    Permission(SOURCES, "dynamodb:BatchGetItem", ("dynamodb:BatchGetItem",), DATASTORE),  # get: the result, a record
    Permission(SOURCES, "dynamodb:DeleteItem", ("dynamodb:DeleteItem",), DATASTORE),  # an undone claim
    Permission(SOURCES, "dynamodb:Query", ("dynamodb:Query",), DATASTORE),  # delete: the name's set members
    Permission(SOURCES, "s3:PutObject", ("s3:PutObject",), BLOBS),  # an input over the invoke limit
    Permission(SOURCES, "s3:GetObject", ("s3:GetObject",), BLOBS),  # http wait: a result in a blob
    Permission(SOURCES, "lambda:Invoke", ("lambda:InvokeFunction",), INVOKE),  # the entry function
    # the Lambda service with the trigger function's role: its SQS event-source mapping, its logs
    Permission(SOURCES, "sqs:ReceiveMessage", ("sqs:ReceiveMessage",), SOURCE_QUEUE),
    Permission(SOURCES, "sqs:DeleteMessage", ("sqs:DeleteMessage",), SOURCE_QUEUE),
    Permission(SOURCES, "sqs:GetQueueAttributes", ("sqs:GetQueueAttributes",), SOURCE_QUEUE),
    Permission(SOURCES, "logs:CreateLogStream", ("logs:CreateLogStream",), LOGS),
    Permission(SOURCES, "logs:PutLogEvents", ("logs:PutLogEvents",), LOGS),
)


def role_permissions(role: str | None = None) -> dict[str, list[str]]:
    """The execution role of every workflow function (`role` None: every caller but
    SOURCES), or of every trigger function (`role` SOURCES): resource name -> the sorted IAM
    actions granted on it (the `permissions` input of terraform/modules/aws-unum-function).
    Every function of a kind gets the same table; the module grants a resource only where
    the function has one (successors, an SQS failure destination, a KMS key, a queue)."""
    out: dict[str, set[str]] = {}
    for p in PERMISSIONS:
        if (p.caller == SOURCES) == (role == SOURCES):
            out.setdefault(p.resource, set()).update(p.actions)
    return {r: sorted(out[r]) for r in RESOURCES if r in out}


def actions_of(operation: str, role: str | None = None) -> dict[str, tuple[str, ...]]:
    """Resource name -> the IAM actions `operation` ("service:ApiOperation") needs there, for
    a workflow function (`role` None) or a trigger function (SOURCES); empty when no adapter
    of that role may call it."""
    out: dict[str, tuple[str, ...]] = {}
    for p in PERMISSIONS:
        if p.operation == operation and (p.caller == SOURCES) == (role == SOURCES):
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
