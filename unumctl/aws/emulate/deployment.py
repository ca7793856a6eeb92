"""The deployment the emulated Lambda (local_lambda.py) runs from without Terraform: the
datastore table and bucket as terraform/modules/aws-unum-datastore creates them, and one
`LocalFunctionSpec` per function of a `Deployment` (unumctl/deploy/models.py) with the
environment and async configuration the rendered Terraform gives it.

Used by the measured run of `unumctl cost` and `tune --emulated` (unumctl/cost/measure.py)
and by the harness (unumctl_testing/aws/deployment.py adds each function's execution role).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from ...deploy.models import Deployment, Function
from .local_lambda import LocalFunctionSpec, unpack

# (deployment, function, table, bucket) -> variables to add to the function's environment
# (the credentials it signs with: unumctl_testing/aws/deployment.py `sign_as_role`)
Signer = Callable[[Deployment, Function, str, str], dict[str, str]]


def create_datastore(table: str, bucket: str, client: Any = None, s3: Any = None) -> None:
    """Create a DynamoDB table and an S3 bucket with the layout of
    terraform/modules/aws-unum-datastore (key `session` + `name`, TTL on `expires_at`) on
    the endpoint of `client` / `s3` (default: boto3 clients from the environment, i.e.
    moto_server's). Raises botocore's ClientError when one exists already."""
    import boto3

    ddb = client or boto3.client("dynamodb")
    ddb.create_table(TableName=table, BillingMode="PAY_PER_REQUEST",
                     AttributeDefinitions=[{"AttributeName": "session", "AttributeType": "S"},
                                           {"AttributeName": "name", "AttributeType": "S"}],
                     KeySchema=[{"AttributeName": "session", "KeyType": "HASH"},
                                {"AttributeName": "name", "KeyType": "RANGE"}])
    ddb.update_time_to_live(TableName=table, TimeToLiveSpecification={
        "Enabled": True, "AttributeName": "expires_at"})
    (s3 or boto3.client("s3")).create_bucket(Bucket=bucket)


def functions_of(dep: Deployment) -> list[Function]:
    """The functions of the AWS deployment `dep`, its trigger functions (unumctl/aws/sources.py)
    and, last, its error handler. ValueError when `dep` has no error handler (a deployment
    model not built for aws)."""
    if dep.error_handler is None:
        raise ValueError(f"deployment of {dep.app!r} ({dep.cloud}) has no error handler: not an aws deployment model")
    return dep.all_functions


def local_specs(dep: Deployment, table: str, bucket: str, root: Path,
                sign_as: Signer | None = None) -> dict[str, LocalFunctionSpec]:
    """Emulator specs (deployed name -> spec) for every function of `dep` and its error
    handler, archives unpacked under `root`, with the environment and async configuration
    (retries, on-failure destination, timeout, memory) the rendered Terraform gives them.
    `sign_as(dep, function, table, bucket)`, when given, returns variables added to each function's
    environment (the credentials of its execution role); without it every function signs
    with the emulator's environment (moto's dummy credentials)."""
    specs = {}
    handler = functions_of(dep)[-1]
    for f in functions_of(dep):
        env = f.resolved_environment({"table": table, "bucket": bucket})
        if sign_as is not None:
            env.update(sign_as(dep, f, table, bucket))
        specs[f.name] = LocalFunctionSpec(
            unpack(f.zip_path, root), f.handler, env,
            max_retry_attempts=dep.params.max_retry_attempts,
            on_failure=None if f.is_error_handler or f.trigger else handler.name,
            timeout=f.timeout, memory=f.memory)
    return specs


__all__ = ["Signer", "create_datastore", "functions_of", "local_specs"]
