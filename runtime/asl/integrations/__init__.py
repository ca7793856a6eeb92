"""Step Functions Task integrations: one module per service family (`dynamodb`, `sns`, `sqs`,
`events`, `states`, `s3`, `sdk`, `lambda_`), the IAM statements they need (`iam`) and the one
lookup of a Task's Resource (`registry`: `find`, `call`, the `Family` protocol every family
module satisfies). This package's face imports nothing, so a family module may be imported
without loading the registry or the others (docs/architecture.md §1).
"""

__all__: list[str] = []  # submodules only
