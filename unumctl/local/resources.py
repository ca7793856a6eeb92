"""Create the manifest's `integrations.resources` (unumctl/deploy/local_resources.py) on the
embedded AWS emulator before a local run's first session: DynamoDB tables (on-demand),
S3 buckets and SQS queues. Only ever the embedded moto_server on 127.0.0.1 that the run
started (unumctl.local.LocalRunner calls this only for it): never an endpoint the user
named, never real AWS. Signed with the placeholder keys (emulator.DUMMY_CREDENTIALS).
Creating what exists already (a `serve` that shares one emulator across machines) is not
an error. docs/local.md "Resources on the embedded emulator"."""

from __future__ import annotations

from typing import Any

from ..deploy.local_resources import LocalResources
from .emulator import DUMMY_CREDENTIALS, EmulatorError

__all__ = ["create"]

# what each service answers for a resource that exists (left as it is)
_EXISTS = {"ResourceInUseException", "BucketAlreadyOwnedByYou", "BucketAlreadyExists",
           "QueueAlreadyExists"}


def create(resources: LocalResources, url: str, region: str) -> None:
    """Create every resource of `resources` on the emulator at `url` in `region`. Raises
    EmulatorError (one line naming the resource and the service's error) when one fails."""
    if not resources:
        return
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError
    session = boto3.session.Session(aws_access_key_id=DUMMY_CREDENTIALS["AWS_ACCESS_KEY_ID"],
                                    aws_secret_access_key=DUMMY_CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
                                    region_name=region)

    def client(service: str) -> Any:
        return session.client(service, endpoint_url=url)

    def do(what: str, call: Any, **kwargs: Any) -> None:
        try:
            call(**kwargs)
        except ClientError as err:
            code = str(err.response.get("Error", {}).get("Code", ""))
            if code not in _EXISTS:
                raise EmulatorError(f"integrations.resources: creating {what} on the embedded emulator "
                                    f"failed: {code}: {err.response.get('Error', {}).get('Message', '')}") from None
        except BotoCoreError as err:
            raise EmulatorError(f"integrations.resources: creating {what} on the embedded emulator "
                                f"failed: {err}") from None

    if resources.dynamodb_tables:
        ddb = client("dynamodb")
        for t in resources.dynamodb_tables:
            do(f"DynamoDB table {t.TableName!r}", ddb.create_table, **t.request())
    if resources.s3_buckets:
        s3 = client("s3")
        where = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
        for b in resources.s3_buckets:
            do(f"S3 bucket {b!r}", s3.create_bucket, Bucket=b, **where)
    if resources.sqs_queues:
        sqs = client("sqs")
        for q in resources.sqs_queues:
            do(f"SQS queue {q!r}", sqs.create_queue, QueueName=q)
