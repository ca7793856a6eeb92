"""The Terraform of a gcp deployment keeps every version that may still have running sessions
(unumctl/gcp/kept.py, docs/versions.md "On GCP"), offline: after an apply of version 1, the
render of version 2 has version 2's functions at `fn_<function>` and version 1's at
`fn_<function>_<v1>` with `moved` blocks between the two addresses (so Terraform replaces
nothing of version 1), every function name and topic distinct; a render that collects
version 1 leaves it out; a rollback moves the old version back. The check of distinct
names is shown to catch a render that gives two versions one topic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("hcl2", reason="python-hcl2 not installed")

import hcl2  # noqa: E402

from unumctl.deploy.appgraph import build  # noqa: E402
from unumctl.gcp import kept, names  # noqa: E402
from unumctl.gcp.render import render  # noqa: E402
from unumctl.pipeline import load as load_app  # noqa: E402

from tests.gcp.test_gcp_names import chain  # noqa: E402
from unumctl.manifest import AppError  # noqa: E402


def _packaged(app, tmp: Path, code: str):
    """The model with fake archives whose content is `code` (a version per content)."""
    dep = build(app, "gcp", project="p")
    for f in dep.functions:
        zp = tmp / f"{f.unum_name}-{code}.zip"
        zp.write_bytes(b"PK" + code.encode())
        f.archive.path, f.archive.sha256 = zp, code * 64
    return dep


def _apply(d: Path) -> dict:
    """What a successful apply does to the record (GcpTarget._record_versions)."""
    return kept.commit(d)


def _root(d: Path) -> dict:
    with open(d / "main.tf") as fh:
        return hcl2.load(fh)


def _modules(doc: dict) -> dict[str, dict]:
    return {k.strip('"'): v for m in doc.get("module", []) for k, v in m.items()}


def _moved(doc: dict) -> list[tuple[str, str]]:
    return sorted((m["from"].strip("${}"), m["to"].strip("${}")) for m in doc.get("moved", []))


def duplicate_names(doc: dict) -> list[str]:
    """The function names and topics that two function modules of one root share."""
    seen: dict[str, str] = {}
    dup = []
    for name, body in _modules(doc).items():
        if name == "datastore":
            continue
        for arg in ("function_name", "topic"):
            v = str(body[arg]).strip('"')
            if v in seen:
                dup.append(f"{v}: {seen[v]} and {name}")
            seen[v] = name
    return dup


@pytest.fixture
def app(tmp_path):
    return load_app(chain(tmp_path / "app", 2, name="kept-app"))


def test_a_deploy_keeps_the_old_version_at_its_own_addresses(app, tmp_path):
    d, dep1 = render(app, _packaged(app, tmp_path, "1"))
    v1 = _apply(d)["current"]
    assert set(_modules(_root(d))) == {"datastore", "fn_F000", "fn_F001"} and _moved(_root(d)) == []
    d, dep2 = render(app, _packaged(app, tmp_path, "2"))
    doc = _root(d)
    v2 = json.loads((d / kept.NEXT).read_text())["current"]
    assert v1 != v2
    mods = _modules(doc)
    assert set(mods) == {"datastore", "fn_F000", "fn_F001", f"fn_F000_{v1}", f"fn_F001_{v1}"}
    assert str(mods["fn_F000"]["topic"]).strip('"') == names.topic_id(
        app.name, "F000", names.version_topic_prefix(app.name, "dev", dep2.region, v2))
    assert str(mods[f"fn_F000_{v1}"]["environment"]["UNUM_VERSION"]).strip('"') == v1
    assert (d / mods[f"fn_F000_{v1}"]["source_path"].strip('"').replace("${path.module}/", "")).read_bytes() == b"PK1"
    assert _moved(doc) == [(f"google_pubsub_topic_iam_member.publish_to_F001",
                            f"google_pubsub_topic_iam_member.publish_to_F001_{v1}"),
                           ("module.fn_F000", f"module.fn_F000_{v1}"), ("module.fn_F001", f"module.fn_F001_{v1}")]
    assert duplicate_names(doc) == []
    assert set(_apply(d)["versions"]) == {v1, v2}

    # drained: the next apply collects version 1
    d, _ = render(app, _packaged(app, tmp_path, "2"), collect={v1})
    doc = _root(d)
    assert set(_modules(doc)) == {"datastore", "fn_F000", "fn_F001"} and _moved(doc) == []
    assert set(_apply(d)["versions"]) == {v2} and not (d / "versions" / v1).exists()


def test_a_rollback_moves_the_old_version_back(app, tmp_path):
    d, _ = render(app, _packaged(app, tmp_path, "1"))
    v1 = _apply(d)["current"]
    d, _ = render(app, _packaged(app, tmp_path, "2"))
    v2 = _apply(d)["current"]
    d, _ = render(app, _packaged(app, tmp_path, "1"))
    doc = _root(d)
    assert set(_modules(doc)) == {"datastore", "fn_F000", "fn_F001", f"fn_F000_{v2}", f"fn_F001_{v2}"}
    assert ("module.fn_F000", f"module.fn_F000_{v2}") in _moved(doc)
    assert (f"module.fn_F000_{v1}", "module.fn_F000") in _moved(doc)


def test_the_check_catches_two_versions_given_one_topic(app, tmp_path, monkeypatch):
    """Injected bug: the version is left out of the topic prefix (one topic per function for
    every version)."""
    monkeypatch.setattr(names, "version_topic_prefix", lambda a, s, r, v: names.topic_prefix(a, s, r))
    d, _ = render(app, _packaged(app, tmp_path, "1"))
    _apply(d)
    d, _ = render(app, _packaged(app, tmp_path, "2"))
    assert sorted(p.split(":")[0] for p in duplicate_names(_root(d))) == [
        names.topic_id(app.name, "F000", names.topic_prefix(app.name, "dev", "us-central1")),
        names.topic_id(app.name, "F001", names.topic_prefix(app.name, "dev", "us-central1"))]


def test_kept_versions_with_per_function_accounts_stay_within_the_budget(tmp_path):
    """Per-function accounts: 6 functions + the build account fit a budget of 7 for one
    version; a second version kept beside it would make 13, refused in one line naming the
    version to wait for; per-app keeps one account for every version."""
    gcp = {"service_accounts": "per-function", "max_service_accounts": 7}
    app = load_app(chain(tmp_path / "per-fn", 6, name="budget-app", clouds={"gcp": gcp}))
    d, _ = render(app, _packaged(app, tmp_path, "1"))
    v1 = _apply(d)["current"]
    with pytest.raises(ValueError, match=f"would have 13 service accounts .* over clouds.gcp.max_service_accounts 7; "
                                         f"wait until version {v1} drains") as err:
        render(app, _packaged(app, tmp_path, "2"))
    assert "\n" not in str(err.value)
    render(app, _packaged(app, tmp_path, "2"), collect={v1})   # once drained, it fits
    with pytest.raises(AppError, match="max_service_accounts 6"):
        bad = load_app(chain(tmp_path / "over", 6, name="budget-app",
                             clouds={"gcp": {**gcp, "max_service_accounts": 6}}))
        build(bad, "gcp", project="p")
