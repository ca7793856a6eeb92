"""The rendered GCP Terraform (root module and copied modules) of every example checked
against the hashicorp/google schema snapshot it is pinned to (unumctl/gcp/checks/tf_schema.py,
unumctl/gcp/checks/schema/google-<version>.json, made by tools/gcp_schema_snapshot.py), and the
check shown to catch a misspelled attribute, a missing required one, a misplaced block
and the other classes of error, each on a modified copy of a rendered module (issue 11
item 5)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from unumctl.pipeline import load as load_app

from unumctl_testing.apps import ROOT, example_dirs

pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")

from unumctl.gcp.checks import tf_schema

FUNCTION_TF = Path("modules/gcp-unum-function/main.tf")
DATASTORE_TF = Path("modules/gcp-unum-datastore/main.tf")


@pytest.fixture(scope="module")
def schema():
    from unumctl.gcp.render import PROVIDER_VERSION

    return tf_schema.load_schema(PROVIDER_VERSION)


@pytest.fixture(scope="module")
def rendered():
    from unumctl.pipeline import deployment
    from unumctl.gcp.render import render

    out = {}
    for ex in example_dirs():
        app = load_app(ex)
        d, _ = render(app, deployment(app, "gcp", project="demo-project", region="europe-west1"))
        out[ex.name] = d
    return out


def test_snapshot_is_the_pinned_version_and_covers_every_type_used(schema):
    """The root module pins exactly the version the snapshot describes, and the snapshot
    holds every google resource type the template and modules declare (a new type needs
    `python tools/gcp_schema_snapshot.py`)."""
    from tools.gcp_schema_snapshot import used_resource_types
    from unumctl.gcp.render import PROVIDER_VERSION

    assert schema["version"] == PROVIDER_VERSION
    assert set(used_resource_types()) <= set(schema["resources"])
    # the google-beta resources (provider = google-beta) from the google-beta snapshot
    assert schema["beta"]["provider"] == "hashicorp/google-beta" and schema["beta"]["version"] == PROVIDER_VERSION
    assert used_resource_types(beta=True) == ["google_project_service_identity"]
    assert set(used_resource_types(beta=True)) <= set(schema["beta"]["resources"])


@pytest.mark.parametrize("example", [p.name for p in example_dirs()])
def test_example_terraform_matches_schema(example, rendered, schema):
    problems, seen = tf_schema.check_dir(rendered[example], schema)
    assert problems == []
    assert {"google_cloudfunctions2_function", "google_pubsub_topic", "google_storage_bucket"} <= seen
    with open(rendered[example] / "main.tf") as fh:
        tf = tf_schema.hcl2.load(fh)["terraform"][0]
    providers = tf["required_providers"]
    google = (providers[0] if isinstance(providers, list) else providers)["google"]
    assert google["version"] == f'"{schema["version"]}"'  # the exact pin the snapshot describes


@pytest.mark.parametrize("module", [p.name for p in sorted((ROOT / "terraform" / "modules").glob("gcp-*"))])
def test_module_sources_and_their_examples_match_schema(module, schema):
    """The modules as committed, with their examples/ (module calls checked against the
    module's variables), not only the copies the renderer makes."""
    problems, seen = tf_schema.check_dir(ROOT / "terraform" / "modules" / module, schema)
    assert problems == []
    assert seen


def test_every_snapshot_type_is_exercised(rendered, schema):
    seen = set()
    for d in rendered.values():
        seen |= tf_schema.check_dir(d, schema)[1]
    assert seen == set(schema["resources"]) | set(schema["beta"]["resources"])


@pytest.fixture
def copy(rendered, tmp_path):
    """A fresh copy of one example's rendered directory, and an editor of its files."""
    src = rendered[min(rendered)]
    dst = tmp_path / "tf"
    shutil.copytree(src, dst)

    def edit(rel: Path, old: str, new: str, count: int = 1) -> Path:
        path = dst / rel
        text = path.read_text()
        assert len(re.findall(old, text, re.MULTILINE)) >= 1, f"{old!r} not in {rel}: the module changed"
        path.write_text(re.sub(old, new, text, count=count, flags=re.MULTILINE))
        return path

    return dst, edit


def _problems(path: Path, schema) -> list[str]:
    return tf_schema.check_file(path, schema)[0]


def test_copy_passes_before_editing(copy, schema):
    d, _ = copy
    assert tf_schema.check_dir(d, schema)[0] == []


def test_catches_misspelled_attribute(copy, schema):
    _, edit = copy
    p = edit(FUNCTION_TF, r"max_instance_count(\s*)=", r"max_instances_count\1=")
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "google_cloudfunctions2_function.this.service_config.max_instances_count" in problems[0]
    assert "unknown attribute 'max_instances_count'" in problems[0]


def test_catches_misspelled_attribute_three_blocks_deep(copy, schema):
    _, edit = copy
    p = edit(FUNCTION_TF, r"^(\s*)object(\s*)= google_storage_bucket_object", r"\1objekt\2= google_storage_bucket_object")
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "build_config.source.storage_source.objekt: unknown attribute" in problems[0]


def test_catches_missing_required_attribute(copy, schema):
    _, edit = copy
    p = edit(DATASTORE_TF, r"^\s*collection\s*=.*\n", "")
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "google_firestore_field.ttl: required attribute 'collection' is missing" in problems[0]


def test_catches_missing_required_attribute_in_nested_block(copy, schema):
    _, edit = copy
    p = edit(DATASTORE_TF, r'^\s*ttl\s*=\s*""\n', "")
    problems = _problems(p, schema)
    assert problems == [(f"{p}:google_pubsub_subscription.dead_letter.expiration_policy: "
                         "required attribute 'ttl' is missing")]


def test_catches_attribute_written_as_block(copy, schema):
    _, edit = copy
    p = edit(FUNCTION_TF, r"^(\s*)environment_variables\s*=\s*var\.environment",
             r'\1environment_variables {\n\1  A = "b"\n\1}')
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "service_config.environment_variables: 'environment_variables' is an attribute, written as a block" \
        in problems[0]


def test_catches_block_written_as_attribute(copy, schema):
    _, edit = copy
    p = edit(DATASTORE_TF, r"expiration_policy \{", "expiration_policy = {")
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "google_pubsub_subscription.dead_letter.expiration_policy: 'expiration_policy' is a block, " \
           "written as an attribute" in problems[0]


def test_catches_computed_only_attribute_set(copy, schema):
    _, edit = copy
    p = edit(DATASTORE_TF, r'^(\s*)type(\s*)= "FIRESTORE_NATIVE"', r'\1type\2= "FIRESTORE_NATIVE"\n\1uid = "x"')
    problems = _problems(p, schema)
    assert problems == [f"{p}:google_firestore_database.this.uid: 'uid' is computed-only and cannot be set"]


def test_catches_unknown_resource_type(copy, schema):
    _, edit = copy
    p = edit(FUNCTION_TF, r'resource "google_pubsub_topic" "this"', 'resource "google_pubsub_topics" "this"')
    problems = _problems(p, schema)
    assert len(problems) == 1
    assert "unknown resource type 'google_pubsub_topics'" in problems[0]


def test_catches_single_block_repeated(copy, schema):
    _, edit = copy
    p = edit(DATASTORE_TF, r"^(\s*)ttl_config \{\}", r"\1ttl_config {}\n\1ttl_config {}")
    problems = _problems(p, schema)
    assert problems == [(f"{p}:google_firestore_field.ttl.ttl_config: at most one 'ttl_config' block "
                         "is allowed, found 2")]


def test_meta_arguments_and_dynamic_blocks(tmp_path, schema):
    """count/for_each/depends_on/provider/lifecycle pass untouched; a `dynamic` block is
    checked as the block it generates (its content), and meta-arguments in the wrong form fail."""
    good = tmp_path / "good.tf"
    good.write_text('''
resource "google_storage_bucket" "b" {
  count    = 2
  provider = google
  name     = "b-${count.index}"
  location = "EU"
  dynamic "lifecycle_rule" {
    for_each = var.rules
    content {
      condition {
        age = lifecycle_rule.value
      }
      action {
        type = "Delete"
      }
    }
  }
  lifecycle {
    prevent_destroy = true
  }
  depends_on = [google_pubsub_topic.t]
}

resource "google_pubsub_topic" "t" {
  for_each = toset(["a"])
  name     = each.key
}

resource "random_id" "other_provider" {
  byte_length = 4
}
''')
    assert _problems(good, schema) == []
    bad = tmp_path / "bad.tf"
    bad.write_text(good.read_text().replace("age = lifecycle_rule.value", "agee = lifecycle_rule.value")
                   .replace("lifecycle {", "lifecycle = {").replace('type = "Delete"', ""))
    problems = _problems(bad, schema)
    assert len(problems) == 3, problems
    assert any("lifecycle_rule.condition.agee: unknown attribute" in p for p in problems)
    assert any("lifecycle_rule.action: required attribute 'type' is missing" in p for p in problems)
    assert any("meta-argument 'lifecycle' must be a block" in p for p in problems)


def test_unparsable_file_is_one_finding(tmp_path, schema):
    bad = tmp_path / "broken.tf"
    bad.write_text('resource "google_pubsub_topic" "t" {\n  name = \n')
    problems = _problems(bad, schema)
    assert len(problems) == 1 and "does not parse" in problems[0]


def test_catches_module_call_with_unknown_or_missing_variable(copy, schema):
    """Local module calls: a misspelled argument is both unknown and leaves a required
    variable (one without default) unset."""
    _, edit = copy
    p = edit(Path("main.tf"), r"^(\s*)service_account_id(\s*)=", r"\1service_acount_id\2=")
    problems = _problems(p, schema)
    assert len(problems) == 2, problems
    assert problems[0].endswith("service_acount_id: the module at './modules/gcp-unum-function' "
                                "declares no variable 'service_acount_id'")
    assert "required variable 'service_account_id' of './modules/gcp-unum-function' is not set" \
        in problems[1]


def test_catches_literal_of_the_wrong_type(copy, schema):
    _, edit = copy
    edit(DATASTORE_TF, r"^(\s*)ack_deadline_seconds(\s*)= 60", r'\1ack_deadline_seconds\2= "sixty"')
    p = edit(DATASTORE_TF, r'matches_prefix(\s*)= \["payloads/"\]', r'matches_prefix\1= "payloads/"')
    problems = _problems(p, schema)
    assert len(problems) == 2, problems
    assert "lifecycle_rule.condition.matches_prefix: expects a list (stringList), got a string" in problems[0]
    assert 'dead_letter.ack_deadline_seconds: expects a number, got the string "sixty"' in problems[1]


def test_catches_misspelled_provider_argument(copy, schema):
    _, edit = copy
    p = edit(Path("main.tf"), r"^(\s*)region(\s*)= var\.region", r"\1regoin\2= var.region")
    problems = _problems(p, schema)
    assert len(problems) == 1, problems
    assert "main.tf:provider.google.regoin: unknown attribute 'regoin'" in problems[0]
