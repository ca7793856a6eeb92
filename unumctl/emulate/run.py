"""What `unumctl emulate aws|gcp` runs (docs/aws.md and docs/gcp.md, "Rehearse on
emulators"), also used by the tests.

- `emulate_aws`: moto_server (DynamoDB, S3, IAM, SQS, CloudWatch Logs, and Lambda's control
  plane) plus `MotoLambda` (lambda_front.py), the Lambda endpoint that runs the functions
  `unumctl apply --cloud aws` creates there.
- `emulate_gcp`: the Firestore and Pub/Sub emulators and the GCS stand-in (gcp/emulators.py),
  and each given app's built bundles served by functions-framework with push subscriptions
  (gcp/platform.py), which is what `apply` would deploy (Terraform cannot target the Google
  emulators).

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
import sys
from pathlib import Path
from typing import Iterator

from .gcp.emulators import EmulatorMissing

INSTALL_EMULATE = "pip install 'unumctl[emulate]'"
DEFAULT_PROJECT = "unum-emulated"
SHARED_BUCKET = "unum-emulated-payloads"


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


def check_gcp() -> None:
    """EmulatorMissing unless the google-cloud libraries and functions-framework are
    installed (java, the SDK emulators and the GCS stand-in are checked when they start)."""
    for mod, pkg in (("google.cloud.firestore", "unumctl[gcp]"), ("google.cloud.pubsub_v1", "unumctl[gcp]"),
                     ("google.cloud.storage", "unumctl[gcp]")):
        try:
            found = importlib.util.find_spec(mod) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            raise EmulatorMissing(f"{mod} not installed: pip install '{pkg}'")
    if not (Path(sys.executable).parent / "functions-framework").exists():
        raise EmulatorMissing("functions-framework not installed beside this Python: pip install 'unumctl[gcp]'")


@contextlib.contextmanager
def emulate_gcp(apps: list, workdir: Path, project: str = DEFAULT_PROJECT) -> Iterator[dict[str, str]]:
    """The Google emulators running, and each app of `apps` (unumctl.manifest.App) built and
    served on them (its topics, push subscriptions and function servers; the functions'
    output appended to unumctl.gcp.logs.emulator_log_dir(app)); yields the environment for
    the google-cloud clients and unumctl (emulator hosts, project, UNUM_BUCKET: one bucket
    that the apps share, each under its own prefix). Each app's functions use the Firestore
    database its deployment model names (clouds.gcp.database). EmulatorMissing /
    RuntimeError as emulate_aws (nothing left running)."""
    check_gcp()
    from .. import pipeline
    from .gcp.emulators import Emulators
    from .gcp.platform import EmulatorPlatform

    workdir = Path(workdir)
    emu = Emulators(workdir / "emulators", project=project)
    saved = {k: os.environ.get(k) for k in ("FIRESTORE_EMULATOR_HOST", "PUBSUB_EMULATOR_HOST",
                                            "STORAGE_EMULATOR_HOST", "GOOGLE_CLOUD_PROJECT")}
    platforms: list = []
    with emu:
        os.environ.update(emu.env)  # the platform's own clients talk to the emulators
        try:
            for app in apps:
                database = pipeline.model(app, "gcp", project=project).datastore.database
                assert database is not None  # a gcp deployment resolves its Firestore database
                p = EmulatorPlatform(app, emu, workdir / "apps" / app.name,
                                     env={"UNUM_DATABASE": database}, bucket=SHARED_BUCKET)
                platforms.append(p)
                p.start()
            yield {**emu.env, "UNUM_BUCKET": SHARED_BUCKET}
        finally:
            for p in reversed(platforms):
                p.stop()
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
