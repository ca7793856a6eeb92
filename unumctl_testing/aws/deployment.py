"""The deployment the emulated Lambda runs from without Terraform, for the tests and bench:
the product's (unumctl/aws/emulate/deployment.py: the datastore as
terraform/modules/aws-unum-datastore creates it, one `LocalFunctionSpec` per function), with
each function signing as its execution role (`sign_as_role`)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from runtime.payload import VersionId

from unumctl.deploy.models import Deployment, Function
from unumctl.aws.emulate.deployment import Signer, create_datastore, functions_of
from unumctl.aws.emulate.deployment import local_specs as _local_specs
from unumctl.aws.emulate.local_lambda import LocalFunctionSpec

__all__ = ["create_datastore_for_tests", "local_specs", "publish_version", "sign_as_role"]

create_datastore_for_tests = create_datastore


def sign_as_role(dep: Deployment, f: Function, table: str, bucket: str) -> dict[str, str]:
    """The credentials `f` signs its AWS requests with, as its execution role does (a
    `Signer` of unumctl/aws/emulate/deployment.py): its policy is rendered from the runtime's
    table as iam.tf renders it (unumctl_testing/aws/iam.py `policy_document`), a twin role
    with that policy (as moto can enforce it) is created with the ambient credentials (the
    test's admin user on an enforcing moto), and the credentials of assuming it are returned.
    When UNUM_RECORD_CALLS names a directory, the rendered policy is also written to
    `<dir>/policies/<access key id>.json` ({"function", "policy"}), where the call check
    (tests/aws/conftest.py) reads it."""
    import boto3

    from .iam import moto_twin, policy_document, twin_role_credentials

    region = boto3.session.Session().region_name or "us-east-1"
    account = boto3.client("sts").get_caller_identity()["Account"]
    policy = policy_document(dep, f, table, bucket, region, account)
    creds = twin_role_credentials(f.name, moto_twin(policy))
    record = os.environ.get("UNUM_RECORD_CALLS")
    if record:  # by the credentials: a test may deploy the same app more than once
        (Path(record) / "policies").mkdir(parents=True, exist_ok=True)
        (Path(record) / "policies" / f"{creds['AWS_ACCESS_KEY_ID']}.json").write_text(
            json.dumps({"function": f.name, "policy": policy}, indent=1))
    return creds


def local_specs(dep: Deployment, table: str, bucket: str, root: Path,
                roles: bool = True) -> dict[str, LocalFunctionSpec]:
    """Emulator specs for every function of `dep` (unumctl.aws.emulate.deployment.local_specs),
    each signing as its execution role (`sign_as_role`) unless `roles` is False."""
    return _local_specs(dep, table, bucket, root, sign_as_role if roles else None)


def publish_version(dep: Deployment, table: str, bucket: str, lam: Any, role_arn: str, stage: str,
                    sign_as: Signer | None = None, now: float | None = None) -> tuple[VersionId, dict[str, str]]:
    """Deploy `dep` as a new app version through the Lambda API at `lam` (a boto3 client on
    the emulated Lambda, which keeps the archives), the calls the rendered Terraform's
    `publish = true` makes, then unumctl/aws/versions.py's register and promote: each
    function created or updated (code, handler, limits, environment with the version id),
    a version published with its retries and on-failure destination (the error handler,
    which stays unpublished: it re-invokes through the pins), the version recorded, the stage
    alias moved. `sign_as` adds each function's role credentials to its environment.
    Returns (version id, {IR function name: version number})."""
    from runtime.aws import ENV_ALIAS, ENV_APP_VERSION, ENV_FUNCTION_PREFIX
    from runtime.aws.datastore import DynamoDBDatastore
    from unumctl.aws.versions import AwsVersions
    from unumctl.deploy.versions import deployment_version

    version = deployment_version(dep)
    handler = functions_of(dep)[-1]
    handler_arn = None
    numbers: dict[str, str] = {}
    for f in [handler] + dep.functions:  # the destination first: the others name its ARN
        env = {**f.resolved_environment({"table": table, "bucket": bucket}), ENV_ALIAS: stage}
        if not f.is_error_handler:
            env[ENV_APP_VERSION] = version
        if sign_as is not None:
            env.update(sign_as(dep, f, table, bucket))
        config = {"Handler": f.handler, "Timeout": int(f.timeout), "MemorySize": int(f.memory),
                  "Environment": {"Variables": env}}
        code = Path(f.zip_path).read_bytes()
        try:
            lam.get_function(FunctionName=f.name)
            lam.update_function_code(FunctionName=f.name, ZipFile=code)
            arn = lam.update_function_configuration(FunctionName=f.name, **config)["FunctionArn"]
        except lam.exceptions.ResourceNotFoundException:
            arn = lam.create_function(FunctionName=f.name, Runtime="python3.12", Role=role_arn,
                                      Code={"ZipFile": code}, **config)["FunctionArn"]
        if f.is_error_handler:
            handler_arn = arn
            continue
        number = lam.publish_version(FunctionName=f.name)["Version"]
        lam.put_function_event_invoke_config(
            FunctionName=f.name, Qualifier=number, MaximumRetryAttempts=dep.params.max_retry_attempts,
            DestinationConfig={"OnFailure": {"Destination": handler_arn}})
        numbers[f.unum_name] = number
    prefix = handler.resolved_environment({"table": table, "bucket": bucket})[ENV_FUNCTION_PREFIX]
    store = AwsVersions(DynamoDBDatastore(table), lam, prefix, stage)
    store.register(version, numbers, now)
    store.promote(numbers)
    return version, numbers
