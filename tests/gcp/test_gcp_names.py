"""GCP names of one app in several stages and regions (unumctl/gcp/names.py) and the bound
on its service accounts (unumctl/gcp/model.py): the rendered roots of two stages x two
regions share no project-global name and no regional name within a region
(unumctl/gcp/checks/collisions.py, shown to catch a collision put in on purpose); every name
within Google's documented limits; a 200-function app renders with two service accounts by
default, and the budget check refuses per-function accounts over it in one line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

pytest.importorskip("hcl2", reason="python-hcl2 not installed")

from unumctl.deploy.appgraph import build  # noqa: E402
from unumctl.gcp import names  # noqa: E402
from unumctl.gcp.checks.collisions import collisions, names_of  # noqa: E402
from unumctl.gcp.model import service_account_ids  # noqa: E402
from unumctl.gcp.render import render  # noqa: E402
from unumctl.manifest import AppError  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402

from unumctl_testing.apps import make_app  # noqa: E402

ECHO = "def handler(e, c):\n    return e\n"
STAGES, REGIONS = ("dev", "prod"), ("us-central1", "europe-west1")


def chain(root: Path, n: int, name: str = "names-app", clouds: dict | None = None) -> Path:
    """F000 -> F001 -> ... -> F<n-1>, with a `clouds.gcp` section when given."""
    fns = {}
    for i in range(n):
        ir: dict = {"Start": True} if i == 0 else {}
        if i < n - 1:
            ir["Next"] = {"Name": f"F{i + 1:03d}", "Type": "Scalar"}
        fns[f"F{i:03d}"] = (ir, ECHO)
    src = make_app(root, name, fns)
    if clouds:
        m = yaml.safe_load((src / "unumctl.yaml").read_text())
        m["clouds"] = clouds
        (src / "unumctl.yaml").write_text(yaml.safe_dump(m, sort_keys=False))
    return src


def _fake_archives(dep, tmp: Path):
    """Archives without building bundles: the template reads only their path and hash."""
    zp = tmp / "fake.zip"
    zp.write_bytes(b"PK")
    for f in dep.functions:
        f.archive.path, f.archive.sha256 = zp, "0" * 64
    return dep


@pytest.fixture(scope="module")
def roots(tmp_path_factory):
    """{(stage, region): rendered root}, per-function accounts (every account a name)."""
    tmp = tmp_path_factory.mktemp("names")
    app = load_app(chain(tmp / "app", 3, clouds={"gcp": {"service_accounts": "per-function"}}))
    out = {}
    for stage in STAGES:
        for region in REGIONS:
            d, _ = render(app, _fake_archives(build(app, "gcp", project="p", stage=stage, region=region), tmp))
            out[(stage, region)] = shutil.copytree(d, tmp / f"{stage}-{region}", ignore=shutil.ignore_patterns("modules"))
    return out


def test_two_stages_and_two_regions_share_no_name(roots):
    assert collisions(roots) == []
    got = names_of(roots[("dev", "us-central1")])
    v = json.loads((roots[("dev", "us-central1")] / "versions.next.json").read_text())["current"]
    assert f"names-app-dev-us-central1-{v}-F000" in got["global"]  # a topic: app, stage, region, version
    fn = names.version_function_name("names-app", "dev", "F000", v)
    assert fn.startswith("names-app-dev-f000-") and fn in got["regional"]  # function: app, stage, version
    # the same function name in two regions is allowed (regional), not in two stages
    assert fn in names_of(roots[("dev", "europe-west1")])["regional"]


def test_collision_checker_catches_a_shared_database(roots, tmp_path):
    """A copy of prod/europe-west1 given dev/us-central1's database id: caught, naming both."""
    broken = dict(roots)
    d = shutil.copytree(roots[("prod", "europe-west1")], tmp_path / "broken")
    text = (d / "main.tf").read_text()
    mine = names.database_name("names-app", "prod", "europe-west1")
    assert mine in text
    (d / "main.tf").write_text(text.replace(mine, names.database_name("names-app", "dev", "us-central1")))
    broken[("prod", "europe-west1")] = d
    found = collisions(broken)
    assert found == [f"{names.database_name('names-app', 'dev', 'us-central1')}: global name of "
                     "dev/us-central1 and prod/europe-west1"]


def test_collision_checker_catches_a_topic_without_the_region(tmp_path):
    """The names before issue 34 (`<app>-<fn>` topics, the same in every region) collide."""
    roots = {}
    for region in REGIONS:
        d = tmp_path / region
        d.mkdir()
        (d / "main.tf").write_text('module "fn_A" {\n  topic = "app-A"\n  function_name = "app-a"\n}\n')
        roots[("dev", region)] = d
    assert collisions(roots) == ["app-A: global name of dev/europe-west1 and dev/us-central1"]


LONG_APP, LONG_FN, LONG_STAGE, LONG_REGION = "a" * 40, "F" + "x" * 60, "stage45678", "northamerica-northeast1"


