"""The `aws` target: Lambda + DynamoDB + S3, deployed with Terraform.

Importing this module registers the bundle hook (`unumctl.build.TARGETS['aws']`) and the
Target (`unumctl.targets`). boto3 and python-terraform come from the `aws` extra.
"""

from ..build import TARGETS
from .package import lambda_bundle_hook

TARGETS["aws"] = lambda_bundle_hook

from .target import AwsTarget  # noqa: E402,F401
