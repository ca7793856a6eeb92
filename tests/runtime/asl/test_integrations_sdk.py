"""The aws-sdk integration's Resource forms (runtime/asl/integrations/sdk.py match), with an
empty region and account, and with a region and an account written, as Step Functions
accepts; walked in place against moto's in-process emulator."""

from __future__ import annotations

import pytest

from runtime.asl.integrations import registry
from tests.runtime.asl.conftest import walk


@pytest.mark.parametrize("prefix", ["arn:aws:states:::", "arn:aws:states:us-east-1:123456789012:"])
def test_aws_sdk_resource_with_or_without_region_and_account(moto, prefix):
    out, _ = walk(prefix + "aws-sdk:sqs:createQueue", {"QueueName": "work"})
    assert out["QueueUrl"].endswith("/work")


@pytest.mark.parametrize("resource", [
    "arn:aws:states:us-east-1::aws-sdk:sqs:createQueue:extra",
    "arn:aws:states:nowhere:123456789012:aws-sdk:sqs:createQueue",
    "arn:aws:states:us-east-1:1234:aws-sdk:sqs:createQueue",
    "arn:aws:lambda:us-east-1:123456789012:aws-sdk:sqs:createQueue",
])
def test_a_malformed_aws_sdk_resource_is_not_served(resource):
    target = registry.find(resource)
    assert target is None or target.name != "aws-sdk"

