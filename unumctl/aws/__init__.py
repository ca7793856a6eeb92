"""The `aws` target: Lambda + DynamoDB + S3, deployed with Terraform.

`spec.py` registers its parts (unumctl/registry.py). boto3 and python-terraform come from the
`aws` extra.
"""

__all__: list[str] = []  # submodules only
