"""What `unumctl emulate aws|gcp` runs (docs/aws.md and docs/gcp.md, "Rehearse on
emulators"), also used by the tests.

- `emulate_aws`: moto_server (DynamoDB, S3, IAM, SQS, CloudWatch Logs, and Lambda's control
  plane) plus `MotoLambda` (lambda_front.py), the Lambda endpoint that runs the functions
  `unumctl apply --cloud aws` creates there.
- gcp's: unumctl/gcp/emulate/run.py `emulate` (the Google emulators with the apps served on them).

Each is a context manager that yields the environment to export (`export_lines` prints it
as `gcloud beta emulators ... env-init` does) and stops everything it started on exit, by
process id. Everything listens on 127.0.0.1, on free ports. A missing component raises
EmulatorMissing with one line naming it and how to install it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
from pathlib import Path
from typing import Iterator

INSTALL_EMULATE = "pip install 'unumctl[emulate]'"


class EmulatorMissing(RuntimeError):
    """A component needed to run an emulator is not installed (message names it)."""


def export_lines(env: dict[str, str]) -> list[str]:
    """`export NAME=value` lines (values shell-quoted), sorted by name."""
    return [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]


def check_aws() -> None:
    """EmulatorMissing (one line: the component and how to install it) unless boto3,
    moto_server and terraform are here."""
    from .aws.moto_local import find_moto_server

    if importlib.util.find_spec("boto3") is None:
        raise EmulatorMissing("boto3 not installed: pip install 'unumctl[aws]'")
    if find_moto_server() is None:
        raise EmulatorMissing(f"moto_server not installed: {INSTALL_EMULATE}")
    if not (os.environ.get("UNUMCTL_TERRAFORM") or shutil.which("terraform")):
        raise EmulatorMissing("terraform not found on PATH (unumctl apply runs it): install Terraform "
                              ">= 1.5 (https://developer.hashicorp.com/terraform/install) or set "
                              "UNUMCTL_TERRAFORM")


@contextlib.contextmanager
def emulate_aws(workdir: Path) -> Iterator[dict[str, str]]:
    """moto_server and the Lambda endpoint running (archives kept under `workdir`); yields
    the environment for boto3, Terraform and unumctl (endpoints, dummy credentials, region).
    EmulatorMissing / RuntimeError when a component is missing or does not start (nothing is
    left running then)."""
    check_aws()
    from .aws.lambda_front import MotoLambda
    from .aws.moto_local import aws_env, moto_server, tls_certificate

    # moto over HTTPS: the bucket's TLS-only policy (aws:SecureTransport), which moto applies
    # to object writes, holds as on AWS; clients trust the certificate through AWS_CA_BUNDLE
    cert, key = tls_certificate(Path(workdir) / "tls")
    saved = os.environ.get("AWS_CA_BUNDLE")
    os.environ["AWS_CA_BUNDLE"] = str(cert)  # this process's clients (CloudWatch Logs delivery)
    try:
        with moto_server(tls=(cert, key)) as url, MotoLambda(url, Path(workdir), ca_bundle=cert) as front:
            yield {**aws_env(url, front.url), "AWS_CA_BUNDLE": str(cert)}
    finally:
        if saved is None:
            os.environ.pop("AWS_CA_BUNDLE", None)
        else:
            os.environ["AWS_CA_BUNDLE"] = saved