def test_every_name_within_googles_limits():
    """The longest app (40), stage (10) and a long region and function: every name fits."""
    sa = [names.runtime_service_account_id(LONG_APP, LONG_STAGE, LONG_REGION),
          names.service_account_id(LONG_APP, LONG_STAGE, LONG_REGION, LONG_FN),
          names.build_service_account_id(LONG_APP, LONG_STAGE, LONG_REGION)]
    for s in sa:
        assert 6 <= len(s) <= 30 and names.SERVICE_ACCOUNT_ID.fullmatch(s), s
    assert len(set(sa)) == 3
    assert len(names.function_name(LONG_APP, LONG_STAGE, LONG_FN)) <= 63
    db = names.database_name(LONG_APP, LONG_STAGE, LONG_REGION)
    assert 4 <= len(db) <= 63 and not db.endswith("-")
    assert db != names.database_name(LONG_APP, LONG_STAGE, "northamerica-northeast2")  # the hash keeps them apart
    assert len(names.bucket_prefix(LONG_APP, LONG_STAGE, LONG_REGION)) <= names.BUCKET_PREFIX_MAX
    assert len(names.dead_letter_subscription(LONG_APP, LONG_STAGE, LONG_REGION)) <= 255


def test_a_topic_over_255_characters_is_refused_in_one_line(tmp_path):
    fn = "F" + "x" * 230
    app = load_app(make_app(tmp_path / "t", "a" * 40, {fn: ({"Start": True}, ECHO)}))
    with pytest.raises(AppError) as err:
        build(app, "gcp", stage="stage45678", region=LONG_REGION)
    assert "over Pub/Sub's 255" in str(err.value) and "\n" not in str(err.value)


def test_a_topic_that_fits_only_without_its_version_is_refused(tmp_path):
    """Every version's topics carry its 16-digit id and a '-' (names.version_topic_prefix)."""
    prefix = names.topic_prefix("a" * 40, "stage45678", LONG_REGION)
    fn = "F" + "x" * (255 - len(prefix) - 1)       # 255 characters without the version
    app = load_app(make_app(tmp_path / "t", "a" * 40, {fn: ({"Start": True}, ECHO)}))
    with pytest.raises(AppError, match="272 characters with its version, over Pub/Sub's 255"):
        build(app, "gcp", stage="stage45678", region=LONG_REGION)
    fits = "F" + "x" * (255 - len(prefix) - 18)     # 255 with it
    app = load_app(make_app(tmp_path / "u", "a" * 40, {fits: ({"Start": True}, ECHO)}))
    build(app, "gcp", stage="stage45678", region=LONG_REGION)


def test_a_bad_stage_is_refused_in_one_line(tmp_path):
    app = load_app(chain(tmp_path / "s", 1))
    with pytest.raises(ValueError, match=r"--stage: 'Prod-1' is not a stage name") as err:
        build(app, "gcp", stage="Prod-1")
    assert "\n" not in str(err.value)


def test_200_functions_render_with_two_service_accounts(tmp_path):
    """per-app (the default): one runtime account + the Cloud Build account, within the project
    quota of 100 and the 1,500 policy members (cloud.google.com/iam/quotas); the rendered root
    creates no function's own account and grants each called topic once."""
    app = load_app(chain(tmp_path / "big", 200, "big200"))
    dep = build(app, "gcp", project="p")
    assert service_account_ids(dep) == sorted([names.runtime_service_account_id("big200", "dev", "us-central1"),
                                               names.build_service_account_id("big200", "dev", "us-central1")])
    d, _ = render(app, _fake_archives(dep, tmp_path))
    import hcl2
    with open(d / "main.tf") as fh:
        doc = hcl2.load(fh)
    calls = {k.strip('"'): v for m in doc["module"] for k, v in m.items()}
    fns = [v for k, v in calls.items() if k.startswith("fn_")]
    assert len(fns) == 200 and all("service_account_email" in v for v in fns)
    assert calls["datastore"]["runtime_service_account_id"].strip('"') == dep.params.runtime_service_account
    grants = [n for r in doc["resource"] for t, named in r.items() if "google_pubsub_topic_iam_member" in t for n in named]
    assert len(grants) == 199  # F001..F199: each called once


def test_per_function_accounts_over_the_budget_fail_in_one_line(tmp_path):
    app = load_app(chain(tmp_path / "pf", 200, "pf200", clouds={"gcp": {"service_accounts": "per-function"}}))
    with pytest.raises(AppError) as err:
        build(app, "gcp")
    msg = str(err.value)
    assert "\n" not in msg and "would create 201 service accounts (per-function)" in msg
    assert "over clouds.gcp.max_service_accounts 20" in msg and "1500 members" in msg
    # a raised budget lets it through: 200 runtime accounts + the build account
    app = load_app(chain(tmp_path / "pf2", 200, "pf200",
                         clouds={"gcp": {"service_accounts": "per-function", "max_service_accounts": 201}}))
    assert len(service_account_ids(build(app, "gcp"))) == 201


def test_per_function_accounts_are_each_functions_own(tmp_path):
    app = load_app(chain(tmp_path / "own", 3, clouds={"gcp": {"service_accounts": "per-function"}}))
    dep = build(app, "gcp")
    ids = [f.role.service_account for f in dep.functions]
    assert len(set(ids)) == 3 and dep.params.runtime_service_account is None
