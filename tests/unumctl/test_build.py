"""Deterministic bundles: byte-identical zips for identical inputs, named by content hash,
rebuilt only when an input changes; bundle contents."""

import hashlib
import zipfile

from unumctl.build import build_app, build_function
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

ECHO = "def handler(event, context):\n    return event\n"


def test_bundles_are_deterministic_and_cached(tmp_path):
    root = make_app(tmp_path / "a", "build-app", {"One": ({"Start": True}, ECHO)})
    app = load_app(root)
    first = build_function(app, "One", "local", tmp_path / "out1")
    again = build_function(app, "One", "local", tmp_path / "out1")
    other_dir = build_function(app, "One", "local", tmp_path / "out2")
    assert first.rebuilt and not again.rebuilt and other_dir.rebuilt
    assert first.path.read_bytes() == other_dir.path.read_bytes()
    assert first.path.name == f"One-{hashlib.sha256(first.path.read_bytes()).hexdigest()[:16]}.zip"
    with zipfile.ZipFile(first.path) as zf:
        infos = zf.infolist()
        names = [i.filename for i in infos]
        assert names == sorted(names)
        assert {i.date_time for i in infos} == {(1980, 1, 1, 0, 0, 0)}
        assert {i.external_attr >> 16 for i in infos} == {0o100644}
        assert {"app.py", "unum_ir.json", "unum_function.json", "unum_entry.py",
                "runtime/engine.py", "runtime/local/entry.py"} <= set(names)
        assert not any(n.startswith("runtime/aws/") or n.startswith("runtime/gcp/") for n in names)


def test_rebuild_only_when_inputs_change(tmp_path):
    root = make_app(tmp_path / "a", "build-app", {"One": ({"Start": True, "Next": {"Name": "Two"}}, ECHO),
                                                   "Two": ({}, ECHO)})
    first = build_app(load_app(root), "local", tmp_path / "out")
    (root / "functions/two/app.py").write_text(ECHO + "# changed\n")
    second = build_app(load_app(root), "local", tmp_path / "out")
    assert not second["One"].rebuilt and second["One"].sha256 == first["One"].sha256
    assert second["Two"].rebuilt and second["Two"].sha256 != first["Two"].sha256
    assert not first["Two"].path.exists()  # the superseded archive is removed
