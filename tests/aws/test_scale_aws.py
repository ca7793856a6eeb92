"""Apps of 200 functions on the aws target (issue 34 item 4): a generated 200-function chain
and a 200-wide fan-out render with every role's inline policy under IAM's 10,240-character
limit (the error handler's and the fan-out's InvokeSuccessors take the app's name pattern
`<app>_*`, unumctl/aws/policies.py), the pattern matches this app's functions and no other
app's, an oversized policy is refused at model time in one line, and the chain plans on
moto (and applies, `aws_long`)."""

from __future__ import annotations

import json
import time

import boto3
import pytest

from unumctl.aws import policies
from unumctl.aws.target import AwsTarget
from unumctl.aws import names
from unumctl.deploy import appgraph
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.iam import allowed, policy_document

from unumctl_testing.apps import ECHO, chain_app, fanout_app
from .conftest import aws_env
from .test_terraform_aws import tf_env  # noqa: F401 (fixture)

LIMIT = 10_240  # IAM quotas page: a role's inline policies, aggregate, white space not counted
chain, fanout = chain_app, fanout_app


def _sizes(dep):
    """Role -> size (characters without white space) of the policy the IAM-enforced tests sign
    with and tests/aws/test_terraform_aws.py compares with the one Terraform applies, in the
    longest region name and with the bucket's full 63 characters."""
    bucket = dep.bucket_prefix + "x" * 26
    queue = f"arn:aws:sqs:ap-southeast-4:123456789012:{dep.table}-failed"
    return {f.name: len(json.dumps(policy_document(dep, f, dep.table, bucket, "ap-southeast-4", "123456789012",
                                                   queue), separators=(",", ":")))
            for f in dep.all_functions}


@pytest.mark.parametrize("make", [chain, fanout], ids=["chain", "fanout"])
def test_200_function_app_policies_under_iam_limit(make, tmp_path):
    dep = appgraph.build(load_app(make(tmp_path / make.__name__, 200)), "aws")
    assert len(dep.all_functions) >= 201
    sizes = _sizes(dep)
    over = {n: s for n, s in sizes.items() if s > LIMIT}
    assert not over, f"inline policies over IAM's {LIMIT} characters: {over}"
    # the model's own estimate (the check run at model time) is never below the real size
    estimate = policies.policy_sizes(dep)
    for f in dep.all_functions:
        assert estimate[f.role.name] >= sizes[f.name], f.name
    # the size no longer grows with the function count: the largest policy is the same at 20
    small = appgraph.build(load_app(make(tmp_path / "small", 20, dep.app)), "aws")
    assert max(_sizes(small).values()) == max(sizes.values())


def test_oversized_policy_is_one_line_naming_the_role(tmp_path):
    """The error handler's policy as it was rendered before (every function by name) is 14 k
    characters at 200 functions: the model-time check names the role and the limit."""
    dep = appgraph.build(load_app(chain(tmp_path / "c", 200)), "aws")
    dep.error_handler.role.invoke = [f.name for f in dep.functions]
    with pytest.raises(ValueError) as e:
        policies.check_policy_sizes(dep, "unumctl.yaml")
    msg = str(e.value)
    assert "\n" not in msg and "'chain200-dev_UnumErrorHandler-" in msg and "10240" in msg and \
        "reference_iam-quotas" in msg


def test_oversized_integration_statements_refused_at_model_time(tmp_path):
    """A function whose integration Tasks alone exceed the limit: `build` refuses the app."""
    from unumctl_testing.apps import make_sfn_app
    states = {f"P{i:03d}": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish",
                            "Parameters": {"TopicArn": f"arn:aws:sns:us-east-1:123456789012:topic-number-{i:03d}",
                                           "Message": "x"},
                            "Next": f"P{i + 1:03d}"} for i in range(150)}
    states["P149"].pop("Next")
    states["P149"]["End"] = True
    machine = {"StartAt": "Echo", "States": {
        "Echo": {"Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Echo", "Next": "P000"},
        **states}}
    app = load_app(make_sfn_app(tmp_path / "big", machine, {"Echo": ECHO}, "big-sfn"))
    with pytest.raises(AppError, match=r"IAM role 'big-sfn-dev_.*-role' would be about \d+ characters, over IAM's 10240"):
        appgraph.build(app, "aws")


