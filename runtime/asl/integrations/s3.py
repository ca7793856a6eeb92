"""The S3 resources of a Distributed Map: `ItemReader` (`arn:aws:states:::s3:getObject`,
`arn:aws:states:::s3:listObjectsV2`) and `ResultWriter` (`arn:aws:states:::s3:putObject`).

Source: AWS Step Functions developer guide "ItemReader (Map)"
(https://docs.aws.amazon.com/step-functions/latest/dg/input-output-itemreader.html): the
reader's Resource is `arn:aws:states:::s3:getObject` (one object: JSON array, JSON Lines,
CSV, manifest) or `arn:aws:states:::s3:listObjectsV2` (the objects under a prefix), with the
API's Parameters (`Bucket`, `Key`, `VersionId`; `Bucket`, `Prefix`); "ResultWriter (Map)"
(https://docs.aws.amazon.com/step-functions/latest/dg/input-output-resultwriter.html): the
writer's Resource is `arn:aws:states:::s3:putObject` with `Bucket` and `Prefix`. The IAM
actions are the ones those pages' "IAM policies" sections list: s3:GetObject, s3:ListBucket,
s3:PutObject (plus s3:ListBucket for getObject, below).

These are not Task resources (a Task reads S3 with `arn:aws:states:::aws-sdk:s3:getObject`):
`TASK` is False and the validator refuses them in a Task. The calls go where the other
integrations' calls go (runtime.asl.integrations.sdk.client: `UNUM_AWS_ENDPOINT`, the
embedded emulator on local, real S3 on aws) and fail with `S3.<Code>Exception` names.
"""

from __future__ import annotations

from typing import Any

from ..errors import AslError
from . import sdk

__all__ = ["CALLBACK", "IAM_ACTIONS", "INLINE", "NAME", "TASK", "call", "iam_statements", "match", "required"]

NAME = "s3"
CALLBACK = False
INLINE = True
TASK = False  # only a Distributed Map's ItemReader / ResultWriter name these resources
PREFIX = "arn:aws:states:::s3:"
READERS = ("getObject", "listObjectsV2")
WRITERS = ("putObject",)
# getObject also needs s3:ListBucket on the bucket: without it S3 answers a missing key with
# 403 AccessDenied instead of 404 NoSuchKey (S3 API Reference, GetObject, "Permissions"), and
# a Catch on S3.NoSuchKeyException would not see it
IAM_ACTIONS = {"getObject": ["s3:GetObject", "s3:ListBucket"], "listObjectsV2": ["s3:ListBucket"],
               "putObject": ["s3:PutObject"]}
_METHODS = {"getObject": "get_object", "listObjectsV2": "list_objects_v2", "putObject": "put_object"}
_REQUIRED = {"getObject": [("Bucket",), ("Key",)], "listObjectsV2": [("Bucket",)],
             "putObject": [("Bucket",)]}


def match(resource: str) -> str | None:
    """'getObject', 'listObjectsV2' or 'putObject' for the Distributed Map's S3 resources,
    else None."""
    if not resource.startswith(PREFIX):
        return None
    action = resource[len(PREFIX):]
    return action if action in _METHODS else None


def required(action: str) -> list[tuple[str, ...]]:
    """getObject needs Bucket and Key; listObjectsV2 and the ResultWriter's putObject need
    Bucket (the writer's Prefix is optional)."""
    return list(_REQUIRED[action])


def iam_statements(action: str, fields) -> list:
    """IAM_ACTIONS[action] on the objects and bucket the reader or writer names: getObject
    s3:GetObject on `arn:<partition>:s3:::<Bucket>/<Key>` and s3:ListBucket on the bucket;
    listObjectsV2 s3:ListBucket on the bucket; putObject s3:PutObject on
    `<Bucket>/<Prefix>/*` (`<Bucket>/*` without a Prefix); `*` for a dynamic bucket, and
    `<Bucket>/*` for a dynamic key or prefix (runtime.asl.integrations.iam; the IAM policies
    of "ItemReader (Map)" and "ResultWriter (Map)", input-output-itemreader.html,
    input-output-resultwriter.html)."""
    from .iam import ANY, PARTITION, Statement
    bucket = fields.get("Bucket")
    if bucket is None:
        return [Statement(tuple(IAM_ACTIONS[action]), (ANY,))]
    b = f"arn:{PARTITION}:s3:::{bucket}"
    if action == "listObjectsV2":
        return [Statement(("s3:ListBucket",), (b,))]
    if action == "getObject":
        key = fields.get("Key")
        obj = f"{b}/{key}" if key is not None and not fields.present("Key.$") else f"{b}/*"
        return [Statement(("s3:GetObject",), (obj,)), Statement(("s3:ListBucket",), (b,))]
    prefix = fields.get("Prefix")
    if fields.present("Prefix") and prefix is None:
        return [Statement(("s3:PutObject",), (f"{b}/*",))]
    return [Statement(("s3:PutObject",), (f"{b}/{prefix.strip('/')}/*" if prefix else f"{b}/*",))]


def call(action: str, params: Any, ctx) -> dict[str, Any]:
    """Call S3 `action` with `params` (the API's PascalCase names); returns the response
    without ResponseMetadata (a getObject Body read as text); AslError `S3.<Code>Exception`
    for a service error, `States.TaskFailed` for a refused request or no connection."""
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} "
                       "must be a JSON object")
    return sdk.invoke_api("s3", _METHODS[action], params, "S3")
