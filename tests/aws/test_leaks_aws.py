"""The reported injection end to end on AWS (issue 11, item 7): a `clouds.aws.backend` that
used to smuggle a `terraform_data` resource with a `local-exec` provisioner into main.tf (and
pass `terraform validate`) now either is refused naming the field or renders as a plain
string, checked with the real terraform binary and hashicorp/aws provider."""

from __future__ import annotations

import pytest
import yaml

from unumctl.aws.target import AwsTarget
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app
from unumctl.terraform import TerraformRunner

from unumctl_testing.apps import copy_example, example_dirs
from tests.unumctl.test_build_inputs import INJECTION, TEMPLATE_INJECTION

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")
EXAMPLE = next(p for p in example_dirs() if p.name == "wordcount")


def _with_backend(tmp_path, backend):
    root = copy_example(EXAMPLE, tmp_path / "wordcount")
    mpath = root / "unumctl.yaml"
    doc = yaml.safe_load(mpath.read_text())
    doc.setdefault("clouds", {})["aws"] = {"region": "us-east-1", "backend": backend}
    mpath.write_text(yaml.safe_dump(doc, sort_keys=False))
    return AwsTarget(load_app(root))


def test_backend_value_injection_validates_as_a_string(tmp_path, tf_cli_config, monkeypatch):
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", str(tf_cli_config))
    target = _with_backend(tmp_path, {"type": "local", "config": {
        "path": "state/" + TEMPLATE_INJECTION.replace("\b", "").replace("\x7f", "") + ".tfstate",
        "workspace_dir": INJECTION}})
    target.render()
    main = (target.workdir / "main.tf").read_text()
    doc = hcl2.loads(main)
    assert "resource" not in doc  # the text is there, as a string value of the backend
    assert 'resource \\"terraform_data\\"' in main
    runner = TerraformRunner(target.workdir, {"TF_CLI_CONFIG_FILE": str(tf_cli_config)})
    assert runner.fmt_check() == []
    code, out, err = runner._quiet("init", "-input=false", "-backend=false")
    assert code == 0, err
    assert runner.validate()["valid"]


def test_backend_type_injection_is_refused(tmp_path):
    """The payload of the report: before, it rendered a `terraform_data` resource whose
    provisioner runs `command` on apply, and `terraform init -backend=false` + `validate`
    both succeeded on it."""
    with pytest.raises(AppError, match=r"unumctl.yaml: clouds.aws.backend.type: .* is not a Terraform backend"):
        _with_backend(tmp_path, {"type": 'local" {}\n}\nresource "terraform_data" "pwn" {\n'
                                 '  provisioner "local-exec',
                      "config": {"command": "touch /tmp/pwned"}})  # the manifest does not load
    assert not list((tmp_path / "wordcount" / ".unum" / "terraform").rglob("main.tf"))
