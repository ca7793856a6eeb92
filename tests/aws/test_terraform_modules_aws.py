"""The AWS modules' examples (terraform/modules/aws-*/examples/*) pass `terraform validate`
with the real hashicorp/aws provider from the filesystem mirror, and the modules' validation
blocks reject what unumctl's Python rejects (memory, timeout, retries, architecture, log
retention) while accepting the boundary values. Skips only when terraform or the provider
mirror is absent (tests/aws/conftest.py)."""

from __future__ import annotations

import re
import shutil

import pytest

from unumctl.terraform import TerraformRunner

from unumctl_testing.apps import ROOT

MODULES = ROOT / "terraform" / "modules"
AWS_EXAMPLES = sorted(p.parent for p in MODULES.glob("aws-*/examples/*/main.tf"))


def _workdir(example, tmp_path):
    """A copy of all modules (examples refer to sibling modules by relative path)."""
    shutil.copytree(MODULES, tmp_path / "modules")
    return tmp_path / "modules" / example.relative_to(MODULES)


def test_every_aws_module_has_an_example():
    assert {p.parts[-3] for p in AWS_EXAMPLES} == {"aws-unum-datastore", "aws-unum-function"}


@pytest.mark.parametrize("example", AWS_EXAMPLES, ids=lambda p: p.parts[-3])
def test_example_validates(example, tmp_path, tf_cli_config):
    runner = TerraformRunner(_workdir(example, tmp_path), {"TF_CLI_CONFIG_FILE": str(tf_cli_config)},
                             stream=False)
    runner.init()
    assert runner.validate()["valid"]


# (argument line in the example, replacement, error_message of the validation, or None: valid)
CASES = [
    ('memory_size            = 256', 'memory_size            = 127', "from 128 to 10240"),
    ('memory_size            = 256', 'memory_size            = 10241', "from 128 to 10240"),
    ('memory_size            = 256', 'memory_size            = 10240', None),
    ('timeout                = 30', 'timeout                = 0', "from 1 to 900"),
    ('timeout                = 30', 'timeout                = 901', "from 1 to 900"),
    ('timeout                = 30', 'timeout                = 900', None),
    ('maximum_retry_attempts = 1', 'maximum_retry_attempts = 3', "must be 0, 1 or 2"),
    ('maximum_retry_attempts = 1', 'maximum_retry_attempts = 0', None),
    ('architecture           = "arm64"', 'architecture           = "x86"', "x86_64 or arm64"),
    ('log_retention_days     = 14', 'log_retention_days     = 13', "CloudWatch Logs' values"),
    ('runtime                = "python3.13"', 'runtime                = "nodejs20.x"', "Python 3 runtime"),
    ('function_name          = "demo-Hello"', 'function_name          = "demo Hello"', "Lambda naming rules"),
    ('reserved_concurrent_executions = 5', 'reserved_concurrent_executions = -2', "-1 \\(unreserved\\)"),
    ('reserved_concurrent_executions = 5', 'reserved_concurrent_executions = 0', None),
]


def test_validation_blocks_reject_what_unumctl_rejects(tmp_path, tf_cli_config):
    """Every case is a copy of the example's module call, in a file of its own
    (case_NN.tf), so one `terraform validate` (one provider start, not one per case) checks
    them all: each error case gets its message in its file, each valid case nothing."""
    wd = _workdir(MODULES / "aws-unum-function/examples/basic", tmp_path)
    runner = TerraformRunner(wd, {"TF_CLI_CONFIG_FILE": str(tf_cli_config)}, stream=False)
    original = (wd / "main.tf").read_text()
    start = original.index('module "hello" {')
    call = original[start:original.index("\n}\n", start) + 3]
    for i, (old, new, _) in enumerate(CASES):
        assert old in call, old
        (wd / f"case_{i:02d}.tf").write_text(call.replace('module "hello"', f'module "case_{i:02d}"', 1)
                                            .replace(old, new, 1))
    runner.init()
    by_file: dict[str, list[str]] = {}
    for d in runner.validate_json().get("diagnostics", []):
        by_file.setdefault(d.get("range", {}).get("filename", ""), []).append(
            f"{d['summary']}: {d.get('detail', '')}")
    assert set(by_file) <= {f"case_{i:02d}.tf" for i in range(len(CASES))}, by_file
    for i, (_, new, error) in enumerate(CASES):
        found = by_file.get(f"case_{i:02d}.tf", [])
        if error is None:
            assert found == [], (new, found)
        else:
            assert any(re.search(error, f) for f in found), (new, error, found)


def test_rendered_modules_hold_exactly_the_module_tf_files(tmp_path, monkeypatch):
    """A re-render removes a module file that no longer exists in terraform/modules (a stale
    copy would declare its variables or resources twice) and copies no README/examples."""
    from unumctl.aws.target import AwsTarget
    from unumctl.pipeline import load as load_app

    from unumctl_testing.apps import copy_example, example_dirs

    monkeypatch.setenv("AWS_REGION", "us-east-1")
    target = AwsTarget(load_app(copy_example(example_dirs()[0], tmp_path / "app")))
    target.render()
    stale = target.workdir / "modules" / "aws-unum-function" / "old_main.tf"
    stale.write_text('variable "memory_size" {}\n')
    target.render()
    assert not stale.exists()
    for name in ("aws-unum-datastore", "aws-unum-function"):
        copied = sorted(p.name for p in (target.workdir / "modules" / name).iterdir())
        assert copied == sorted(p.name for p in (MODULES / name).glob("*.tf"))
