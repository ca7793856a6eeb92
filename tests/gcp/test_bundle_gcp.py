"""GCP bundles: main.py exposes the gen2 entry point, requirements.txt merges the
function's requirements with the adapter's own, builds are deterministic; a checkpoint
above Firestore's 1 MiB document limit goes to GCS by pointer, end to end."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from unumctl.build import build_function, bundle_entries
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

ROOT = Path(__file__).resolve().parents[2]


def _app(tmp_path, reqs):
    root = make_app(tmp_path / "app", "bundled", {
        "Big": ({"Start": True, "Next": {"Name": "Size"}},
                "def handler(e, c):\n    return 'x' * e['n']\n"),
        "Size": ({}, "def handler(e, c):\n    return {'len': len(e), 'head': e[:3]}\n")})
    import yaml
    m = yaml.safe_load((root / "unumctl.yaml").read_text())
    m["functions"]["Big"]["requirements"] = reqs
    (root / "unumctl.yaml").write_text(yaml.safe_dump(m))
    return load_app(root)


def test_bundle_has_main_and_merged_requirements(tmp_path):
    app = _app(tmp_path, ["requests==2.32.3", "google-cloud-firestore==2.19.0"])
    entries = dict(bundle_entries(app, "Big", "gcp"))
    assert b"handle_cloudevent" in entries["main.py"]
    reqs = entries["requirements.txt"].decode().splitlines()
    assert "requests==2.32.3" in reqs
    assert "google-cloud-firestore==2.19.0" in reqs  # the function's pin wins
    assert not any(r.startswith("google-cloud-firestore>=") for r in reqs)
    assert any(r.startswith("google-cloud-pubsub") for r in reqs)
    assert any(r.startswith("functions-framework") for r in reqs)
    assert "runtime/gcp/entry.py" in entries and "runtime/aws/entry.py" not in entries
    a1 = build_function(app, "Big", "gcp", tmp_path / "b1")
    a2 = build_function(app, "Big", "gcp", tmp_path / "b2")
    assert a1.sha256 == a2.sha256  # deterministic
    with zipfile.ZipFile(a1.path) as zf:
        assert "main.py" in zf.namelist()


def test_user_main_py_is_rejected(tmp_path):
    app = _app(tmp_path, [])
    (app.root / "functions" / "big" / "main.py").write_text("x = 1\n")
    with pytest.raises(AppError, match="main.py"):
        bundle_entries(app, "Big", "gcp")


@pytest.mark.timeout(180)
def test_large_checkpoint_goes_to_gcs(emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app = _app(tmp_path, [])
    with EmulatorPlatform(app, emulators, tmp_path / "plat", env={"UNUM_USAGE_LOG": "1"}) as plat:
        sid = plat.start_session({"n": 1_200_000})  # > Firestore's 1 MiB document limit
        item = plat.wait_result(sid, timeout=120)
        assert item["status"] == "SUCCEEDED", (item, plat.logs())
        assert item["v"] == {"len": 1_200_000, "head": "xxx"}
        logs = plat.logs()
    assert "Traceback" not in logs
    usage = [json.loads(ln) for ln in logs.splitlines() if ln.startswith('{"unum_usage"')]
    big = [u for u in usage if u["function"] == "Big"]
    assert big and big[0]["unum_usage"].get("gcs_class_a", 0) >= 1  # the checkpoint went to GCS


def test_gcp_bundle_hook_refuses_a_runtime_only_archive_in_one_line(tmp_path):
    """The gcp bundle hook (unumctl/gcp/bundle.py) gets None for a runtime-only archive, as the
    registry's contract passes it: one line, not a KeyError from the manifest."""
    from unumctl.gcp.bundle import gcp_bundle_entries

    app_dir = tmp_path / "wordcount"
    shutil.copytree(ROOT / "examples" / "wordcount", app_dir,
                    ignore=shutil.ignore_patterns(".unum", "__pycache__"))
    app = load_app(app_dir)
    with pytest.raises(ValueError, match="no runtime-only archives"):
        gcp_bundle_entries(app, None)
    fn = sorted(app.manifest.functions)[0]
    assert [p for p, _ in gcp_bundle_entries(app, fn)] == ["main.py", "requirements.txt"]
