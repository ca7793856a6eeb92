"""The deployment the emulated Lambda runs from without Terraform (tests and bench): the
datastore table and bucket as unumctl/render/modules/aws-unum-datastore creates them, and one
`LocalFunctionSpec` per function of an `Deployment` (unumctl/deploy/models.py) with the
environment and async configuration the rendered Terraform gives it."""

from __future__ import annotations

from pathlib import Path

from unumctl.deploy.models import Deployment

from unumctl.emulate.aws.local_lambda import LocalFunctionSpec, unpack


def create_datastore_for_tests(table: str, bucket: str, client=None, s3=None) -> None:
    """Create a table and bucket with the layout of unumctl/render/modules/aws-unum-datastore
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


def local_specs(dep: Deployment, table: str, bucket: str, root: Path) -> dict[str, LocalFunctionSpec]:
    """Emulator specs for every function of `dep` (archives unpacked under `root`), with the
    environment and async configuration the rendered Terraform gives them."""
    specs = {}
    for f in dep.functions + [dep.error_handler]:
        specs[f.name] = LocalFunctionSpec(
            unpack(f.zip_path, root), f.handler, dep.environment(table, bucket, f.is_error_handler),
            max_retry_attempts=dep.max_retry_attempts,
            on_failure=None if f.is_error_handler else dep.error_handler.name,
            timeout=f.timeout, memory=f.memory)
    return specs
