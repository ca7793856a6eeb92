"""What co-location saves on the local target (unumctl.tuning.colocate.choose): local stands
for AWS Lambda in `unumctl tune` (its sizing is Lambda's, unumctl/local/spec.py), so a plan
tuned on local is priced at AWS's rates (unumctl/aws/tuning.py)."""

from __future__ import annotations

from ..aws.tuning import invocation_usd, storage_usd

__all__ = ["invocation_usd", "storage_usd"]
