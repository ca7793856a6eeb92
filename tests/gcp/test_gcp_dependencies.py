"""A first apply on a fresh project and on a used one (issue 23 item 3), checked offline on
the rendered GCP Terraform of every example:

- every google resource whose API needs enabling depends, directly or through a module
  input, on the `google_project_service` that enables it (unumctl/gcp/checks/tf_deps.py), and
  the check is shown to catch a dependency removed on purpose;
- each app gets its own named Firestore database; `(default)` only when asked
  (`clouds.gcp.database: "(default)"`), and the runtime and CLI use the same database;
- the functions build with a Cloud Build service account that has the documented roles
  (or the user's own), the Pub/Sub service agent may mint tokens for each trigger's
  account, and no function account gets roles/eventarc.eventReceiver.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from unumctl.pipeline import load as load_app

from unumctl_testing.apps import example_dirs, make_app

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")

from unumctl.gcp.checks import tf_deps  # noqa: E402


def _render(app_dir: Path, **flags):
    from unumctl.pipeline import deployment
    from unumctl.gcp.render import render

    app = load_app(app_dir)
    d, dep = render(app, deployment(app, "gcp", project="demo-project", region="europe-west1", **flags))
    return d, dep


@pytest.fixture(scope="module")
def rendered():
    return {ex.name: _render(ex) for ex in example_dirs()}


def _load(path: Path) -> dict:
    with open(path) as fh:
        return hcl2.load(fh)


def _datastore_call(d: Path) -> dict:
    mods = {k.strip('"'): v for e in _load(d / "main.tf")["module"] for k, v in e.items()}
    return mods["datastore"]


@pytest.mark.parametrize("example", [p.name for p in example_dirs()])
def test_every_resource_depends_on_its_api(example, rendered):
    d, dep = rendered[example]
    problems, checked = tf_deps.check(d)
    assert problems == []
    # the datastore module's resources and every function's (topic, account, object,
    # function, IAM members) were checked
    assert checked >= 12 + 6 * len(dep.functions)


@pytest.mark.parametrize("example", [p.name for p in example_dirs()])
def test_no_default_database_unless_asked(example, rendered):
    """Each deployment creates its own database `unum-<app>-<stage>-<region>`; nothing renders
    `(default)`."""
    d, dep = rendered[example]
    call = _datastore_call(d)
    own = f"unum-{dep.app}-dev-{dep.region}"[:63]
    assert call["database_id"] == f'"{dep.datastore.database}"' and call["create_database"] is True
    assert "(default)" not in (d / "main.tf").read_text()
    assert dep.datastore.database == own or (len(own) == 63 and dep.datastore.database.startswith(own[:50]))


def test_default_database_only_when_asked(tmp_path):
    src = make_app(tmp_path / "app", "db-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    manifest = src / "unumctl.yaml"
    manifest.write_text(manifest.read_text() + 'clouds:\n  gcp:\n    database: "(default)"\n    create_database: false\n')
    d, dep = _render(src)
    call = _datastore_call(d)
    assert call["database_id"] == '"(default)"' and call["create_database"] is False
    assert tf_deps.check(d)[0] == []


def test_bad_database_setting_is_one_line(tmp_path):
    from unumctl.manifest import AppError

    src = make_app(tmp_path / "app", "db-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    manifest = src / "unumctl.yaml"
    manifest.write_text(manifest.read_text() + "clouds:\n  gcp:\n    database: Default\n")
    with pytest.raises(AppError, match=r"unumctl.yaml: clouds.gcp.database: .*Firestore database id"):
        load_app(src)


def test_runtime_and_cli_use_the_apps_database(tmp_path, monkeypatch):
    """Without UNUM_DATABASE the runtime (runtime/gcp/entry.py) falls back to the same name
    the model gives Terraform (runtime/names.py), and the CLI reads the model's database.
    No emulator is contacted: the Firestore clients are only constructed."""
    pytest.importorskip("google.cloud.firestore", reason="google-cloud-firestore not installed")
    from runtime.gcp.entry import GcpFunction
    from unumctl.build import build_function
    from unumctl.deploy.appgraph import build
    from unumctl.gcp.target import GcpTarget

    src = make_app(tmp_path / "app", "db-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    app = load_app(src)
    dep = build(app, "gcp", project="p")
    assert dep.datastore.database == "unum-db-app-dev-us-central1"  # app, stage, region
    env = dep.functions[0].resolved_environment({"project": "p", "database": dep.datastore.database,
                                                 "collection": dep.datastore.name, "bucket": "",
                                                 "dead_letter_topic": "t"})
    art = build_function(app, "A", "gcp", tmp_path / "build")
    import zipfile
    with zipfile.ZipFile(art.path) as zf:
        zf.extractall(tmp_path / "bundle")
    monkeypatch.setenv("FIRESTORE_EMULATOR_HOST", "127.0.0.1:9")  # anonymous clients, never called
    monkeypatch.setenv("PUBSUB_EMULATOR_HOST", "127.0.0.1:9")
    fn = GcpFunction(tmp_path / "bundle", env)  # the environment Terraform gives it
    assert fn.ds.client._database == "unum-db-app-dev-us-central1"
    assert fn.invoker.topic_path("A").endswith("/topics/db-app-dev-us-central1-A")
    assert GcpFunction(tmp_path / "bundle", {"UNUM_PROJECT": "p"}).ds.client._database == "unum-db-app"  # fallback
    monkeypatch.setattr("unumctl.gcp.target._emulator_up", lambda var: None)
    assert GcpTarget(app)._datastore("p").client._database == "unum-db-app-dev-us-central1"


@pytest.fixture
def copy(rendered, tmp_path):
    src, _ = rendered["iot-pipeline"]
    dst = tmp_path / "tf"
    shutil.copytree(src, dst)

    def edit(rel: str, old: str, new: str) -> None:
        path = dst / rel
        text = path.read_text()
        assert re.search(old, text, re.MULTILINE), f"{old!r} not in {rel}: the module changed"
        path.write_text(re.sub(old, new, text, count=1, flags=re.MULTILINE))

    return dst, edit


def test_catches_a_function_module_given_the_plain_project(copy):
    """The bug of issue 23: per-function topics and service accounts took `var.project` and
    raced the API enablement. Giving one function module `var.project` again is caught, for
    exactly the resources that then depend on no enablement."""
    d, edit = copy
    edit("main.tf", r"project(\s*)= module\.datastore\.project # known once the APIs are enabled",
         r"project\1= var.project")
    problems, _ = tf_deps.check(d)
    # per-app accounts (the default): the function module creates no account of its own
    assert [p.split(":")[0] for p in problems] == ["module.fn_Aggregate.google_pubsub_topic.this"]
    assert "needs pubsub.googleapis.com" in problems[0]


def test_catches_a_removed_depends_on(copy):
    d, edit = copy
    edit("modules/gcp-unum-datastore/main.tf",
         r'(force_destroy\s*= true\n)\s*depends_on\s*= \[time_sleep\.apis\]\n(}\n\n# Messages)',
         r"\1\2")
    problems, _ = tf_deps.check(d)
    # the source bucket, and through it each function's source object, race the Storage API
    assert [p.split(":")[0] for p in problems] == [
        "module.datastore.google_storage_bucket.sources", "module.fn_Aggregate.google_storage_bucket_object.source",
        "module.fn_HvacDecide.google_storage_bucket_object.source"]
    assert all("needs storage.googleapis.com" in p for p in problems)


def test_catches_an_api_missing_from_the_enabled_set(copy):
    d, edit = copy
    edit("modules/gcp-unum-datastore/main.tf", r'^\s*"eventarc\.googleapis\.com",\n', "")
    problems, _ = tf_deps.check(d)
    assert problems and all("needs eventarc.googleapis.com" in p for p in problems)
    assert {p.split(":")[0] for p in problems} == {"module.datastore.google_project_service_identity.agents"} | {
        f"module.fn_{f}.google_cloudfunctions2_function.this" for f in
        sorted(load_app(Path(__file__).parents[2] / "examples/iot-pipeline").workflow.functions)}


def test_catches_a_resource_type_it_does_not_know(copy):
    d, _ = copy
    (d / "extra.tf").write_text('resource "google_compute_network" "n" {\n  name = "n"\n}\n')
    problems, _ = tf_deps.check(d)
    assert problems == ["google_compute_network.n: no API known for google_compute_network (add it to "
                        "unumctl/gcp/checks/tf_deps.py REQUIRED_APIS)"]


def _datastore_outputs(d: Path) -> dict:
    return {k.strip('"'): v for e in _load(d / "modules/gcp-unum-datastore/outputs.tf")["output"] for k, v in e.items()}


def _resources(d: Path, module: str) -> dict:
    out: dict = {}
    for p in sorted((d / "modules" / module).glob("*.tf")):
        for e in _load(p).get("resource", []):
            for rtype, named in e.items():
                for name, body in named.items():
                    out[f"{rtype.strip(chr(34))}.{name.strip(chr(34))}"] = body
    return out


def test_iam_of_a_pubsub_triggered_function(rendered):
    """Build account with the documented roles; token creator for the Pub/Sub service agent
    on the function's own account; no eventarc.eventReceiver anywhere."""
    d, _ = rendered["iot-pipeline"]
    fn = _resources(d, "gcp-unum-function")
    ds = _resources(d, "gcp-unum-datastore")
    text = "".join(p.read_text() for p in d.rglob("*.tf"))
    assert "eventarc.eventReceiver" not in re.sub(r"#.*", "", text)
    tc = fn["google_service_account_iam_member.pubsub_token_creator"]
    assert tc["role"] == '"roles/iam.serviceAccountTokenCreator"'
    assert tc["service_account_id"] == "${google_service_account.this[0].name}"
    assert tc["member"] == '"serviceAccount:${var.pubsub_agent}"'  # the agent google_project_service_identity made
    assert _datastore_outputs(d)["pubsub_service_agent"]["value"] == \
        '${google_project_service_identity.agents["pubsub.googleapis.com"].email}'
    build = fn["google_cloudfunctions2_function.this"]["build_config"][0]
    assert build["service_account"] == "${var.build_service_account}"
    roles = {k: v["role"] for k, v in ds.items() if k.startswith(("google_project_iam_member.build",
                                                                   "google_storage_bucket_iam_member.build"))}
    assert roles == {"google_project_iam_member.build_logs": '"roles/logging.logWriter"',
                     "google_project_iam_member.build_images": '"roles/artifactregistry.writer"',
                     "google_storage_bucket_iam_member.build_sources": '"roles/storage.objectViewer"'}
    assert ds["google_storage_bucket_iam_member.build_sources"]["bucket"] == "${google_storage_bucket.sources.name}"


