"""Stages and regions of one app side by side in one AWS account (issue 34 item 1): every name
the rendered root module gives a resource carries the app and the stage, and the region where
AWS keeps names account-wide (IAM roles) or partition-wide (S3 buckets), so two stages in two
regions never take each other's names (unumctl/aws/names.py). Offline: the model is built and
main.tf rendered with placeholder archives; nothing is packaged or applied.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from unumctl.aws import names
from unumctl.aws.policies import policy_sizes
from unumctl.aws.render import render_main
from unumctl.deploy.appgraph import build
from unumctl.pipeline import load as load_app

ROOT = Path(__file__).resolve().parents[2]
STAGES = ("dev", "prod")
REGIONS = ("eu-west-1", "ap-southeast-4")


def _app(tmp_path: Path) -> Path:
    """window-campaigns (functions, an error handler, a ByTime window: its schedule and the
    scheduler's role) ticking every minute on aws."""
    root = tmp_path / "app"
    shutil.copytree(ROOT / "examples" / "window-campaigns", root, ignore=shutil.ignore_patterns(".unum"))
    text = (root / "unumctl.yaml").read_text()
    (root / "unumctl.yaml").write_text(text[:text.index("clouds:")] +
                                       "clouds:\n  aws:\n    window_seconds: {campaigns: 60}\n")
    return root


def rendered_names(main_tf: str) -> dict[str, list[str]]:
    """The resource names main.tf sets, by scope: "account" (IAM roles: each function's
    role_name and the window scheduler's role) and "partition" (the S3 bucket_prefix), whose
    names must differ across regions too; "regional" (Lambda functions, their log groups,
    the DynamoDB table and its failed-event queue, the schedules), which must differ across
    stages of one region."""
    def values(pattern: str) -> list[str]:
        return re.findall(pattern, main_tf)
    functions = values(r'\n  function_name\s*= "([^"]+)"')
    table = values(r'\n  table_name\s*= "([^"]+)"')
    sched_role = re.findall(r'resource "aws_iam_role" "window_scheduler" \{\n  name = "([^"]+)"', main_tf)
    schedules = re.findall(r'resource "aws_scheduler_schedule" "[^"]+" \{\n  name\s*= "([^"]+)"', main_tf)
    return {"account": values(r'\n  role_name\s*= "([^"]+)"') + sched_role,
            "partition": values(r'\n  bucket_prefix\s*= "([^"]+)"'),
            "regional": functions + [f"/aws/lambda/{f}" for f in functions] + table +
                        [f"{t}-failed" for t in table] + schedules}


def collisions(rendered: dict[tuple[str, str], dict[str, list[str]]]) -> list[str]:
    """`name: where, where` for every name two (stage, region) deployments of one app would
    both create: an account- or partition-wide name used twice anywhere, a regional one twice
    in one region (a name used twice inside one deployment counts too)."""
    out = []
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for (stage, region), by_scope in sorted(rendered.items()):
        for scope, found in sorted(by_scope.items()):
            for name in found:
                key = (name, region) if scope == "regional" else (name, "")
                if key in seen:
                    out.append(f"{name}: {seen[key]} and {(stage, region)}")
                seen[key] = (stage, region)
    return out


def _render_all(tmp_path: Path) -> tuple[dict, dict]:
    app = load_app(_app(tmp_path))
    deps, rendered = {}, {}
    for stage in STAGES:
        for region in REGIONS:
            dep = build(app, "aws", stage=stage, region=region)
            for f in dep.all_functions:  # placeholder archives: nothing is packaged
                f.archive.path, f.archive.sha256 = tmp_path / f"{f.unum_name}.zip", "0" * 64
            deps[stage, region] = dep
            rendered[stage, region] = rendered_names(render_main(dep, tmp_path))
    return deps, rendered


def test_two_stages_in_two_regions_take_no_name_twice(tmp_path):
    deps, rendered = _render_all(tmp_path)
    for (stage, region), by_scope in rendered.items():
        dep = deps[stage, region]
        n = len(dep.all_functions)
        # everything the model names is in main.tf: one role per function + the scheduler's
        assert len(by_scope["account"]) == n + 1 and len(by_scope["partition"]) == 1
        assert all(s.startswith(f"{dep.app}-{stage}") for s in by_scope["account"]), by_scope["account"]
        # the rendered global names are those of aws/names.py for this stage *and region*
        assert by_scope["account"] == [names.role(f.name, region) for f in dep.all_functions] + \
            [names.scheduler_role(dep.app, stage, region)]
        assert by_scope["partition"] == [names.bucket_prefix(dep.app, stage, region)]
        assert sorted(by_scope["account"]) == sorted(policy_sizes(dep))  # the roles the size check sizes
    assert collisions(rendered) == []


def test_collision_checker_catches_a_name_without_the_stage_or_region(tmp_path):
    """The checker is shown to catch what it looks for: the scheduler's role named as before
    (`<app>-window-scheduler`, no stage, no region) collides across every deployment; a
    regional name without the stage collides across the stages of a region, not across regions."""
    _, rendered = _render_all(tmp_path)
    legacy = {k: {**v, "account": [n if not n.endswith("-window-scheduler") else "window-campaigns-window-scheduler"
                                   for n in v["account"]]} for k, v in rendered.items()}
    found = collisions(legacy)
    assert len(found) == len(rendered) - 1 and all(f.startswith("window-campaigns-window-scheduler: ") for f in found)
    stageless = {k: {**v, "regional": v["regional"] + ["unum-window-campaigns"]} for k, v in rendered.items()}
    found = collisions(stageless)
    assert sorted(f.split(":")[0] for f in found) == ["unum-window-campaigns"] * len(REGIONS)


def test_function_pattern_is_exact_to_one_stage_of_one_app():
    """`<app>-<stage>_*` matches the stage's functions and nothing of another stage or of an
    app whose name is `<app>-<stage>` (app names hold no '_', stage names no '-' or '_')."""
    pattern = re.compile(re.escape(names.function_pattern("shop", "dev")).replace(r"\*", ".*") + "$")
    assert pattern.match(names.function("shop", "dev", "Cart"))
    assert pattern.match(names.error_handler("shop", "dev"))
    for other in (names.function("shop", "prod", "Cart"), names.function("shop-dev", "x", "Cart"),
                  names.function("shop-eu", "dev", "Cart"), names.function("shop", "devx", "Cart")):
        assert not pattern.match(other), other


def test_long_global_names_are_hashed_within_their_limits_and_stay_distinct():
    """Past IAM's 64 characters (roles) and the 37 of an S3 bucket_prefix the names keep their
    start and end in a hash of the whole, so they stay within the limit and distinct."""
    app = "a" * 40
    prefixes = {names.bucket_prefix(app, s, r) for s in STAGES for r in REGIONS}
    roles = {names.scheduler_role(app, s, r) for s in STAGES for r in REGIONS}
    fn_roles = {names.role(names.function(app, s, "F" * 15), r) for s in STAGES for r in REGIONS}
    for found, limit, end in ((prefixes, names.BUCKET_PREFIX_MAX, "-"), (roles, names.IAM_ROLE_NAME_MAX, "-window-scheduler"),
                              (fn_roles, names.IAM_ROLE_NAME_MAX, "-role")):
        assert len(found) == len(STAGES) * len(REGIONS)
        assert all(len(n) <= limit and n.endswith(end) and "a" * 10 in n for n in found), found
    assert all(re.fullmatch(r"[a-z0-9][a-z0-9-]*-", p) for p in prefixes)  # S3's characters
