"""Lambda's deployment-package size limits, checked on the built archives before Terraform.

Source: AWS Lambda developer guide, "Lambda quotas", Deployment package (.zip file archive)
size (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html): 50 MB zipped
when uploaded directly through the Lambda API ("Upload larger files with Amazon S3"), 250 MB
for the contents of a deployment package including layers, unzipped; the Lambda API reference
names the same two quotas CodeSizeZipped and CodeSizeUnzipped
(https://docs.aws.amazon.com/lambda/latest/api/API_AccountLimit.html), and CreateFunction
reports the second as "Unzipped size must be smaller than 262144000 bytes" (250 MiB).

An archive over the direct-upload limit is uploaded to the app's bucket and the function reads
it from there (`aws_s3_object` + the function's `s3_bucket`/`s3_key`, as
terraform-aws-modules/lambda does with `store_on_s3`); one over the unzipped limit cannot be
deployed at all (unumctl uses no layers, so the archive alone counts).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from .package import PackagingError

__all__ = ["LAMBDA_DIRECT_UPLOAD_MAX", "LAMBDA_UNZIPPED_MAX", "via_s3"]

LAMBDA_DIRECT_UPLOAD_MAX = 50 * 1024 * 1024   # bytes of the zip (CodeSizeZipped)
LAMBDA_UNZIPPED_MAX = 262_144_000             # bytes once extracted (CodeSizeUnzipped)


def _mb(n: int) -> str:
    return f"{n / 1_048_576:.1f} MB"


def via_s3(function: str, archive: Path) -> bool:
    """Whether `archive` (a built Lambda zip of `function`) must be uploaded through S3: its
    size is over LAMBDA_DIRECT_UPLOAD_MAX. Raises PackagingError (one line naming the
    function, the sizes and the three biggest files) when its extracted size is over
    LAMBDA_UNZIPPED_MAX."""
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
    unzipped = sum(i.file_size for i in infos)
    if unzipped > LAMBDA_UNZIPPED_MAX:
        biggest = sorted(infos, key=lambda i: (-i.file_size, i.filename))[:3]
        files = ", ".join(f"{i.filename} ({_mb(i.file_size)})" for i in biggest)
        raise PackagingError(
            f"functions.{function}: the Lambda archive unzips to {_mb(unzipped)}, over Lambda's "
            f"{_mb(LAMBDA_UNZIPPED_MAX)} limit; biggest files: {files}; drop them from the code "
            "directory (or list them in .unumignore) or trim the requirements")
    return archive.stat().st_size > LAMBDA_DIRECT_UPLOAD_MAX
