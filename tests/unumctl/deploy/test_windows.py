"""The cloud timers of ByTime windows (unumctl/deploy/windows.py): EventBridge Scheduler rate
expressions and Cloud Scheduler cron schedules, the one-line refusal of a period the cloud's
scheduler cannot tick, `clouds.<cloud>.window_seconds`, and the rendered Terraform."""

from __future__ import annotations

import base64
import json
import shutil

import pytest

from runtime.triggers import window
from unumctl.aws.timers import rate as aws_rate
from unumctl.deploy.windows import WindowTimer
from unumctl.gcp.timers import cron as gcp_cron
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import ROOT


def _t(seconds):
    return WindowTimer("w", "C", seconds, "ir/P.yaml: Next[0]")


@pytest.mark.parametrize("seconds, rate, cron", [
    (60, "rate(1 minute)", "* * * * *"), (120, "rate(2 minutes)", "*/2 * * * *"),
    (900, "rate(15 minutes)", "*/15 * * * *"), (3600, "rate(1 hour)", "0 * * * *"),
    (7200, "rate(2 hours)", "0 */2 * * *"), (86400, "rate(1 day)", "0 */24 * * *")])
def test_periods(seconds, rate, cron):
    assert aws_rate(_t(seconds)) == rate and gcp_cron(_t(seconds)) == cron


@pytest.mark.parametrize("seconds", [1, 59, 90])
def test_a_period_under_a_minute_or_not_whole_minutes_is_refused_in_one_line(seconds):
    for fn, cloud in ((aws_rate, "aws"), (gcp_cron, "gcp")):
        with pytest.raises(ValueError) as err:
            fn(_t(seconds))
        msg = str(err.value)
        assert msg.startswith(f"ir/P.yaml: Next[0]: ByTime: {seconds:g} s is not possible on {cloud}") \
            and "ByTime: 60" in msg and "\n" not in msg
    with pytest.raises(ValueError, match="no Cloud Scheduler cron period"):
        gcp_cron(_t(420))  # 7 minutes: a valid rate, no cron step


def _app(tmp_path, clouds=None):
    root = tmp_path / "app"
    shutil.copytree(ROOT / "examples" / "window-campaigns", root, ignore=shutil.ignore_patterns(".unum"))
    text = (root / "unumctl.yaml").read_text()
    head = text[:text.index("clouds:")]
    (root / "unumctl.yaml").write_text(head + "clouds:\n" + (clouds or "  aws: {}\n  gcp: {}\n"))
    return root


def test_aws_plan_refuses_a_one_second_window(tmp_path, monkeypatch):
    from unumctl.aws.target import AwsTarget
    from unumctl.targets import TargetError
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    with pytest.raises(TargetError) as err:
        AwsTarget(load_app(_app(tmp_path))).render()
    assert str(err.value).endswith("ir/Ingest.yaml: Next[0]: ByTime: 1 s is not possible on aws: its scheduler "
                                   "ticks at most once a minute, so use a whole number of minutes (e.g. ByTime: 60), "
                                   "or deploy with --cloud local (docs/ir.md)")


def test_window_seconds_must_name_a_window(tmp_path):
    from unumctl.deploy.appgraph import build
    app = load_app(_app(tmp_path, "  aws:\n    window_seconds: {nope: 60}\n"))
    with pytest.raises(AppError, match=r"clouds.aws.window_seconds.nope: no ByTime window 'nope' in this app "
                                       r"\(its ByTime windows: campaigns\)$"):
        build(app, "aws")


def test_rendered_aws_schedule_and_role(tmp_path, monkeypatch):
    """The example renders one schedule every minute invoking Count with the tick payload,
    through a role that scheduler.amazonaws.com assumes and that may invoke only Count."""
    from unumctl.aws.target import AwsTarget
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    target = AwsTarget(load_app(_app(tmp_path, "  aws:\n    window_seconds: {campaigns: 60}\n")))
    target.render()
    text = (target.workdir / "main.tf").read_text()
    block = text[text.index('resource "aws_scheduler_schedule" "window_campaigns" {'):]
    block = block[:block.index("\n}\n")]
    assert 'schedule_expression = "rate(1 minute)"' in block
    assert 'name                = "window-campaigns-dev-window-campaigns"' in block
    assert "arn      = module.fn_Count.arn" in block and "role_arn = aws_iam_role.window_scheduler.arn" in block
    literal = block.split("input    = ")[1].splitlines()[0]  # an HCL string literal (JSON escapes)
    assert json.loads(json.loads(literal)) == window.tick_payload("campaigns", None)
    assert 'Principal = { Service = "scheduler.amazonaws.com" }' in text
    assert 'Action   = "lambda:InvokeFunction"\n      Resource = [module.fn_Count.arn]' in text


def test_rendered_gcp_job_and_its_api(tmp_path):
    """The example renders one Cloud Scheduler job publishing the tick to Count's topic, after
    the Cloud Scheduler API is enabled: the offline dependency check finds the job once its
    depends_on is removed (unumctl/gcp/checks/tf_deps.py knows the job's API)."""
    pytest.importorskip("hcl2", reason="python-hcl2 not installed")
    from unumctl.pipeline import deployment
    from unumctl.gcp import render as gcp_render
    from unumctl.gcp.checks import tf_deps
    app = load_app(_app(tmp_path, "  gcp:\n    window_seconds: {campaigns: 120}\n"))
    out, _ = gcp_render.render(app, deployment(app, "gcp"))
    text = (out / "main.tf").read_text()
    assert 'schedule  = "*/2 * * * *"' in text and "topic_name = module.fn_Count.topic_id" in text
    data = text.split('data       = "')[1].split('"')[0]
    assert json.loads(base64.b64decode(data)) == window.tick_payload("campaigns", None)
    assert tf_deps.check(out)[0] == []
    (out / "main.tf").write_text(text.replace("depends_on = [time_sleep.cloudscheduler]", ""))
    assert "depends_on = [time_sleep.cloudscheduler]" in text  # the edit above removes something
    found = tf_deps.check(out)[0]
    assert any("google_cloud_scheduler_job.window_campaigns" in f and "cloudscheduler" in f for f in found), found
