"""The rendered GCP Terraform of every example: `terraform fmt -check` passes, every file
parses with python-hcl2, and the structure holds every resource and attribute the GCP
target needs (issue #5). The google provider is not installable here, so this is the
offline check; `terraform validate`/`plan` run only where the provider exists."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from unumctl.pipeline import load as load_app

from unumctl_testing.apps import example_dirs

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")


def _unquote(x):
    if isinstance(x, dict):
        return {_unquote(k): _unquote(v) for k, v in x.items() if k not in ("__is_block__", "__comments__")}
    if isinstance(x, list):
        return [_unquote(v) for v in x]
    if isinstance(x, str) and len(x) >= 2 and x[0] == x[-1] == '"':
        return x[1:-1]
    return x


def _load(path: Path) -> dict:
    with open(path) as fh:
        return _unquote(hcl2.load(fh))


def _blocks(doc: dict, kind: str) -> dict:
    """{type: {name: body}} for resources, {name: body} for modules/outputs/variables."""
    out: dict = {}
    for entry in doc.get(kind, []):
        for k, v in entry.items():
            if kind == "resource":
                for name, body in v.items():
                    out.setdefault(k, {})[name] = body
            else:
                out[k] = v
    return out


def _one(body: dict, block: str) -> dict:
    v = body[block]
    return v[0] if isinstance(v, list) else v


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    from unumctl.pipeline import deployment
    from unumctl.gcp.render import render

    out = {}
    for ex in example_dirs():
        app = load_app(ex)
        d, dep = render(app, deployment(app, "gcp", project="demo-project", region="europe-west1"))
        out[ex.name] = (app, d, dep)
    return out


@pytest.mark.skipif(shutil.which("terraform") is None, reason="terraform binary not on PATH")
@pytest.mark.parametrize("example", [p.name for p in example_dirs()])
def test_fmt_check_passes(example, rendered):
    from unumctl.terraform import TerraformRunner

    pytest.importorskip("python_terraform", reason="python-terraform not installed")
    _, d, _ = rendered[example]
    assert TerraformRunner(d).fmt_check() == []


@pytest.mark.parametrize("example", [p.name for p in example_dirs()])
def test_root_module_structure(example, rendered):
    app, d, dep = rendered[example]
    root = _load(d / "main.tf")
    tf = root["terraform"][0]
    assert _one(tf, "required_providers")["google"]["version"] == "6.50.0"  # pinned (unumctl/gcp/checks/schema/google-6.50.0.json)
    mods = _blocks(root, "module")
    fns = sorted(app.workflow.functions)
    assert set(mods) == {"datastore"} | {f"fn_{f}" for f in fns}
    for fn in fns:
        m = mods[f"fn_{fn}"]
        assert m["source"] == "./modules/gcp-unum-function"
        assert m["topic"] == f"{app.name}-dev-{dep.region}-{fn}"  # app, stage, region (unumctl/gcp/names.py)
        assert m["service_account_email"] == "${module.datastore.runtime_service_account_email}"  # per-app
        art_sha = next(f.zip_sha256 for f in dep.functions if f.unum_name == fn)
        assert m["source_sha256"] == art_sha and (d / m["source_path"].replace("${path.module}/", "")).exists()
        assert m["entry_point"] == "handle_cloudevent" and m["runtime"].startswith("python3")
        assert m["memory"] == app.manifest.functions[fn].memory
        assert m["timeout"] == app.manifest.functions[fn].timeout
        env = m["environment"]
        for k in ("UNUM_PROJECT", "UNUM_COLLECTION", "UNUM_BUCKET", "UNUM_DEAD_LETTER_TOPIC",
                  "UNUM_MAX_DELIVERY_ATTEMPTS", "UNUM_DATABASE"):
            assert k in env, k
    # publish rights of the deployment's one runtime account: once on every topic some IR edge calls
    iam = _blocks(root, "resource").get("google_pubsub_topic_iam_member", {})
    expected = {e.target for fn in fns for e in app.workflow.functions[fn].next}
    got = []
    for body in iam.values():
        assert body["member"] == "serviceAccount:${module.datastore.runtime_service_account_email}"
        assert body["role"] == "roles/pubsub.publisher"
        got.append(body["topic"].split("module.fn_")[1].split(".")[0])
    assert sorted(got) == sorted(expected)
    outs = _blocks(root, "output")
    assert {"functions", "topics", "entry_topic", "bucket"} <= set(outs)
    assert f"fn_{app.workflow.entry.name}" in outs["entry_topic"]["value"]


def test_function_module_structure(rendered):
    _, d, _ = next(iter(rendered.values()))
    # the module's resources are split by concern (main.tf, iam.tf): read every file
    docs = [_load(p) for p in sorted((d / "modules/gcp-unum-function").glob("*.tf"))]
    res = _blocks({"resource": [r for doc in docs for r in doc.get("resource", [])]}, "resource")
    assert "google_pubsub_topic" in res and "google_service_account" in res
    obj = res["google_storage_bucket_object"]["source"]
    assert "${var.source_sha256}" in obj["name"]  # content hash in the object name
    fn = res["google_cloudfunctions2_function"]["this"]
    build = _one(fn, "build_config")
    assert build["runtime"] == "${var.runtime}" and build["entry_point"] == "${var.entry_point}"
    assert "storage_source" in _one(build, "source")
    svc = _one(fn, "service_config")
    for attr in ("available_memory", "timeout_seconds", "max_instance_count", "environment_variables",
                 "service_account_email"):
        assert attr in svc, attr
    trig = _one(fn, "event_trigger")
    assert trig["retry_policy"] == "RETRY_POLICY_RETRY"
    assert trig["event_type"] == "google.cloud.pubsub.topic.v1.messagePublished"
    assert trig["pubsub_topic"] == "${google_pubsub_topic.this.id}"
    assert trig["service_account_email"] == "${local.service_account_email}"
    firestore = res["google_project_iam_member"]["firestore"]
    assert firestore["role"] == "roles/datastore.user"  # on the app's database only
    assert _one(firestore, "condition")["expression"] == (
        'resource.name == \\"projects/${var.project}/databases/${var.database}\\"')
    b = res["google_storage_bucket_iam_member"]["bucket"]
    assert b["bucket"] == "${var.bucket}" and b["role"] == "roles/storage.objectUser"
    # the code archives are in another bucket, on which the function has no role
    assert obj["bucket"] == "${var.source_bucket}"
    assert _one(_one(build, "source"), "storage_source")["bucket"] == "${var.source_bucket}"
    assert [m["bucket"] for m in res["google_storage_bucket_iam_member"].values()] == ["${var.bucket}"]
    assert res["google_pubsub_topic_iam_member"]["dead_letter"]["topic"] == "${var.dead_letter_topic}"
    assert res["google_cloud_run_service_iam_member"]["invoker"]["role"] == "roles/run.invoker"


def test_datastore_module_structure(rendered):
    _, d, _ = next(iter(rendered.values()))
    mod = _load(d / "modules/gcp-unum-datastore/main.tf")
    res = _blocks(mod, "resource")
    assert res["google_project_service"]["this"]["for_each"] == "${local.services}"
    services = mod["locals"][0]["services"]
    for api in ("cloudfunctions.googleapis.com", "pubsub.googleapis.com", "firestore.googleapis.com",
                "eventarc.googleapis.com", "run.googleapis.com", "cloudbuild.googleapis.com"):
        assert api in services, api
    db = res["google_firestore_database"]["this"]
    assert "var.create_database" in db["count"] and db["type"] == "FIRESTORE_NATIVE"
    ttl = res["google_firestore_field"]["ttl"]
    assert ttl["field"] == "expires_at" and "ttl_config" in ttl
    for bucket in res["google_storage_bucket"].values():
        assert bucket["uniform_bucket_level_access"] is True
        assert bucket["public_access_prevention"] == "enforced"
    # unguessable names: a random suffix kept in the state, different for the two buckets
    assert res["google_storage_bucket"]["this"]["name"] == "${var.bucket_prefix}-${random_id.bucket.hex}"
    assert res["google_storage_bucket"]["sources"]["name"] == "${var.bucket_prefix}-src-${random_id.bucket.hex}"
    bucket = res["google_storage_bucket"]["this"]
    rule = _one(bucket, "lifecycle_rule")
    assert _one(rule, "condition")["matches_prefix"] == ["payloads/"]
    assert _one(rule, "action")["type"] == "Delete"
    assert "google_pubsub_topic" in res and "dead_letter" in res["google_pubsub_subscription"]


def test_plan_offline_says_what_it_could_not_do(tmp_path, monkeypatch, capsys):
    """`plan --cloud gcp` with no provider and no project still builds, renders, checks
    the format, the schema and the API-enablement dependencies offline, explains in one line
    and exits 4 (NOT_PLANNED, docs/guide/commands.md): exit 0 read as success by a CI pipeline
    although nothing was planned (issue 23 item 6)."""
    from typer.testing import CliRunner

    from unumctl.cli import app as cli

    pytest.importorskip("python_terraform", reason="python-terraform not installed")
    if shutil.which("terraform") is None:
        pytest.skip("terraform binary not on PATH")
    for var in ("GOOGLE_CLOUD_PROJECT", "CLOUDSDK_CORE_PROJECT", "GCLOUD_PROJECT"):
        monkeypatch.delenv(var, raising=False)
    ex = Path(__file__).resolve().parents[2] / "examples" / "iot-pipeline"
    res = CliRunner().invoke(cli, ["plan", str(ex), "--cloud", "gcp"])
    assert res.exit_code == 4, res.output
    assert '"fmt": "ok"' in res.stdout
    import json

    from unumctl.terraform import NO_PLAN
    summary = json.loads(res.stdout)
    # the plan keys of every target (as `plan --cloud aws`), empty here: nothing was planned
    assert {k: summary[k] for k in NO_PLAN} == NO_PLAN and summary["workdir"]
    assert summary["checked"] == ["rendered", "formatted", "schema-checked offline (hashicorp/google 6.50.0)",
                                  "dependency-checked offline (API enablement)"]
    notes = [ln for ln in res.output.splitlines() if ln.startswith("unumctl: plan --cloud gcp")]
    assert len(notes) == 1 and "not planned" in notes[0] and "project" in notes[0]
    assert "schema-checked offline" in notes[0]


def test_plan_fails_on_a_rendered_file_that_breaks_the_offline_checks(tmp_path, monkeypatch):
    """The offline checks run on what `plan` rendered: a template that drops the API
    dependency of a function module is refused (exit 2, naming the resource)."""
    from typer.testing import CliRunner

    from unumctl.cli import app as cli

    pytest.importorskip("python_terraform", reason="python-terraform not installed")
    if shutil.which("terraform") is None:
        pytest.skip("terraform binary not on PATH")
    from unumctl.gcp import render as gcp_render

    tpl = tmp_path / "templates"
    shutil.copytree(gcp_render.TEMPLATES, tpl)
    main = tpl / "main.tf.j2"
    text = main.read_text()
    assert "module.datastore.project # known once the APIs are enabled" in text
    main.write_text(text.replace("module.datastore.project # known once the APIs are enabled", "var.project"))
    monkeypatch.setattr(gcp_render, "TEMPLATES", tpl)
    ex = Path(__file__).resolve().parents[2] / "examples" / "iot-pipeline"
    res = CliRunner().invoke(cli, ["plan", str(ex), "--cloud", "gcp"])
    assert res.exit_code == 2, res.output
    assert "fails the offline check: module.fn_Aggregate.google_pubsub_topic.this: needs pubsub" in res.output


def test_bucket_name_is_read_from_the_deployment(tmp_path, monkeypatch):
    """The bucket's random suffix exists only in the Terraform state: invoke/result read the
    output `bucket` (UNUM_BUCKET first, as on emulators); before apply they say to apply."""
    pytest.importorskip("google.cloud.storage", reason="google-cloud-storage not installed")
    if shutil.which("terraform") is None:
        pytest.skip("terraform binary not on PATH")
    import json

    from unumctl.gcp.render import terraform_dir
    from unumctl.gcp.target import GcpTarget
    from unumctl.targets import TargetError

    from unumctl_testing.apps import make_app

    app = load_app(make_app(tmp_path / "app", "bucket-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")}))
    for var in ("UNUM_BUCKET", "PUBSUB_EMULATOR_HOST", "FIRESTORE_EMULATOR_HOST"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", "http://127.0.0.1:9")  # anonymous client, never called
    target = GcpTarget(app)
    with pytest.raises(TargetError, match="not deployed on gcp; run: unumctl apply"):
        target._blobs("demo-project")
    state = terraform_dir(app, target.model) / "terraform.tfstate"
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(json.dumps({"version": 4, "terraform_version": "1.5.0", "serial": 1, "lineage": "t",
                                 "outputs": {"bucket": {"value": "unum-bucket-app-1a2b3c4d", "type": "string"}},
                                 "resources": []}))
    assert target._blobs("demo-project").bucket.name == "unum-bucket-app-1a2b3c4d"
    monkeypatch.setenv("UNUM_BUCKET", "from-env")
    assert target._blobs("demo-project").bucket.name == "from-env"
