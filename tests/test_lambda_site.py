"""tools/lambda_site.py (`make lambda-site`): the runtime's requirements installed for Lambda
into the site cache outside pytest, since no test may reach PyPI (tests/lambda_site_check.py).

Offline like tests/test_lambda_packaging.py: pip reads only a local directory of wheels
(its `wheelhouse` fixture) and the cache is a temporary UNUMCTL_CACHE.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tools import lambda_site
from unumctl.aws.package import install_requirements, runtime_requirements
from unumctl.aws.settings import AWS_ARCHITECTURES, AWS_LAMBDA_RUNTIMES

from .test_lambda_packaging import wheelhouse  # noqa: F401  (the fixture)


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
