"""The one deployment model (unumctl/deploy/, issue 11 item 1): built once per target from the
app and the typed `clouds.*` sections, one precedence rule (flag > environment > manifest >
default), every name from deploy/names.py, renderers that only format the model, and no
target name compared outside the target modules and the model."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from unumctl_testing.apps import make_app
from unumctl.deploy import names
from unumctl.deploy.appgraph import build
from unumctl.deploy.models import Ref
from unumctl.aws import names as aws_names
from unumctl.aws.settings import AwsSection
from unumctl.gcp.model import params, topics
from unumctl.gcp.settings import GcpSection
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl.aws.render import render_main

REPO = Path(__file__).resolve().parents[3]
ECHO = "def handler(event, context):\n    return event\n"


def _app(tmp_path: Path, clouds: dict | None = None, name: str = "model-app"):
    root = make_app(tmp_path / "app", name, {
        "Split": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}}, ECHO),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}}, ECHO),
        "Join": ({}, ECHO)})
    if clouds is not None:
        doc = yaml.safe_load((root / "unumctl.yaml").read_text())
        doc["clouds"] = clouds
        (root / "unumctl.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_app(root)


# --- one precedence rule -----------------------------------------------------------------

def test_precedence_flag_then_environment_then_manifest_then_default():
    aws = AwsSection.model_validate({"region": "eu-west-1", "profile": "m"})
    env = {"AWS_REGION": "us-east-2", "AWS_PROFILE": "e"}
    assert aws.resolved(env, region="ap-south-1").region == "ap-south-1"  # flag
    assert aws.resolved(env).region == "us-east-2"                        # environment
    assert aws.resolved({"AWS_DEFAULT_REGION": "us-west-1"}).region == "us-west-1"
    assert aws.resolved({}).region == "eu-west-1"                         # manifest
    assert AwsSection().resolved({}).region is None                       # default
    assert aws.resolved(env, profile=None).profile == "e"                 # None = flag not given
    gcp = GcpSection.model_validate({"project": "from-manifest"})
    assert gcp.resolved({"CLOUDSDK_CORE_PROJECT": "env"}, project="flag").project == "flag"
    assert gcp.resolved({"CLOUDSDK_CORE_PROJECT": "env"}).project == "env"
    assert gcp.resolved({}).project == "from-manifest"
    assert gcp.resolved({}).region == "us-central1"
    assert gcp.resolved({"GOOGLE_CLOUD_REGION": "europe-west1"}).region == "europe-west1"


def test_endpoints_follow_the_same_rule_and_set_path_style():
    aws = AwsSection.model_validate({"endpoints": {"s3": "http://127.0.0.1:1", "lambda": "http://127.0.0.1:2"}})
    r = aws.resolved({"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:9"})
    assert r.endpoints == {"s3": "http://127.0.0.1:9", "lambda": "http://127.0.0.1:2"}
    assert r.s3_use_path_style is True
    assert AwsSection().resolved({}).s3_use_path_style is False
    assert AwsSection(s3_use_path_style=False).resolved({"AWS_ENDPOINT_URL": "http://x"}).s3_use_path_style is False


@pytest.mark.parametrize("clouds, field", [
    ({"aws": {"point_in_time_recovery": "no"}}, "clouds.aws.point_in_time_recovery: 'no' must be true or false"),
    ({"aws": {"max_retry_attempts": 3}}, "clouds.aws.max_retry_attempts: 3 must be 0, 1 or 2"),
    ({"aws": {"architecture": "x86"}}, "clouds.aws.architecture: 'x86' must be one of x86_64, arm64"),
    ({"aws": {"regoin": "eu-west-1"}}, "clouds.aws.regoin: unknown key; did you mean 'region'?"),
    ({"gcp": {"max_instances": "10"}}, "clouds.gcp.max_instances: '10' must be an integer"),
    ({"gcp": {"create_database": 1}}, "clouds.gcp.create_database: '1' must be true or false"),
    ({"azure": {}}, "clouds.azure: unknown key (valid keys: aws, gcp)"),
])
def test_typed_sections_fail_on_load_with_one_line(tmp_path, clouds, field):
    with pytest.raises(AppError) as err:
        _app(tmp_path, clouds)
    msg = str(err.value)
    assert f"unumctl.yaml: {field}" in msg and "\n" not in msg


# --- the model --------------------------------------------------------------------------

def test_every_target_has_the_same_functions_and_successors(tmp_path):
    app = _app(tmp_path, {"aws": {}, "gcp": {}})
    deps = {c: build(app, c, project="p") for c in ("aws", "gcp", "local")}
    expected = {"Split": ["Work"], "Work": ["Join"], "Join": []}
    for cloud, dep in deps.items():
        assert {f.unum_name: f.successors for f in dep.functions} == expected, cloud
        assert dep.entry_name == "Split"
        assert all(f.archive.path is None for f in dep.all_functions)  # not packaged
        assert dep.datastore.name == {"local": names.LOCAL_DATASTORE, "aws": "unum-model-app-dev",
                                      "gcp": "unum-model-app-dev-us-central1"}[cloud]
    aws, gcp = deps["aws"], deps["gcp"]
    assert aws.entry == "model-app-dev_Split" and aws.error_handler.name == "model-app-dev_UnumErrorHandler"
    assert aws.error_handler.successors == ["Join", "Split", "Work"]
    assert [t.name for t in topics(gcp)] == ["model-app-dev-us-central1-Join", "model-app-dev-us-central1-Split",
                                            "model-app-dev-us-central1-Work", "model-app-dev-us-central1-dead-letter"]
    assert gcp.functions[0].environment["UNUM_COLLECTION"] == Ref("collection")
    assert params(gcp).project == "p"


def test_lambda_name_limit_is_checked_by_the_model(tmp_path):
    long_fn = "Start" + "x" * 25
    root = make_app(tmp_path / "long", "x" * 40, {long_fn: ({"Start": True}, ECHO)})
    app = load_app(root)
    assert len(build(app, "gcp").functions[0].name) <= 63  # GCP shortens with a hash tail
    with pytest.raises(AppError, match=f"functions.{long_fn}: deployed name .* longer than Lambda's 64"):
        build(app, "aws")


def test_iam_role_names_fit_iams_limit_and_stay_distinct(tmp_path):
    """A Lambda name of up to 64 characters is accepted by Lambda, but the role
    `<name>-<region>-role` can pass IAM's 64 (CreateRole would fail at apply): past the limit
    the model shortens it with a hash of the full name, so roles of functions that share a
    long start stay distinct; a short one is written out whole."""
    fn = "S" * 20
    root = make_app(tmp_path / "role", "a" * 40, {fn: ({"Start": True}, ECHO)})  # 40 + 5 + 20 = 65
    with pytest.raises(AppError, match="deployed name .* longer than Lambda's 64"):
        build(load_app(root), "aws")
    root = make_app(tmp_path / "role2", "a" * 36, {fn: ({"Start": True}, ECHO)})  # 36 + 5 + 20 = 61
    dep = build(load_app(root), "aws", region="ap-southeast-4")
    role = dep.functions[0].role.name
    assert len(role) <= 64 and role.endswith("-role") and role.startswith("a" * 36 + "-dev_"), role
    other = aws_names.role(dep.functions[0].name[:-1] + "T", "ap-southeast-4")  # same long start
    assert len(other) <= 64 and other != role
    short = build(load_app(make_app(tmp_path / "s", "abc", {"F": ({"Start": True}, ECHO)})), "aws", region="eu-west-1")
    assert short.functions[0].role.name == "abc-dev_F-eu-west-1-role"


def test_aws_template_renders_the_models_environment(tmp_path):
    """main.tf's environments come from the model: a variable added to one function appears
    on that function only; the shared ones go to local.environment."""
    dep = build(_app(tmp_path, {"aws": {}}), "aws")
    for f in dep.all_functions:
        f.archive.path, f.archive.sha256 = tmp_path / f"{f.unum_name}.zip", "0" * 64
    dep.function("Work").environment["UNUM_EXTRA"] = "x"
    text = render_main(dep, tmp_path)
    assert 'UNUM_EXTRA = "x"' in text
    assert text.count("UNUM_EXTRA") == 1
    assert "UNUM_TABLE           = module.datastore.table_name" in text
    assert 'UNUM_FUNCTION_PREFIX = "model-app-dev_"' in text


# --- grep rules -------------------------------------------------------------------------

COMPARED = re.compile(r"""(==|!=|\bin\b)\s*\(?\s*["'](aws|gcp|local)["']|["'](aws|gcp|local)["']\s*(==|!=|\bin\b|not\s+in)""")
ALLOWED = ("unumctl/aws/", "unumctl/gcp/", "unumctl/local/", "unumctl/deploy/")


def test_no_target_name_compared_outside_targets_and_model():
    found = [f"{p.relative_to(REPO)}:{i}" for base in ("unumctl", "runtime") for p in (REPO / base).rglob("*.py")
             if not str(p.relative_to(REPO)).startswith(ALLOWED)
             for i, line in enumerate(p.read_text().splitlines(), 1) if COMPARED.search(line)]
    assert found == []


def test_store_name_formatted_once():
    found = [str(p.relative_to(REPO)) for base in ("unumctl", "runtime") for p in (REPO / base).rglob("*.py")
             if re.search(r"""f["']unum-\{""", p.read_text())]
    assert found == ["runtime/names.py"]
