"""The deployment the emulated Lambda runs from without Terraform, for the tests and bench:
the product's (unumctl/aws/emulate/deployment.py: the datastore as
terraform/modules/aws-unum-datastore creates it, one `LocalFunctionSpec` per function), with
each function signing as its execution role (`sign_as_role`)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from unumctl.deploy.models import Deployment, Function
from unumctl.aws.emulate.deployment import create_datastore
from unumctl.aws.emulate.deployment import local_specs as _local_specs
from unumctl.aws.emulate.local_lambda import LocalFunctionSpec

__all__ = ["create_datastore_for_tests", "local_specs", "sign_as_role"]

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
