"""The generic AWS SDK family, `arn:aws:states:::aws-sdk:<service>:<action>`, and the boto3
plumbing the optimized families share.

Source: AWS Step Functions developer guide "Learning to use AWS service SDK integrations in
Step Functions" (https://docs.aws.amazon.com/step-functions/latest/dg/supported-services-awssdk.html):
parameters are PascalCase as in the service's API reference; the action is the API's name
in camelCase (`getObject` -> boto3's `get_object`); an error is `<ServiceName>.<ErrorName>`,
both PascalCase, and the error name always carries the `Exception` suffix even where the
service's own code lacks it (`S3.NoSuchKey` is reported as `S3.NoSuchKeyException`); the
service name is written in lower case in the Resource (`acmpca` -> `AcmPca`).

boto3 is imported here, lazily, and only when a Task runs (on AWS Lambda boto3 is part of
the runtime; locally it comes from the `aws` extra). Where calls go and with which
credentials is decided in one place, `settings()`, from `UNUM_AWS_ENDPOINT`:

* a URL (what `local` and `serve` set: their embedded emulator, or the endpoint the user
  named): every client goes there, signed with explicit placeholder credentials
  (DUMMY_KEYS; or the key pair of ENV_AWS_CREDENTIALS when the user gave one) and an
  explicit region, never with boto3's credential chain (the environment's keys, a profile,
  instance metadata);
* `aws` (REAL_AWS, the user's opt-in on `local`/`serve`) or unset (a deployed function on
  AWS Lambda / Cloud Functions): boto3's own configuration (AWS_ENDPOINT_URL, AWS_REGION,
  its credential chain), or the key pair of ENV_AWS_CREDENTIALS;
* `none` (NO_ENDPOINT: a local run that decided it needs no AWS endpoint): no client is
  built; a call raises AslError(States.TaskFailed) naming the fix.
"""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import hashlib
import os
import re
import uuid
from typing import Any

from ..errors import AslError

__all__ = ["CALLBACK", "ENV_AWS_CREDENTIALS", "ENV_AWS_ENDPOINT", "INLINE", "NAME", "call", "client",
           "forget_clients", "iam_actions", "iam_statements", "invoke_api", "match", "required", "service_model", "settings",
           "with_metadata"]

NAME = "aws-sdk"
CALLBACK = True  # .waitForTaskToken offered (integrations.CALLBACK)
INLINE = True
# the aws-sdk Resource with an empty or a written region and account
_REGIONAL = re.compile(r"arn:aws[a-z-]*:states:(?:[a-z]{2}(?:-[a-z]+)+-\d)?:(?:\d{12})?:aws-sdk:(.+)")
ENV_AWS_ENDPOINT = "UNUM_AWS_ENDPOINT"
REAL_AWS = "aws"        # UNUM_AWS_ENDPOINT value: boto3's own configuration (real AWS), opted into
NO_ENDPOINT = "none"    # UNUM_AWS_ENDPOINT value: no AWS calls at all (a local run without integrations)
# what a client for an explicit endpoint signs with: emulators (moto, LocalStack) accept any key
DUMMY_KEYS = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
DEFAULT_REGION = "us-east-1"
# the AWS access key pair as JSON {"aws_access_key_id", "aws_secret_access_key"[,
# "aws_session_token"][, "region"]}: on gcp, the secret environment variable that
# `clouds.gcp.aws_credentials_secret` renders (docs/gcp.md); elsewhere unset (boto3's chain)
ENV_AWS_CREDENTIALS = "UNUM_AWS_CREDENTIALS"
# Step Functions' service names (the SDK for Java v2's) that differ from boto3's beyond a hyphen
_ALIASES = {"sfn": "stepfunctions", "eventbridge": "events", "cloudwatchlogs": "logs",
            "elasticloadbalancingv2": "elbv2", "costexplorer": "ce", "mediastoredata": "mediastore-data"}
_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_CLIENTS: dict[tuple[str, str], Any] = {}


def match(resource: str) -> str | None:
    """'<service>:<action>' for a request-response aws-sdk resource, else None. The
    Resource may carry a region and an account (`arn:aws:states:us-east-1:123456789012:
    aws-sdk:transcribe:startTranscriptionJob`), which Step Functions accepts; the call goes
    where every integration call of the run goes (`settings`), as for `:::`."""
    m = _REGIONAL.fullmatch(resource)
    if m is None:
        return None
    rest = m.group(1)
    parts = rest.split(":")
    if len(parts) != 2 or not all(re.fullmatch(r"[A-Za-z0-9]+", p) for p in parts):
        return None  # .sync / .waitForTaskToken patterns, or malformed
    return rest


