"""unumctl/terraform.py with the real terraform binary on a module of `terraform_data`
resources (Terraform's built-in provider: nothing to download, runs offline in seconds):
init/plan/apply/destroy stream Terraform's lines as they come, `plan` lists the addresses to
add, change, destroy and replace (from `terraform show -json` of the saved plan, checked
against Terraform's own count line), and `destroy` returns what it destroyed. The clouds'
cycles are in tests/aws/test_terraform_aws.py (moto) and tests/gcp/test_terraform_gcp.py."""

from __future__ import annotations

import shutil

import pytest

from unumctl.terraform import PLAN_FILE, PlanSummary, TerraformRunner, plan_lines

pytest.importorskip("python_terraform", reason="python-terraform not installed (pip install -e '.[aws]')")
pytestmark = pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform binary not on PATH")

MAIN = """
resource "terraform_data" "keep" {
  input = "k"
}

resource "terraform_data" "upd" {
  input = "%(upd)s"
}

resource "terraform_data" "repl" {
  triggers_replace = ["%(repl)s"]
}
%(extra)s
"""


def _write(d, upd="a", repl="a", extra=True):
    gone = 'resource "terraform_data" "gone" {\n  input = 1\n}\n'
    (d / "main.tf").write_text(MAIN % {"upd": upd, "repl": repl, "extra": gone if extra else ""})


def test_plan_addresses_streaming_and_destroy_report(tmp_path, monkeypatch):
    monkeypatch.setenv("TF_CLI_CONFIG_FILE", "")  # no provider to install: no CLI config needed
    lines: list[str] = []
    _write(tmp_path)
    tf = TerraformRunner(tmp_path, {"TF_IN_AUTOMATION": "1"}, progress=lines.append)
    tf.init()
    assert any("Terraform has been successfully initialized" in ln for ln in lines)
    lines.clear()
    first = tf.plan()
    assert any(ln.startswith("Plan: 4 to add") for ln in lines)  # streamed, not only returned
    assert first.resources["add"] == ["terraform_data.gone", "terraform_data.keep", "terraform_data.repl",
                                      "terraform_data.upd"]
    assert (first.add, first.change, first.destroy) == (4, 0, 0)
    lines.clear()
    tf.apply(PLAN_FILE)
    assert any("Creation complete" in ln for ln in lines)
    # change one, replace one, destroy one, keep one
    _write(tmp_path, upd="b", repl="b", extra=False)
    second = tf.plan().as_dict()
    assert second["resources"] == {"add": ["terraform_data.repl"], "change": ["terraform_data.upd"],
                                   "destroy": ["terraform_data.gone", "terraform_data.repl"],
                                   "replace": ["terraform_data.repl"]}
    assert (second["add"], second["change"], second["destroy"], second["changes"]) == (1, 1, 2, True)
    assert plan_lines(second) == ["  ~ terraform_data.upd", "  - terraform_data.gone", "-/+ terraform_data.repl",
                                  "Plan: 1 to add, 1 to change, 2 to destroy."]
    assert tf.state_list() == ["terraform_data.gone", "terraform_data.keep", "terraform_data.repl",
                               "terraform_data.upd"]
    lines.clear()
    assert tf.destroy() == ["terraform_data.gone", "terraform_data.keep", "terraform_data.repl",
                            "terraform_data.upd"]
    assert any("Destruction complete" in ln for ln in lines)
    assert tf.state_list() == [] and tf.destroy() == []


def test_summary_of_plan_json_ignores_data_sources_and_no_ops():
    doc = {"resource_changes": [
        {"address": "data.x.y", "mode": "data", "change": {"actions": ["read"]}},
        {"address": "a.b", "mode": "managed", "change": {"actions": ["no-op"]}},
        {"address": "module.m.a.c", "mode": "managed", "change": {"actions": ["create", "delete"]}},
        {"address": "a.d", "mode": "managed", "change": {"actions": ["delete"]}}]}
    s = PlanSummary.from_plan_json(doc)
    assert s.as_dict() == {"add": 1, "change": 0, "destroy": 2, "changes": True,
                           "resources": {"add": ["module.m.a.c"], "change": [], "destroy": ["a.d", "module.m.a.c"],
                                         "replace": ["module.m.a.c"]}}
    assert PlanSummary.from_plan_json({}).as_dict()["changes"] is False
