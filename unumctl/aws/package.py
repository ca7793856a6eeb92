"""Packaging for Lambda: requirements installed for the Lambda platform, not the build host.

Source: AWS Lambda developer guide, "Working with .zip file archives for Python Lambda
functions" (pip install --platform manylinux2014_<arch> --only-binary=:all:
--python-version <runtime> --implementation cp --target ...). The platform and Python version
come from the settings `clouds.aws.architecture` and `clouds.aws.runtime`
(deploy/settings.py), whatever Python runs unumctl. Installs are cached per (requirement set,
platform, Python version) under UNUMCTL_CACHE (default ~/.cache/unumctl), so the files, and
hence the deterministic archive, are identical on every rebuild.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..build import RUNTIME_DIR
from .settings import AWS_LAMBDA_RUNTIME, AwsSection
from ..manifest import App, check_requirement

__all__ = ["PLATFORMS", "PackagingError", "aws_settings", "cache_root", "install_requirements", "lambda_bundle_hook",
           "runtime_requirements", "site_dir", "site_entries", "site_is_complete"]

PLATFORMS = {"x86_64": "manylinux2014_x86_64", "arm64": "manylinux2014_aarch64"}
_SKIP_TOP = {"bin", "__pycache__"}


class PackagingError(ValueError):
    """Installing requirements for the Lambda platform failed (one line, with the fix)."""


def aws_settings(app: App, settings: AwsSection | None = None) -> AwsSection:
    """`settings` when given (resolved by the caller with its flags), else the manifest's
    `clouds.aws` resolved without flags (environment > manifest > default)."""
    if settings is not None:
        return settings
    section = app.manifest.clouds.section("aws")
    assert isinstance(section, AwsSection)
    return section.resolved()


def runtime_requirements() -> list[str]:
    """The in-function runtime's own requirements (runtime/requirements.txt)."""
    lines = (RUNTIME_DIR / "requirements.txt").read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def cache_root() -> Path:
    """The Lambda site cache: $UNUMCTL_CACHE/lambda-site (default ~/.cache/unumctl/lambda-site)."""
    return Path(os.environ.get("UNUMCTL_CACHE") or Path.home() / ".cache" / "unumctl") / "lambda-site"


def site_dir(reqs: list[str], arch: str, python: str) -> Path:
    """The cache directory of `reqs` installed for Lambda (`arch`: x86_64 | arm64, CPython
    version `python` such as "3.13"), whether or not it is filled yet; it is complete when it
    holds `.unum-complete` (site_is_complete). Raises KeyError for an unknown `arch`."""
    key = hashlib.sha256(json.dumps([sorted(set(reqs)), PLATFORMS[arch], python]).encode()).hexdigest()[:20]
    return cache_root() / key


def site_is_complete(site: Path) -> bool:
    """Whether install_requirements finished filling `site` (a site_dir)."""
    return (site / ".unum-complete").exists()


def install_requirements(reqs: list[str], arch: str,
                         python: str = AWS_LAMBDA_RUNTIME.removeprefix("python")) -> Path:
    """Directory holding `reqs` installed for Lambda (`arch`: x86_64 | arm64, CPython
    version `python` such as "3.13"), binary wheels only, cached.

    Raises PackagingError (one line) naming the requirement that has no wheel for that
    platform and Python, or the requirement set when pip fails otherwise."""
    for r in reqs:  # manifest entries are checked at load; this guards every other caller
        try:
            check_requirement(r)
        except ValueError as exc:
            raise PackagingError(f"requirements: {exc}") from None
    reqs = sorted(set(reqs))
    dest = site_dir(reqs, arch, python)
    if site_is_complete(dest):
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=".tmp-"))
    if reqs:
        cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
               "--no-compile", "--platform", PLATFORMS[arch], "--only-binary=:all:",
               "--python-version", python, "--implementation", "cp", "--target", str(tmp),
               "--", *reqs]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            missing = re.search(r"No matching distribution found for (\S+)", proc.stderr)
            if missing:
                raise PackagingError(
                    f"requirement {missing.group(1)!r} has no wheel for Lambda python{python} on "
                    f"{arch} ({PLATFORMS[arch]}, cp{python.replace('.', '')}; binary wheels only); "
                    "choose a version that publishes one, or set clouds.aws.runtime / "
                    "clouds.aws.architecture to a platform it supports")
            last = (proc.stderr.strip().splitlines() or ["?"])[-1]
            raise PackagingError(f"pip could not install {reqs} for Lambda ({PLATFORMS[arch]}, "
                                 f"cp{python.replace('.', '')}): {last}; check the requirement names and "
                                 "that a manylinux wheel exists")
    (tmp / ".unum-complete").write_text(json.dumps(reqs))
    if dest.exists():
        shutil.rmtree(dest, ignore_errors=True)
    try:
        tmp.rename(dest)
    except OSError:  # a concurrent build won the race; its install is identical
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def site_entries(site: Path) -> list[tuple[str, bytes]]:
    """(archive path, bytes) of an installed site directory, without bin/ and caches."""
    out = []
    for p in sorted(site.rglob("*")):
        rel = p.relative_to(site)
        if (not p.is_file() or rel.parts[0] in _SKIP_TOP or "__pycache__" in rel.parts
                or p.suffix == ".pyc" or rel.name == ".unum-complete"):
            continue
        out.append((rel.as_posix(), p.read_bytes()))
    return out


def lambda_bundle_hook(app: App, function: str | None,
                       settings: AwsSection | None = None) -> list[tuple[str, bytes]]:
    """The aws bundle hook (TargetSpec `bundle_hook`, unumctl/aws/spec.py): the function's
    requirements plus the runtime's, installed for the Lambda platform of `settings`
    (aws_settings: runtime and architecture). `function=None` means the app's error handler."""
    s = aws_settings(app, settings)
    reqs = runtime_requirements()
    if function is not None:
        reqs += app.manifest.functions[function].requirements
    return site_entries(install_requirements(reqs, s.architecture, s.python_version()))