def test_users_own_build_service_account(tmp_path):
    src = make_app(tmp_path / "app", "sa-app", {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    manifest = src / "unumctl.yaml"
    manifest.write_text(manifest.read_text() + "clouds:\n  gcp:\n    build_service_account: "
                        "builder@my-project.iam.gserviceaccount.com\n")
    d, _ = _render(src)
    assert _datastore_call(d)["build_service_account"] == '"builder@my-project.iam.gserviceaccount.com"'
    assert tf_deps.check(d)[0] == []
    bad = manifest.read_text().replace("builder@my-project.iam.gserviceaccount.com", "'x\" ; y'")
    manifest.write_text(bad)
    from unumctl.manifest import AppError
    with pytest.raises(AppError, match=r"clouds.gcp.build_service_account: .*service account email"):
        load_app(src)


@pytest.mark.parametrize("module", ["gcp-unum-datastore", "gcp-unum-function"])
def test_module_examples_depend_on_the_apis(module):
    """The committed module examples, as a user copies them, pass the same check."""
    for ex in sorted((tf_deps_root() / module / "examples").iterdir()):
        problems, checked = tf_deps.check(ex)
        assert problems == [] and checked > 0, ex


def tf_deps_root() -> Path:
    return Path(__file__).parents[2] / "terraform" / "modules"


def test_functions_wait_for_the_service_agents_and_the_build_grants(rendered):
    """The first apply on a fresh project (docs/gcp.md "First apply"): the service agents the
    triggers need are created ahead of the functions (google_project_service_identity, with
    the Eventarc agent's role), and a time_sleep after them and after the build account's
    grants stands between them and every function; another one after the API enablement."""
    d, dep = rendered["iot-pipeline"]
    ds = _resources(d, "gcp-unum-datastore")
    ids = ds["google_project_service_identity.agents"]
    assert ids["provider"] == "google-beta" and "eventarc.googleapis.com" in ids["for_each"] \
        and "pubsub.googleapis.com" in ids["for_each"]
    assert ds["google_project_iam_member.eventarc_agent"]["role"] == '"roles/eventarc.serviceAgent"'
    assert set(ds["time_sleep.iam"]["depends_on"]) == {
        "${google_project_service_identity.agents}", "${google_project_iam_member.eventarc_agent}",
        "${google_project_iam_member.build_logs}", "${google_project_iam_member.build_images}",
        "${google_storage_bucket_iam_member.build_sources}"}
    assert ds["time_sleep.apis"]["depends_on"] == ["${google_project_service.this}"]
    assert _datastore_outputs(d)["build_service_account"]["depends_on"] == ["${time_sleep.iam}"]
    g = tf_deps.Graph(d)
    for f in dep.functions:
        reach = g.reachable(((f"fn_{f.unum_name}",), "resource:google_cloudfunctions2_function.this"))
        assert (("datastore",), "resource:time_sleep.iam") in reach
        assert (("datastore",), "resource:google_project_service_identity.agents") in reach


def _owners(problems: list[str]) -> list[str]:
    return sorted({p.split(":")[0] for p in problems})


def test_catches_functions_built_before_the_grants_propagate(copy):
    """The build account output taking the grants directly (no wait): every function is
    created right after its build account's roles and before the service agents exist."""
    d, edit = copy
    edit("modules/gcp-unum-datastore/outputs.tf", r"depends_on  = \[time_sleep\.iam\]",
         "depends_on  = [google_project_iam_member.build_logs, google_project_iam_member.build_images]")
    problems, _ = tf_deps.check(d)
    fns = [f"module.fn_{f}.google_cloudfunctions2_function.this" for f in ("Aggregate", "HvacDecide")]
    assert _owners(problems) == fns
    for fn in fns:
        mine = [p for p in problems if p.startswith(fn + ":")]
        assert any("grant module.datastore.google_project_iam_member.build_logs" in p for p in mine)
        assert any("google_project_service_identity of eventarc.googleapis.com" in p for p in mine)


def test_catches_a_missing_eventarc_service_agent(copy):
    d, edit = copy
    edit("modules/gcp-unum-datastore/main.tf", r'toset\(\["eventarc\.googleapis\.com", "pubsub\.googleapis\.com"\]\)',
         'toset(["pubsub.googleapis.com"])')
    edit("modules/gcp-unum-datastore/main.tf", r'agents\["eventarc\.googleapis\.com"\]', 'agents["pubsub.googleapis.com"]')
    problems, _ = tf_deps.check(d)
    assert _owners(problems) == ["module.fn_Aggregate.google_cloudfunctions2_function.this",
                                 "module.fn_HvacDecide.google_cloudfunctions2_function.this"]
    assert all("does not depend on the google_project_service_identity of eventarc.googleapis.com" in p
               for p in problems)


def test_catches_a_wait_that_does_not_cover_the_build_grants(copy):
    d, edit = copy
    edit("modules/gcp-unum-datastore/main.tf",
         r"depends_on = \[google_project_service_identity\.agents, google_project_iam_member\.eventarc_agent,\n"
         r"\s*google_project_iam_member\.build_logs, google_project_iam_member\.build_images,\n"
         r"\s*google_storage_bucket_iam_member\.build_sources\]",
         "depends_on = [google_project_service_identity.agents, google_project_iam_member.eventarc_agent]")
    # the output still names the grants (as it did before the wait existed)
    edit("modules/gcp-unum-datastore/outputs.tf", r"depends_on  = \[time_sleep\.iam\]",
         "depends_on  = [time_sleep.iam, google_project_iam_member.build_logs, google_project_iam_member.build_images, "
         "google_storage_bucket_iam_member.build_sources]")
    problems, _ = tf_deps.check(d)
    assert _owners(problems) == ["module.fn_Aggregate.google_cloudfunctions2_function.this",
                                 "module.fn_HvacDecide.google_cloudfunctions2_function.this"]
    assert sorted({p.split("grant ")[1].split(" ")[0] for p in problems}) == [
        "module.datastore.google_project_iam_member.build_images", "module.datastore.google_project_iam_member.build_logs",
        "module.datastore.google_storage_bucket_iam_member.build_sources"]


def test_catches_a_resource_created_right_after_the_api_enablement(copy):
    """A resource that depends on google_project_service directly, not on the wait after it."""
    d, edit = copy
    edit("modules/gcp-unum-datastore/main.tf", r"(name       = local\.dead_letter_topic\n\s*)depends_on = \[time_sleep\.apis\]",
         r"\1depends_on = [google_project_service.this]")
    problems, _ = tf_deps.check(d)
    assert _owners(problems) == ["module.datastore.google_pubsub_subscription.dead_letter",
                                 "module.datastore.google_pubsub_topic.dead_letter"]
    assert all("on no time_sleep after it (an API just enabled may answer SERVICE_DISABLED)" in p for p in problems)
