"""Stage names: which deployment of one app a command addresses (issue 34 item 1).

A stage is a named, separate deployment of the same app on the same cloud: `dev`, `prod`,
`pr42`. It is Serverless Framework's `stage` (
https://www.serverless.com/framework/docs/providers/aws/cli-reference/deploy: `--stage`, and
"Deployment without stage options" deploys to the default stage `dev`), given by
`--stage NAME` on the command line, else the manifest's top-level `stage:`, else DEFAULT_STAGE
(the CLI beats the manifest beats the default). Each (cloud, region, stage) has its own
Terraform state and work directory, and each stage on local its own datastore
(unumctl/deploy/statepath.py); the clouds put it into resource names (`<app>-<stage>...`).

Names are STAGE_RE: 1-10 of a-z and 0-9, a letter first. No `-` and no `_`, so that
`<app>-<stage>` and `<app>-<stage>_<Function>` split unambiguously (app names have no `_`),
and short, because every cloud name carries it within the clouds' length limits.
"""

from __future__ import annotations

import re

__all__ = ["DEFAULT_STAGE", "check_stage", "resolve_stage", "stage_problem"]

DEFAULT_STAGE = "dev"
STAGE_RE = re.compile(r"[a-z][a-z0-9]{0,9}")


def stage_problem(value: object) -> str | None:
    """None when `value` is a stage name (STAGE_RE), else what is wrong with it (one line,
    without the field: "'Prod' is not a stage name (...)")."""
    if isinstance(value, str) and STAGE_RE.fullmatch(value):
        return None
    return (f"{repr(value)[:40]} is not a stage name (1-10 of a-z and 0-9, a letter first, "
            "no '-' or '_')")


def check_stage(value: object, field: str = "--stage") -> str:
    """`value` when it is a stage name (STAGE_RE); ValueError, one line naming `field` (the
    flag, or the manifest's `stage`) and the fix, otherwise."""
    problem = stage_problem(value)
    if problem is None:
        return str(value)
    example = "--stage prod" if field.startswith("--") else "stage: prod"
    raise ValueError(f"{field}: {problem}; e.g. {example}")


def resolve_stage(flag: str | None, manifest: str | None) -> str:
    """The stage a command addresses: `flag` (--stage, checked) > `manifest` (the manifest's
    `stage:`, checked when it was loaded) > DEFAULT_STAGE."""
    if flag is not None:
        return check_stage(flag)
    return manifest if manifest is not None else DEFAULT_STAGE