def test_function_pattern_is_exact_to_the_app():
    """`shop-dev_*` grants every function of stage `dev` of app `shop` and none of `shop-eu`
    or `sho`, whose names start with the same letters, nor of another stage of `shop` or of
    app `shop-dev` (IAM's `*` and `?` matching, unumctl_testing.aws.iam)."""
    arn = "arn:aws:lambda:us-east-1:123456789012:function:"
    policy = {"Statement": [{"Effect": "Allow", "Action": ["lambda:InvokeFunction"],
                             "Resource": [arn + names.function_pattern("shop", "dev")]}]}
    for fn in ("Cart", "UnumErrorHandler", "eu_Cart"):
        assert allowed(policy, "lambda:InvokeFunction", arn + names.function("shop", "dev", fn))
    for app in ("shop-eu", "sho", "shop2", "shopping"):
        assert not allowed(policy, "lambda:InvokeFunction", arn + names.function(app, "dev", "Cart")), app
    for app, stage in (("shop", "prod"), ("shop", "devx"), ("shop-dev", "dev")):
        assert not allowed(policy, "lambda:InvokeFunction", arn + names.function(app, stage, "Cart")), (app, stage)


def _render_and_plan(make, tmp_path, moto_url, monkeypatch, n=200):
    app_dir = make(tmp_path / make.__name__, n)
    for k, v in aws_env(moto_url).items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_LAMBDA", raising=False)
    target = AwsTarget(load_app(app_dir))
    t0 = time.monotonic()
    target.render()
    t1 = time.monotonic()
    plan = target.plan()
    t2 = time.monotonic()
    print(f"{make.__name__} {n}: render {t1 - t0:.1f} s, plan {t2 - t1:.1f} s (render included)")
    return target, plan


@pytest.mark.aws_long  # render + plan of 201 functions: 2.7 min on a loaded 2-core machine
def test_200_function_chain_plans_on_moto(tmp_path, tf_env, moto_without_iam, monkeypatch):
    target, plan = _render_and_plan(chain, tmp_path, moto_without_iam, monkeypatch)
    fns = [a for a in plan["resources"]["add"] if a.endswith(".aws_lambda_function.this")]
    assert len(fns) == 201 and plan["change"] == plan["destroy"] == 0
    text = (target.workdir / "main.tf").read_text()
    assert 'invoke_arns            = ["${local.function_arn_prefix}chain200-dev_*"]' in text  # the error handler


@pytest.mark.aws_long  # a 200-function apply on moto: over 20 min here (each CreateFunction about 50 s; timings printed)
@pytest.mark.parametrize("make", [chain, fanout], ids=["chain", "fanout"])
def test_200_function_app_applies_on_moto(make, tmp_path, tf_env, moto_without_iam, monkeypatch):
    target, plan = _render_and_plan(make, tmp_path, moto_without_iam, monkeypatch)
    t0 = time.monotonic()
    target.apply(yes=True)
    t1 = time.monotonic()
    iam = boto3.client("iam")
    for role in (target.model.error_handler.role.name,
                 target.model.function('F000' if make is chain else 'Fan').role.name):
        doc = iam.get_role_policy(RoleName=role, PolicyName="unum")["PolicyDocument"]
        doc = doc if isinstance(doc, str) else json.dumps(doc)
        assert len("".join(doc.split())) <= LIMIT, role
    target.destroy(yes=True)
    print(f"{make.__name__} 200: apply {t1 - t0:.1f} s, destroy {time.monotonic() - t1:.1f} s")
