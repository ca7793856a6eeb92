"""tools/lambda_site.py (`make lambda-site`): the runtime's requirements installed for Lambda
into the site cache outside pytest, since no test may reach PyPI (tests/lambda_site_check.py).

Offline like tests/aws/test_package.py: pip reads only a local directory of wheels
(its `wheelhouse` fixture) and the cache is a temporary UNUMCTL_CACHE.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools import lambda_site
from unumctl.aws.package import install_requirements, runtime_requirements
from unumctl.aws.settings import AWS_ARCHITECTURES, AWS_LAMBDA_RUNTIMES

from tests.aws.test_package import wheelhouse  # noqa: F401  (the fixture)

ROOT = Path(__file__).resolve().parents[2]


def test_the_suites_lambda_site_cache_is_filled():
    """The cache the suite's Lambda archives read is filled (else `make lambda-site`)."""
    dirs = lambda_site.missing()
    if dirs:
        pytest.fail(f"the Lambda site cache is not filled: run `make lambda-site` (tools/lambda_site.py): "
                    f"{', '.join(map(str, dirs))}", pytrace=False)


def _lines(capsys) -> list[list[str]]:
    return [ln.split() for ln in capsys.readouterr().out.splitlines()]


def test_fills_the_key_the_packager_reads_once(wheelhouse, capsys):  # noqa: F811
    assert lambda_site.main(["--check"]) == 1
    assert [ln[:3] for ln in _lines(capsys)] == [["missing", "python3.13", "x86_64"]]
    assert lambda_site.main([]) == 0
    (state, _, _, d), = _lines(capsys)
    assert state == "installed"
    # the very directory the packager uses for the default runtime and architecture
    assert Path(d) == install_requirements(runtime_requirements(), "x86_64", "3.13")
    assert (Path(d) / "jsonata_python" / "__init__.py").exists()
    assert lambda_site.main([]) == 0 and _lines(capsys)[0][0] == "cached"
    assert lambda_site.main(["--check"]) == 0 and lambda_site.missing() == []


def test_all_and_chosen_keys(wheelhouse, capsys):  # noqa: F811
    assert lambda_site.main(["--architecture", "arm64"]) == 0
    assert [ln[:3] for ln in _lines(capsys)] == [["installed", "python3.13", "arm64"]]
    assert lambda_site.main(["--all"]) == 0
    lines = _lines(capsys)
    assert sorted((rt, arch) for _, rt, arch, _ in lines) == sorted(
        (rt, arch) for rt in AWS_LAMBDA_RUNTIMES for arch in AWS_ARCHITECTURES)
    assert [ln[0] for ln in lines if ln[1:3] == ["python3.13", "arm64"]] == ["cached"]
    assert len({ln[3] for ln in lines}) == len(lines)  # one directory per key


INNER_TEST = '''
from unumctl.aws.package import PackagingError


def test_packages():
    raise PackagingError("requirement 'jsonata-python>=0.7' has no wheel for Lambda python3.13 on x86_64")


def test_other():
    assert 1 == 2, "an unrelated failure"
'''


def _inner_run(tmp_path: Path, cache: Path) -> str:
    """tests/lambda_site_check.py's hooks in a pytest of their own, with `cache` as UNUMCTL_CACHE."""
    d = tmp_path / "inner"
    d.mkdir()
    (d / "conftest.py").write_text("from tests.lambda_site_check import pytest_report_header, "
                                   "pytest_runtest_makereport  # noqa: F401\n")
    (d / "test_inner.py").write_text(INNER_TEST)
    # without CI: pytest prints the short summary's messages whole when CI is set, which would
    # repeat the hint a third time (pytest's "CI" handling of the short test summary)
    env = {**{k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}, "UNUMCTL_CACHE": str(cache),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(d), str(d)],
                          capture_output=True, text=True, env=env, cwd=d, timeout=120)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def test_a_packaging_failure_for_want_of_the_cache_names_make_lambda_site(tmp_path):
    out = _inner_run(tmp_path, tmp_path / "empty-cache")
    hint = "is not filled (pip may not reach PyPI inside pytest): run `make lambda-site`"
    assert out.count(hint) == 2, out  # the session header and test_packages's report
    assert "has no wheel for Lambda" not in out, out
    assert "an unrelated failure" in out, out  # other failures keep their report


def test_with_the_cache_filled_the_packaging_failure_is_reported_as_it_is(tmp_path):
    cache = tmp_path / "cache"
    (_, _, d), = lambda_site.site_dirs(lambda_site.default_keys())
    filled = cache / "lambda-site" / d.name
    filled.mkdir(parents=True)
    (filled / ".unum-complete").write_text("[]")
    out = _inner_run(tmp_path, cache)
    assert "make lambda-site" not in out, out
    assert "has no wheel for Lambda" in out, out
