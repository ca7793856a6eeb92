"""The deployment the emulated Lambda runs from without Terraform (tests and bench): the
datastore table and bucket as terraform/modules/aws-unum-datastore creates them, and one
`LocalFunctionSpec` per function of an `Deployment` (unumctl/deploy/models.py) with the
environment and async configuration the rendered Terraform gives it."""

from __future__ import annotations

from pathlib import Path

from unumctl.deploy.models import Deployment

from unumctl.aws.emulate.local_lambda import LocalFunctionSpec, unpack


def create_datastore_for_tests(table: str, bucket: str, client=None, s3=None) -> None:
    """Create a table and bucket with the layout of terraform/modules/aws-unum-datastore
    (for emulator runs without Terraform: tests and bench)."""
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


def local_specs(dep: Deployment, table: str, bucket: str, root: Path,
                roles: bool = True) -> dict[str, LocalFunctionSpec]:
    """Emulator specs for every function of `dep` (archives unpacked under `root`), with the
    environment and async configuration the rendered Terraform gives them.

    With `roles` (default), each function signs its AWS requests as its execution role does:
    its policy is rendered from the runtime's table as iam.tf renders it
    (unumctl_testing/aws/iam.py `policy_document`), a twin role with that policy (as moto
    can enforce it) is created with the ambient credentials (the test's admin user on an
    enforcing moto) and the credentials of assuming it go into the function's environment.
    When UNUM_RECORD_CALLS names a directory, each rendered policy is also written to
    `<dir>/policies/<access key id>.json` ({"function", "policy"}), where the call check
    (tests/aws/conftest.py) reads it."""
    import json
    import os

    import boto3

    from .iam import moto_twin, policy_document, twin_role_credentials

    specs = {}
    region = account = None
    if roles:
        region = boto3.session.Session().region_name or "us-east-1"
        account = boto3.client("sts").get_caller_identity()["Account"]
    record = os.environ.get("UNUM_RECORD_CALLS")
    for f in dep.functions + [dep.error_handler]:
        env = dep.environment(table, bucket, f.is_error_handler)
        if roles:
            policy = policy_document(dep, f, table, bucket, region, account)
            env.update(twin_role_credentials(f.name, moto_twin(policy)))
            if record:  # by the credentials: a test may deploy the same app more than once
                (Path(record) / "policies").mkdir(parents=True, exist_ok=True)
                (Path(record) / "policies" / f"{env['AWS_ACCESS_KEY_ID']}.json").write_text(
                    json.dumps({"function": f.name, "policy": policy}, indent=1))
        specs[f.name] = LocalFunctionSpec(
            unpack(f.zip_path, root), f.handler, env,
            max_retry_attempts=dep.params.max_retry_attempts,
            on_failure=None if f.is_error_handler else dep.error_handler.name,
            timeout=f.timeout, memory=f.memory)
    return specs
