"""The `aws` target as the registry sees it (unumctl/registry.py): Lambda + DynamoDB + S3,
deployed with Terraform. Only references here: importing this module loads no SDK."""

from __future__ import annotations

from ..registry import TargetSpec

__all__ = ["SPEC"]

SPEC = TargetSpec(
    name="aws",
    target="unumctl.aws.target:AwsTarget",
    entry_line="from runtime.aws.entry import lambda_handler  # noqa: F401\n",
    model="unumctl.aws.model:build",
    history="unumctl.aws.history:AwsHistoryReader.for_app",
    settings="unumctl.aws.settings:AwsSection",
    bundle_hook="unumctl.aws.package:lambda_bundle_hook",
    billing="unumctl.aws.billing:BILLING",
    sizing="unumctl.aws.sizing:SIZING",
    tuning="unumctl.aws.tuning:TUNING",
    emulator="unumctl.aws.emulate.run:EMULATOR",
    measure="unumctl.aws.measure:measure_aws",
    gc_default="none",  # DynamoDB TTL deletes are free: nothing deleted per transition (docs/protocol.md "GC modes")
    # the keys of the price table's "aws" section (what billing.py and stepfunctions.py read)
    price_keys=("lambda_request_per_million", "lambda_gb_second", "lambda_billing_increment_ms",
                "dynamodb_write_request_unit_per_million", "dynamodb_read_request_unit_per_million",
                "dynamodb_write_unit_bytes", "dynamodb_read_unit_bytes",
                "s3_put_per_thousand", "s3_get_per_thousand", "cloudwatch_logs_ingestion_per_gb",
                "stepfunctions_standard_per_thousand_transitions",
                "stepfunctions_express_per_million_requests", "stepfunctions_express_gb_second",
                "stepfunctions_express_memory_increment_mb", "stepfunctions_express_billing_increment_ms",
                "eventbridge_scheduler_per_million_invocations",  # window timers (unumctl/deploy/windows.py)
                "operations"),
)
