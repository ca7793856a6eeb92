"""The errors a GCP apply may fail with while something just created propagates, and the
bounded retry of `unumctl apply --cloud gcp` on them (docs/gcp.md "First apply").

The rendered Terraform already waits where Google's modules wait (time_sleep after the API
enablement and after the service agents and IAM grants: terraform/modules/gcp-unum-datastore),
but IAM changes "typically propagate in 2 minutes, potentially 7 minutes or longer"
(https://cloud.google.com/iam/docs/access-change-propagation), so a first apply can still
fail on one of these. Each entry is one error text exactly as the cited provider issue quotes
it; an apply is retried only when every `Error:` diagnostic Terraform printed contains one of
them (another error in the same run would fail again), at most ATTEMPTS times in all, waiting
BACKOFF_SECONDS between attempts, with one line on stderr saying why each time.

Matching: Terraform's plain diagnostics (`-no-color`, output not a terminal) wrap the detail
text at the terminal width, so a diagnostic's text and the quoted text are compared with runs
of whitespace collapsed to one space and case folded (one issue quotes the Eventarc error as
"permission denied while using ...", the others "Permission denied while using ...").
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from typing import Callable, TypeVar

from ..terraform import TerraformFailed

__all__ = ["classify", "retrying"]


@dataclass(frozen=True)
class Propagation:
    """One documented propagation error: `name` (short, for the retry line), `text` (as the
    issue quotes it), `waiting_for` (what has not propagated yet) and `source` (the citation)."""

    name: str
    text: str
    waiting_for: str
    source: str


RETRYABLE: tuple[Propagation, ...] = (
    Propagation(
        "eventarc-service-agent",
        "Permission denied while using the Eventarc Service Agent. If you recently started to use "
        "Eventarc, it may take a few minutes before all necessary permissions are propagated to the "
        "Service Agent",
        "the Eventarc service agent's permissions",
        "https://github.com/hashicorp/terraform-provider-google/issues/25294 (also #14584; quoted in "
        "terraform-google-modules/terraform-docs-samples#486)"),
    Propagation(
        "api-just-enabled",
        "If you enabled this API recently, wait a few minutes for the action to propagate to our "
        "systems and retry",
        "an API just enabled (SERVICE_DISABLED)",
        "https://github.com/hashicorp/terraform-provider-google/issues/1789 (also #11023)"),
    Propagation(
        "build-account-source-access",
        "Build failed with status: FAILURE and message: failed to Fetch: failed to download archive",
        "the build service account's roles (Storage Object Viewer on the source bucket)",
        "https://github.com/hashicorp/terraform-provider-google/issues/20571 (the provider's own test, "
        "which grants the role, fails this way half the time)"),
)

ATTEMPTS = 3
BACKOFF_SECONDS: tuple[float, ...] = (60.0, 180.0)  # before the 2nd and the 3rd attempt
_sleep: Callable[[float], None] = time.sleep  # tests replace it
_ERROR = re.compile(r"^(?:[│╷╵ ]*)Error: ", re.MULTILINE)
_NEXT = re.compile(r"^(?:[│╷╵ ]*)(?:Error|Warning): ", re.MULTILINE)

T = TypeVar("T")


def _norm(text: str) -> str:
    return " ".join(text.replace("│", " ").split()).casefold()


def diagnostics(output: str) -> list[str]:
    """The `Error:` diagnostics of Terraform's output, each as its text up to the next
    diagnostic (box-drawing characters of the coloured format removed)."""
    starts = [m.start() for m in _ERROR.finditer(output)]
    out = []
    for s in starts:
        nxt = _NEXT.search(output, s + 1)
        out.append(output[s:nxt.start() if nxt else len(output)])
    return out


def classify(output: str) -> list[Propagation] | None:
    """The documented propagation error of each `Error:` diagnostic in `output`, or None when
    there is none or any of them is another error (not retryable)."""
    found = []
    for diag in diagnostics(output):
        text = _norm(diag)
        match = next((p for p in RETRYABLE if _norm(p.text) in text), None)
        if match is None:
            return None
        found.append(match)
    return found or None


def retrying(step: Callable[[], T], what: str, say: Callable[[str], None] | None = None) -> tuple[T, list[dict]]:
    """Run `step` (a Terraform run that raises TerraformFailed) up to ATTEMPTS times while it
    fails only with documented propagation errors; returns (its result, the retries made:
    [{"attempt", "errors": [name], "waited_s"}]). Each retry says why on `say` (default
    stderr). The last failure, or any other error, is raised as it is."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    retries: list[dict] = []
    for attempt in range(1, ATTEMPTS + 1):
        try:
            return step(), retries
        except TerraformFailed as exc:
            found = classify(exc.output)
            if found is None or attempt == ATTEMPTS:
                if found is not None:
                    say(f"unumctl: {what}: attempt {attempt} of {ATTEMPTS} failed again while waiting for "
                        f"{found[0].waiting_for}; giving up")
                raise
            wait = BACKOFF_SECONDS[min(attempt - 1, len(BACKOFF_SECONDS) - 1)]
            names = sorted({p.name for p in found})
            say(f"unumctl: {what}: attempt {attempt} of {ATTEMPTS} failed while waiting for "
                f"{found[0].waiting_for} ({', '.join(names)}; {found[0].source}); retrying in {wait:.0f} s")
            retries.append({"attempt": attempt, "errors": names, "waited_s": wait})
            _sleep(wait)
    raise AssertionError("unreachable")  # pragma: no cover