def boto3_service(service: str) -> str:
    """boto3's name for Step Functions' aws-sdk service name (`sfn` -> `stepfunctions`,
    `acmpca` -> `acm-pca`); raises AslError(States.Runtime) for an unknown service."""
    if service in _ALIASES:
        return _ALIASES[service]
    names = _available_services()
    if service in names:
        return service
    for n in names:
        if n.replace("-", "") == service:
            return n
    raise AslError("States.Runtime", f"aws-sdk service {service!r} is not a boto3 service")


@functools.lru_cache(maxsize=1)
def _available_services() -> tuple[str, ...]:
    """boto3's service names (read once per process: a boto3 Session costs tens of ms)."""
    import boto3
    return tuple(boto3.session.Session().get_available_services())


@functools.lru_cache(maxsize=None)
def _service_model(svc: str) -> Any:
    """botocore's ServiceModel of boto3 service `svc`, loaded once per process."""
    import botocore.session
    return botocore.session.get_session().get_service_model(svc)


def service_model(svc: str) -> Any:
    """botocore's ServiceModel of boto3 service `svc` (cached), or None when botocore is
    not installed."""
    try:
        import botocore.session  # noqa: F401
    except ImportError:
        return None
    return _service_model(svc)


def operation(client: Any, action: str) -> str:
    """boto3's snake_case method for a camelCase action (`getObject` -> `get_object`),
    via the client's own API-name mapping; raises AslError(States.Runtime) if unknown."""
    api = action[:1].upper() + action[1:]
    for method, name in client.meta.method_to_api_mapping.items():
        if name == api:
            return method
    raise AslError("States.Runtime", f"{client.meta.service_model.service_name} has no action {action!r}")


def pascal_service(service_id: str) -> str:
    """The PascalCase service name of AWS's error names, from botocore's serviceId
    (`ACM PCA` -> `AcmPca`, `DynamoDB` -> `DynamoDb`, `S3` -> `S3`)."""
    return "".join(w.capitalize() for w in _WORD.findall(service_id))


def credentials() -> dict[str, str]:
    """boto3 Session arguments from ENV_AWS_CREDENTIALS (aws_access_key_id,
    aws_secret_access_key[, aws_session_token][, region_name]); {} when it is unset. Raises
    AslError(States.Runtime) naming the variable when its value is not that JSON object
    (the value itself is never echoed)."""
    text = os.environ.get(ENV_AWS_CREDENTIALS)
    if not text:
        return {}
    import json
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    keys = ("aws_access_key_id", "aws_secret_access_key")
    if not isinstance(doc, dict) or not all(isinstance(doc.get(k), str) and doc[k] for k in keys):
        raise AslError("States.Runtime", f"{ENV_AWS_CREDENTIALS} (the AWS credentials secret) must be a JSON "
                       'object {"aws_access_key_id": ..., "aws_secret_access_key": ...[, '
                       '"aws_session_token": ...][, "region": ...]}')
    out = {k: doc[k] for k in keys}
    if isinstance(doc.get("aws_session_token"), str):
        out["aws_session_token"] = doc["aws_session_token"]
    if isinstance(doc.get("region"), str):
        out["region_name"] = doc["region"]
    return out


def settings(endpoint: str | None = None, placeholder_keys: bool = False) -> dict[str, Any]:
    """The keyword arguments of `boto3.session.Session(...).client(service, **them)` for an
    integration call: where it goes and what it signs with (the one place that decides; the
    rule is this module's docstring). `endpoint`: a URL that overrides UNUM_AWS_ENDPOINT
    (the `states` family's UNUM_SFN_ENDPOINT); `placeholder_keys`: sign with DUMMY_KEYS even
    when ENV_AWS_CREDENTIALS is set (an endpoint that checks no signature). Returns {} for boto3's own configuration, or
    {endpoint_url, region_name, aws_access_key_id, aws_secret_access_key[,
    aws_session_token]} for a URL. Raises AslError(States.TaskFailed) for NO_ENDPOINT and
    AslError(States.Runtime) for a bad ENV_AWS_CREDENTIALS."""
    value = endpoint or os.environ.get(ENV_AWS_ENDPOINT) or None
    if value == NO_ENDPOINT:
        raise AslError("States.TaskFailed", "this local run has no AWS endpoint for its service integrations: "
                       "give --aws-endpoint URL or integrations.aws_endpoint (aws: real AWS)")
    creds = credentials()
    if value is None or value == REAL_AWS:
        return creds
    keys = {k: v for k, v in creds.items() if k != "region_name" and not placeholder_keys} or dict(DUMMY_KEYS)
    region = creds.get("region_name") or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") \
        or DEFAULT_REGION
    return {"endpoint_url": value, "region_name": region, **keys}


