"""`unumctl emulate aws` (docs/aws.md, "Rehearse on emulators"), also used by the tests:
moto_server (DynamoDB, S3, IAM, SQS, CloudWatch Logs, and Lambda's control plane) plus
`MotoLambda` (lambda_front.py), the Lambda endpoint that runs the functions
`unumctl apply --cloud aws` creates there. `EMULATOR` is the target's TargetSpec `emulator`
(unumctl/cli.py makes the command from it). Everything listens on 127.0.0.1, on free ports;
a missing component raises EmulatorMissing with one line naming it and how to install it.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
from pathlib import Path
from typing import Iterator

from ...emulate import Emulator, EmulatorMissing

__all__ = ["EMULATOR", "emulate"]


def check() -> None:
    """EmulatorMissing (one line: the component and how to install it) unless boto3,
    moto_server and terraform are here."""
    from ...install_hint import install_hint
    from .moto_local import find_moto

    if importlib.util.find_spec("boto3") is None:
        raise EmulatorMissing(f"boto3 not installed: {install_hint('aws')}")
    if find_moto() is None:
        raise EmulatorMissing(f"moto_server not installed: {install_hint('emulate')}")
    if not (os.environ.get("UNUMCTL_TERRAFORM") or shutil.which("terraform")):
        raise EmulatorMissing("terraform not found on PATH (unumctl apply runs it): install Terraform "
                              ">= 1.5 (https://developer.hashicorp.com/terraform/install) or set "
                              "UNUMCTL_TERRAFORM")


@contextlib.contextmanager
def emulate(workdir: Path) -> Iterator[dict[str, str]]:
    """moto_server and the Lambda endpoint running (archives kept under `workdir`); yields
    the environment for boto3, Terraform and unumctl (endpoints, dummy credentials, region).
    EmulatorMissing / RuntimeError when a component is missing or does not start (nothing is
    left running then)."""
    check()
    from .lambda_front import MotoLambda
    from .moto_local import aws_env, moto_server, tls_certificate

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


EMULATOR = Emulator(start=emulate, help="""Run moto and a Lambda endpoint that executes what `apply --cloud aws` creates there.

    moto_server (DynamoDB, S3, IAM, SQS, CloudWatch Logs, Lambda's control plane) over HTTPS
    and a Lambda endpoint that runs each function's built archive through its handler, with
    Lambda's async retries. Prints the environment to export (endpoints, CA bundle, dummy
    credentials, region), then runs until stopped (docs/aws.md).

    Example: unumctl emulate aws   (then, in another shell: export the lines it printed;
    unumctl apply examples/wordcount --cloud aws --yes; unumctl invoke examples/wordcount
    --cloud aws --data examples/wordcount/input.json)
    """)
