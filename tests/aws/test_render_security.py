"""The security options of the AWS deployment (issue 11 items 6 and 7, docs/security.md):
`clouds.aws.reserved_concurrency` and `clouds.aws.kms_key_arn` are checked with a one-line
error naming the field and reach every function and the datastore in the rendered main.tf;
the error handler's on-failure destination is the app's SQS queue."""

from __future__ import annotations

import re

import pytest
import yaml

from unumctl.pipeline import deployment
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl.aws.render import render_main

from unumctl_testing.apps import make_app
from tests.unumctl.test_cli import cli_process as cli, one_error  # the cloud tests run the CLI as a child process

KEY = "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"


@pytest.fixture
def app(tmp_path):
    return make_app(tmp_path / "sec", "sec-app", {
        "A": ({"Start": True, "Next": {"Name": "B"}}, "def handler(e, c):\n    return e\n"),
        "B": ({}, "def handler(e, c):\n    return e\n")})


def _set_aws(app, cfg: dict) -> None:
    path = app / "unumctl.yaml"
    doc = yaml.safe_load(path.read_text())
    doc["clouds"] = {"aws": cfg}
    path.write_text(yaml.safe_dump(doc))


def _modules(text: str) -> dict[str, str]:
    return dict(re.findall(r'^module "([^"]+)" \{\n(.*?)^\}', text, re.S | re.M))


def test_defaults_reserve_nothing_use_aws_keys_and_route_the_error_handler_to_the_queue(app, tmp_path):
    dep = deployment(load_app(app), "aws")
    assert dep.params.reserved_concurrency == -1 and dep.params.kms_key_arn is None
    mods = _modules(render_main(dep, tmp_path))
    assert set(mods) == {"datastore", "fn_A", "fn_B", "error_handler"}
    for name in ("fn_A", "fn_B", "error_handler"):
        assert re.search(r"^\s+reserved_concurrent_executions = -1$", mods[name], re.M), name
        assert re.search(r"^\s+kms_key_arn\s+= null$", mods[name], re.M), name
    assert re.search(r"on_failure_arn\s+= module.datastore.failure_queue_arn$", mods["error_handler"], re.M)
    assert re.search(r"on_failure_arn\s+= module.error_handler.arn$", mods["fn_A"], re.M)
    assert re.search(r"^\s+kms_key_arn\s+= null$", mods["datastore"], re.M)


def test_settings_reach_every_function_and_the_datastore(app, tmp_path):
    _set_aws(app, {"reserved_concurrency": 5, "kms_key_arn": KEY})
    dep = deployment(load_app(app), "aws")
    mods = _modules(render_main(dep, tmp_path))
    for name in ("fn_A", "fn_B", "error_handler"):
        assert re.search(r"^\s+reserved_concurrent_executions = 5$", mods[name], re.M), name
        assert f'= "{KEY}"' in mods[name], name
    assert f'kms_key_arn            = "{KEY}"' in mods["datastore"]


@pytest.mark.parametrize("cfg, message", [
    ({"reserved_concurrency": -2}, "clouds.aws.reserved_concurrency: -2 must be -1 (unreserved) or >= 0"),
    ({"reserved_concurrency": "10"}, "clouds.aws.reserved_concurrency: '10' must be an integer"),
    ({"reserved_concurrency": True}, "clouds.aws.reserved_concurrency: 'True' must be an integer"),
    ({"kms_key_arn": "alias/mine"}, "clouds.aws.kms_key_arn: 'alias/mine' must be a KMS key ARN"),
    ({"kms_key_arn": KEY + '" } resource "x" "y" {'}, "clouds.aws.kms_key_arn: "),
    ({"kms_key_arn": "arn:aws:kms:eu-west-1:123456789012:alias/mine"}, "must be a KMS key ARN"),
    ({"kms_key_arn": 12}, "clouds.aws.kms_key_arn: '12' must be a KMS key ARN"),
])
def test_bad_values_name_the_field(app, cfg, message):
    _set_aws(app, cfg)
    with pytest.raises(AppError, match=re.escape(message)):
        deployment(load_app(app), "aws")
    code, _, err = cli("validate", str(app))  # validate says so too, without building
    assert code == 2 and message in one_error(err)