def client(service: str, endpoint: str | None = None, placeholder_keys: bool = False, **config: Any) -> Any:
    """A cached boto3 client for boto3 service name `service`, built with
    `settings(endpoint, placeholder_keys)`
    (UNUM_AWS_ENDPOINT, ENV_AWS_CREDENTIALS; see the module docstring) and botocore Config
    options `config` (standard retries, 3 attempts, unless given). Raises AslError as
    settings() does."""
    args = settings(endpoint, placeholder_keys)
    # a rotated secret (same key id, new secret key, token) gets a new client
    key = (service, hashlib.sha256(repr((sorted(args.items()), sorted(config.items()))).encode()).hexdigest())
    if key not in _CLIENTS:
        import boto3
        from botocore.config import Config
        session_keys = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token", "region_name")
        session = boto3.session.Session(**{k: v for k, v in args.items() if k in session_keys})
        cfg = Config(**{"retries": {"mode": "standard", "max_attempts": 3}, **config})
        _CLIENTS[key] = session.client(service, endpoint_url=args.get("endpoint_url"), config=cfg)
    return _CLIENTS[key]


def forget_clients() -> None:
    """Drop the clients `client` has cached, so the next call builds new ones from the
    environment then in force (a harness switching a moto mock or an endpoint on and off)."""
    _CLIENTS.clear()


def error_name(prefix: str, code: str) -> str:
    """`<prefix>.<Code>Exception` (the suffix added when missing, as Step Functions does);
    a dotted code (SQS's `AWS.SimpleQueueService.NonExistentQueue`) keeps its last part."""
    code = code.rsplit(".", 1)[-1] or "Unknown"
    if not code.endswith("Exception"):
        code += "Exception"
    return f"{prefix}.{code}"


