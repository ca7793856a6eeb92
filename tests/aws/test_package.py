"""Lambda archives are built for the configured runtime and architecture (issue 23 item 2):
`clouds.aws.runtime` / `.architecture` (flag > environment > manifest > default) choose the
wheels pip installs, whatever Python runs unumctl; a requirement without a wheel for that
platform is a one-line error.

Offline: pip reads only a local directory of wheels made here (PIP_NO_INDEX, PIP_FIND_LINKS),
each wheel recording the tag it was built for, so the installed file shows which one pip chose.
"""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from unumctl.aws.package import PackagingError, install_requirements, lambda_bundle_hook
from unumctl.cli import app as cli
from unumctl.aws.settings import AWS_LAMBDA_RUNTIME
from unumctl.manifest import AppError
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

TAGS = ["cp313-cp313-manylinux2014_x86_64", "cp313-cp313-manylinux2014_aarch64",
        "cp312-cp312-manylinux2014_x86_64"]


def make_wheel(d: Path, name: str, version: str, tag: str, body: str) -> Path:
    """A minimal valid wheel (PEP 427) holding `<name>/__init__.py` = body."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {f"{dist}/__init__.py": body,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: false\nTag: {tag}\n"}
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    whl = d / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(whl, "w") as zf:
        for path, text in files.items():
            zf.writestr(path, text)
    return whl


@pytest.fixture
def wheelhouse(tmp_path, monkeypatch):
    """A find-links directory: `unumfixture` for each of TAGS (its __init__ says which), and
    pure-Python stand-ins for the runtime's own requirements; pip uses nothing else."""
    d = tmp_path / "wheels"
    d.mkdir()
    for tag in TAGS:
        make_wheel(d, "unumfixture", "1.0", tag, f"TAG = {tag!r}\n")
    for name in ("simpleeval", "jsonpath-ng", "jsonata-python", "regex"):
        make_wheel(d, name, "9999.0", "py3-none-any", "")  # above every lower bound (regex>=2024.4)
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(d))
    monkeypatch.setenv("UNUMCTL_CACHE", str(tmp_path / "cache"))
    return d


def _tag(site: Path) -> str:
    return (site / "unumfixture" / "__init__.py").read_text()


def test_wheels_are_chosen_for_the_lambda_python_and_architecture(wheelhouse):
    assert "cp313-cp313-manylinux2014_aarch64" in _tag(install_requirements(["unumfixture"], "arm64", "3.13"))
    assert "cp313-cp313-manylinux2014_x86_64" in _tag(install_requirements(["unumfixture"], "x86_64", "3.13"))
    assert "cp312-cp312-manylinux2014_x86_64" in _tag(install_requirements(["unumfixture"], "x86_64", "3.12"))


def test_a_requirement_without_a_wheel_is_one_line(wheelhouse):
    with pytest.raises(PackagingError) as exc:
        install_requirements(["unumfixture"], "arm64", "3.12")
    msg = str(exc.value)
    assert "\n" not in msg
    assert "'unumfixture' has no wheel for Lambda python3.12 on arm64 (manylinux2014_aarch64" in msg
    assert "clouds.aws.runtime" in msg


def _app(tmp_path: Path, aws: dict | None) -> Path:
    root = make_app(tmp_path / "app", "pkg", {"One": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    m = yaml.safe_load((root / "unumctl.yaml").read_text())
    m["functions"]["One"]["requirements"] = ["unumfixture"]
    m["clouds"] = {"aws": aws or {}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(m))
    return root


def test_the_packager_follows_the_settings(wheelhouse, tmp_path):
    """Manifest runtime/architecture reach pip; a flag (resolved settings) overrides them."""
    app = load_app(_app(tmp_path, {"runtime": "python3.12", "architecture": "x86_64"}))
    entries = dict(lambda_bundle_hook(app, "One"))
    assert b"cp312-cp312-manylinux2014_x86_64" in entries["unumfixture/__init__.py"]
    flags = app.manifest.clouds.section("aws").resolved(runtime="python3.13", architecture="arm64")
    entries = dict(lambda_bundle_hook(app, "One", flags))
    assert b"cp313-cp313-manylinux2014_aarch64" in entries["unumfixture/__init__.py"]


def test_runtime_default_and_bad_values(tmp_path):
    app = load_app(_app(tmp_path, None))
    assert app.manifest.clouds.section("aws").runtime == AWS_LAMBDA_RUNTIME == "python3.13"
    root = _app(tmp_path / "bad", {"runtime": "python3.11"})
    with pytest.raises(AppError, match=r"clouds\.aws\.runtime: 'python3.11' must be one of python3.12, "
                                       r"python3.13 "):
        load_app(root)


def test_bad_flags_are_one_line(tmp_path):
    root = _app(tmp_path, None)
    for flag, value, field in (("--lambda-runtime", "python2.7", "runtime"), ("--architecture", "x86", "architecture")):
        result = CliRunner().invoke(cli, ["build", str(root), "--cloud", "aws", flag, value])
        lines = [ln for ln in result.stderr.splitlines() if ln.startswith("unumctl:")]
        assert result.exit_code == 2 and len(lines) == 1, result.stderr
        assert f"{field}:" in lines[0] and value in lines[0]
