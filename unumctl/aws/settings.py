"""The typed `clouds.aws` section of the manifest (docs/aws.md), the AWS target's TargetSpec
`settings` (unumctl/registry.py). Resolved by the one precedence rule of
unumctl/deploy/settings.py (`Section.resolved`): flag > environment (AWS CLI / boto3:
AWS_REGION, AWS_DEFAULT_REGION, AWS_PROFILE, AWS_ENDPOINT_URL[_<SERVICE>]) > manifest > default.

Sources: CloudWatch Logs PutRetentionPolicy (retentionInDays); Lambda
PutFunctionEventInvokeConfig (MaximumRetryAttempts 0-2); the Lambda runtimes below.
"""

from __future__ import annotations

import os
import re
from typing import Any, ClassVar, Literal, Mapping

from pydantic import Field, field_validator

from ..deploy.settings import Backend, Bool, Int, Section, Str, first

__all__ = ["AWS_ARCHITECTURES", "AWS_LAMBDA_RUNTIME", "AWS_LAMBDA_RUNTIMES", "AWS_SERVICES", "AwsSection",
           "LOG_RETENTION_DAYS"]

# the values CloudWatch Logs accepts for a log group's retention (0 = never expire)
LOG_RETENTION_DAYS = (0, 1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096,
                      1827, 2192, 2557, 2922, 3288, 3653)
# the AWS services the rendered provider block configures (endpoint overrides)
AWS_SERVICES = ("dynamodb", "events", "iam", "lambda", "logs", "s3", "scheduler", "sqs", "sts")
AWS_ARCHITECTURES = ("x86_64", "arm64")
# Lambda's Python runtimes on Amazon Linux 2023 that `clouds.aws.runtime` accepts, and the
# default. Source: "Building Lambda functions with Python" and "Lambda runtimes"
# (https://docs.aws.amazon.com/lambda/latest/dg/lambda-python.html,
# https://docs.aws.amazon.com/lambda/latest/dg/lambda-runtimes.html): python3.12 (deprecated
# 2028-10-31) and python3.13 (2029-06-30) run on Amazon Linux 2023; python3.11 and older are
# left out (python3.11 is deprecated 2026-06-30). python3.14, Lambda's newest, is not in the
# runtime list of the pinned provider hashicorp/aws 5.100 (aws/render.py PROVIDER_VERSION),
# which would refuse it at plan.
AWS_LAMBDA_RUNTIMES = ("python3.12", "python3.13")
AWS_LAMBDA_RUNTIME = "python3.13"


class AwsSection(Section):
    """`clouds.aws` (docs/aws.md). `runtime`: one of AWS_LAMBDA_RUNTIMES (default
    AWS_LAMBDA_RUNTIME); `architecture`: x86_64 | arm64. `max_retry_attempts` None = runtime.max_delivery_attempts
    - 1, at most 2 (aws/model.py); `s3_use_path_style` None = true when endpoints are set."""

    ENV: ClassVar[dict[str, tuple[str, ...]]] = {"region": ("AWS_REGION", "AWS_DEFAULT_REGION"),
                                                 "profile": ("AWS_PROFILE",)}
    region: Str | None = None
    profile: Str | None = None
    architecture: Literal["x86_64", "arm64"] = "x86_64"
    runtime: Str = AWS_LAMBDA_RUNTIME    # Lambda runtime id; wheels are resolved for its Python
    max_retry_attempts: Int(2) | None = None
    point_in_time_recovery: Bool = False
    log_retention_days: Int(14) = 14
    endpoints: dict[str, Str] = Field(default_factory=dict)
    s3_use_path_style: Bool | None = None
    backend: Backend | None = None
    reserved_concurrency: Int(-1) = -1   # per function; -1 = nothing reserved
    kms_key_arn: str | None = None       # customer-managed key; None = AWS-owned keys
    # ByTime window -> seconds between the scheduler's ticks on this cloud (deploy/windows.py)
    window_seconds: dict[str, Int(60)] = Field(default_factory=dict)

    @field_validator("architecture", mode="before")
    @classmethod
    def _arch(cls, v: Any) -> Any:
        if v not in AWS_ARCHITECTURES:
            raise ValueError(f"{str(v)[:40]!r} must be one of {', '.join(AWS_ARCHITECTURES)}")
        return v

    @field_validator("runtime", mode="before")
    @classmethod
    def _runtime(cls, v: Any) -> Any:
        if v not in AWS_LAMBDA_RUNTIMES:
            raise ValueError(f"{str(v)[:40]!r} must be one of {', '.join(AWS_LAMBDA_RUNTIMES)} "
                             "(Lambda's Python runtimes on Amazon Linux 2023)")
        return v

    def python_version(self) -> str:
        """The CPython version of `runtime`, e.g. "3.13" for python3.13 (what pip resolves
        wheels for: --python-version)."""
        return self.runtime.removeprefix("python")

    @field_validator("max_retry_attempts")
    @classmethod
    def _retries(cls, v: int | None) -> int | None:
        if v is not None and not 0 <= v <= 2:
            raise ValueError(f"{v} must be 0, 1 or 2 (Lambda's range)")
        return v

    @field_validator("log_retention_days")
    @classmethod
    def _retention(cls, v: int) -> int:
        if v not in LOG_RETENTION_DAYS:
            raise ValueError(f"{v} is not one of CloudWatch's values ({', '.join(map(str, LOG_RETENTION_DAYS))})")
        return v

    @field_validator("reserved_concurrency")
    @classmethod
    def _reserved(cls, v: int) -> int:
        if v < -1:
            raise ValueError(f"{v} must be -1 (unreserved) or >= 0 (Lambda reserved concurrency)")
        return v

    @field_validator("kms_key_arn", mode="before")
    @classmethod
    def _kms(cls, v: Any) -> str | None:
        # a key ARN, not an alias: Lambda and CloudWatch Logs take key ARNs only
        if v is not None and not (isinstance(v, str) and re.fullmatch(
                r"arn:[a-z-]+:kms:[a-z0-9-]+:\d{12}:key/[A-Za-z0-9-]+", v)):
            raise ValueError(f"{str(v)[:40]!r} must be a KMS key ARN, e.g. arn:aws:kms:us-east-1:123456789012:key/<id>")
        return v

    def resolved(self, environ: Mapping[str, str] | None = None, **flags: Any) -> "AwsSection":
        """Section.resolved, and per service of AWS_SERVICES the endpoint
        AWS_ENDPOINT_URL_<SERVICE> > AWS_ENDPOINT_URL > `endpoints.<service>` (the same rule:
        environment > manifest); `s3_use_path_style` defaults to whether any endpoint is set."""
        env = os.environ if environ is None else environ
        out = super().resolved(env, **flags)
        endpoints = {}
        for svc in AWS_SERVICES:
            url = first(env.get(f"AWS_ENDPOINT_URL_{svc.upper()}"), env.get("AWS_ENDPOINT_URL"),
                        self.endpoints.get(svc))
            if url:
                endpoints[svc] = url
        path_style = self.s3_use_path_style if self.s3_use_path_style is not None else bool(endpoints)
        return out.model_copy(update={"endpoints": endpoints, "s3_use_path_style": path_style})