def invoke_api(svc: str, method: str, params: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Call boto3 `svc`.`method`(**params); returns the JSON-ready response without
    ResponseMetadata. A service error raises AslError(`<prefix>.<Code>Exception`, message);
    a request boto3 refuses or a connection failure raises AslError('States.TaskFailed')."""
    from botocore.exceptions import BotoCoreError, ClientError
    try:
        resp = getattr(client(svc), method)(**params)
    except ClientError as err:
        e = err.response.get("Error", {})
        code = str(e.get("Code") or "Unknown")
        raise AslError(error_name(prefix, code),
                       f"{e.get('Message', '')} (Service: {svc}; Status Code: "
                       f"{err.response.get('ResponseMetadata', {}).get('HTTPStatusCode', 400)}; "
                       f"Error Code: {code})") from None
    except (BotoCoreError, TypeError, ValueError) as err:
        raise AslError("States.TaskFailed", f"{svc}.{method}: {err}") from None
    resp.pop("ResponseMetadata", None)
    return jsonable(resp)


def with_metadata(result: dict[str, Any]) -> dict[str, Any]:
    """An optimized integration's result: the API response plus SdkHttpMetadata and
    SdkResponseMetadata, as Step Functions adds them."""
    out = dict(result)
    out["SdkHttpMetadata"] = {"HttpStatusCode": 200}
    out["SdkResponseMetadata"] = {"RequestId": str(uuid.uuid4())}
    return out


def jsonable(v: Any) -> Any:
    """`v` with datetimes as ISO-8601 strings, blobs as base64 text and streams read."""
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, _dt.datetime):
        return v.isoformat()
    if isinstance(v, (bytes, bytearray)):
        return base64.b64encode(bytes(v)).decode()
    if hasattr(v, "read") and callable(v.read):  # a StreamingBody (s3 getObject's Body)
        data = v.read()
        try:
            return data.decode()
        except UnicodeDecodeError:
            return base64.b64encode(data).decode()
    if hasattr(v, "as_tuple"):  # Decimal
        return int(v) if v == int(v) else float(v)
    return v


def _model(action: str):
    """(botocore ServiceModel, OperationModel) for '<service>:<action>', or None when botocore
    is not installed; raises AslError(States.Runtime) for an unknown service or action."""
    try:
        import boto3  # noqa: F401
        import botocore.session  # noqa: F401
    except ImportError:
        return None
    service, act = action.split(":", 1)
    model = _service_model(boto3_service(service))
    api = act[:1].upper() + act[1:]
    if api not in model.operation_names:
        raise AslError("States.Runtime", f"aws-sdk service {service!r} has no action {act!r}")
    return model, model.operation_model(api)


def required(action: str) -> list[tuple[str, ...]]:
    """The input members the service's API model marks required, in Step Functions'
    PascalCase (`pascal`; botocore's model; none when botocore is absent). Raises
    AslError(States.Runtime) for an unknown action."""
    m = _model(action)
    if m is None or m[1].input_shape is None:
        return []
    return [(pascal(f),) for f in m[1].input_shape.required_members]


def pascal(name: str) -> str:
    """A model member name as Step Functions writes it: first letter upper case
    (`stateMachineArn` -> `StateMachineArn`; `BOOL`, `Item` unchanged)."""
    return name[:1].upper() + name[1:]


# "To work with certain language naming convention requirements, API fields named Equals
# will be called EqualsValue in your state machine" (supported-services-awssdk.html)
_RENAMED = {"EqualsValue": "Equals"}


def to_model(value: Any, shape: Any) -> Any:
    """A request `value` (Step Functions' PascalCase parameters) with each structure member
    named as the botocore `shape` names it (`StateMachineArn` -> `stateMachineArn` for sfn;
    exact name first, then `EqualsValue` -> `Equals`, then a case-insensitive match); map
    keys (a DynamoDB item's attribute names) are left as written, and an unknown member is
    kept for boto3 to refuse with its own message. Source: supported-services-awssdk.html
    "API naming conventions"."""
    if shape is None:
        return value
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        members = shape.members
        lower = {m.lower(): m for m in members}
        out = {}
        for key, v in value.items():
            name = str(key)
            name = name if name in members else _RENAMED.get(name, name)
            name = name if name in members else lower.get(name.lower(), str(key))
            out[name] = to_model(v, members.get(name))
        return out
    if kind == "list" and isinstance(value, list):
        return [to_model(x, shape.member) for x in value]
    if kind == "map" and isinstance(value, dict):
        return {k: to_model(v, shape.value) for k, v in value.items()}
    return value


def from_model(value: Any, shape: Any) -> Any:
    """A JSON-ready response `value` with each structure member in PascalCase (`pascal`),
    as Step Functions returns an aws-sdk result (sfn listExecutions' `nextToken` is read as
    `$.NextToken`); map keys are left as the service gave them."""
    if shape is None:
        return value
    kind = shape.type_name
    if kind == "structure" and isinstance(value, dict):
        return {pascal(k): from_model(v, shape.members.get(k)) for k, v in value.items()}
    if kind == "list" and isinstance(value, list):
        return [from_model(x, shape.member) for x in value]
    if kind == "map" and isinstance(value, dict):
        return {k: from_model(v, shape.value) for k, v in value.items()}
    return value


def iam_actions(action: str) -> list[str]:
    """`<iam prefix>:<Action>`: the service's signing name (botocore) and the API name."""
    service, act = action.split(":", 1)
    m = _model(action)
    prefix = m[0].signing_name if m is not None else service
    return [f"{prefix}:{act[:1].upper() + act[1:]}"]


def iam_statements(action: str, fields) -> list:
    """iam_actions(action) on `*`: the resource of a generic SDK call is not told by its
    request in one way for every service (each service's ARN format differs), so the role
    grants the action on every resource, as Step Functions' own policy for an AWS SDK Task
    does unless the author scopes it (runtime.asl.integrations.iam)."""
    from .iam import ANY, Statement
    return [Statement(tuple(iam_actions(action)), (ANY,))]


def call(action: str, params: Any, ctx) -> Any:
    """Call `<service>:<action>` with `params` (PascalCase, as the API reference names them)."""
    service, act = action.split(":", 1)
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise AslError("States.Runtime", f"state {ctx.state!r}: {ctx.field} of {ctx.resource} must be "
                       f"a JSON object")
    svc = boto3_service(service)
    cl = client(svc)
    method = operation(cl, act)
    prefix = pascal_service(cl.meta.service_model.service_id)
    op = cl.meta.service_model.operation_model(cl.meta.method_to_api_mapping[method])
    return from_model(invoke_api(svc, method, to_model(params, op.input_shape), prefix), op.output_shape)
