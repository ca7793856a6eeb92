"""The optimized DynamoDB integration: `arn:aws:states:::dynamodb:getItem|putItem|updateItem|deleteItem`.

Source: AWS Step Functions developer guide "Call DynamoDB APIs with Step Functions"
(https://docs.aws.amazon.com/step-functions/latest/dg/connect-ddb.html): request-response
only; Parameters are the DynamoDB API's (TableName, Key, Item, ConditionExpression,
ExpressionAttributeValues, ...); the result is the API response with SdkHttpMetadata and
SdkResponseMetadata; errors are `DynamoDB.<Exception>` (e.g.
`DynamoDB.ConditionalCheckFailedException`). DynamoDB `query` is available only as
`arn:aws:states:::aws-sdk:dynamodb:query` (runtime.asl.integrations.sdk).
The side effect is at-least-once (a duplicate of the compiled function repeats the call);
a ConditionExpression makes a write idempotent (docs/stepfunctions.md).
"""

from __future__ import annotations

from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "call", "iam_statements", "match", "required"]

NAME = "dynamodb"
CALLBACK = False  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = True
PREFIX = "arn:aws:states:::dynamodb:"
_REQUIRED = {"getItem": [("TableName",), ("Key",)], "putItem": [("TableName",), ("Item",)],
             "updateItem": [("TableName",), ("Key",)], "deleteItem": [("TableName",), ("Key",)]}
IAM_ACTIONS = {"getItem": ["dynamodb:GetItem"], "putItem": ["dynamodb:PutItem"],
               "updateItem": ["dynamodb:UpdateItem"], "deleteItem": ["dynamodb:DeleteItem"]}
_METHODS = {"getItem": "get_item", "putItem": "put_item", "updateItem": "update_item",
            "deleteItem": "delete_item"}


def match(resource: str) -> str | None:
    """The action of an optimized DynamoDB resource, else None."""
    if resource.startswith(PREFIX) and resource[len(PREFIX):] in _METHODS:
        return resource[len(PREFIX):]
    return None


def required(action: str) -> list[tuple[str, ...]]:
    """The DynamoDB API's required request fields for `action`."""
    return list(_REQUIRED[action])


def iam_statements(action: str, fields) -> list:
    """IAM_ACTIONS[action] on the table `TableName` names (a name, or a table ARN as
    DynamoDB accepts it), `*` when it is dynamic (runtime.asl.integrations.iam; Step
    Functions guide "IAM policies for DynamoDB", dynamo-iam.html)."""
    from .iam import ANY, Statement, arn
    table = fields.get("TableName")
    res = ANY if table is None else table if table.startswith("arn:") else arn("dynamodb", f"table/{table}")
    return [Statement(tuple(IAM_ACTIONS[action]), (res,))]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Run the DynamoDB action; AslError('DynamoDB.<Exception>') on a service error."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} "
                       "must be a JSON object")
    return sdk.with_metadata(sdk.invoke_api("dynamodb", _METHODS[action], params, "DynamoDB"))
