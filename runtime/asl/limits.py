"""The size limit on a state's or a Task's result, as Step Functions enforces it.

Source: AWS Step Functions developer guide, "Step Functions service quotas"
(https://docs.aws.amazon.com/step-functions/latest/dg/service-quotas.html): the maximum input
or output size of a task, state or execution is 256 KiB of UTF-8 data (262,144 bytes, the
length constraint of `output` in the API reference's TaskSubmittedEventDetails); a result
over it fails with States.DataLimitExceeded. Used by the machine (runtime/asl/machine.py)
and the Lambda family (runtime/asl/integrations/lambda_.py), so it lives below both.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import AslError

__all__ = ["PAYLOAD_LIMIT", "limited"]

PAYLOAD_LIMIT = 256 * 1024
_COMPACT = json.JSONEncoder(separators=(",", ":"))


def limited(result: Any, label: str | None = None) -> Any:
    """Decode a bytes result (sent verbatim as JSON text by Lambda) and enforce the 256 KiB
    payload limit: AslError("States.DataLimitExceeded") naming the state/task `label`."""
    what = f"The state/task '{label}'" if label else "The state/task"
    if isinstance(result, (bytes, bytearray)):
        if len(result) > PAYLOAD_LIMIT:
            raise AslError("States.DataLimitExceeded", f"{what} returned a result with a size "
                           "exceeding the maximum number of bytes service limit.")
        try:
            return json.loads(result)
        except ValueError:
            return result.decode("utf-8", "replace")
    if len(_COMPACT.encode(result)) > PAYLOAD_LIMIT:
        raise AslError("States.DataLimitExceeded", f"{what} returned a result with a size "
                       "exceeding the maximum number of bytes service limit.")
    return result
