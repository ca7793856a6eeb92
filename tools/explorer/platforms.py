"""What each platform promises about redelivering a failed invocation: the delay before each
retry (the one place the explorer's scheduler takes it from and its checker checks it
against; docs/explorer.md "Clock").

A failed execution (an error, a crash, a timeout or out-of-memory kill) of an asynchronous
invocation is delivered again only after the platform's delay:

* `lambda`: "If the function returns an error, by default Lambda attempts to run it two more
  times, with a one-minute wait between the first two attempts, and two minutes between the
  second and third attempts. Function errors include errors returned by the function's code
  and errors returned by the function's runtime, such as timeouts."
  (https://docs.aws.amazon.com/lambda/latest/dg/invocation-async-error-handling.html)
* `pubsub` (the gcp target: Cloud Functions gen2 with an Eventarc Pub/Sub trigger whose
  retry policy is RETRY_POLICY_RETRY): "an exponential backoff strategy, with an increasing
  backoff of between 10 and 600 seconds"
  (https://cloud.google.com/functions/docs/writing/retries); only the 10 s minimum is a
  promise, so every retry is modelled at 10 s (a lower bound of the real delays).
* `local`: the local worker reschedules attempt k after `retry_delay * k` seconds
  (unumctl/local/platform.py, default `retry_delay` 0.005 s; a timed-out attempt it
  redelivers at once without counting it, which this table does not model).
"""

from __future__ import annotations

import inspect


def _local_retry_delay() -> float:
    from unumctl.local.platform import LocalPlatform
    return float(inspect.signature(LocalPlatform.__init__).parameters["retry_delay"].default)


def redelivery_delays(platform: str) -> tuple[float, ...]:
    """Seconds the platform waits before the 2nd, 3rd ... delivery attempt of a failed
    invocation (index k-1 after the k-th failure). KeyError for an unknown platform."""
    if platform == "lambda":
        return (60.0, 120.0)
    if platform == "pubsub":
        return (10.0, 10.0)
    if platform == "local":
        d = _local_retry_delay()
        return (d, 2 * d)
    raise KeyError(f"unknown platform {platform!r}: lambda, pubsub or local")
