"""The Lambda site cache in the suite: a test whose Lambda packaging fails because the cache is
empty says so in one line naming `make lambda-site`, instead of pip's no-wheel error.

Tests never reach PyPI (tests/egress_guard.py), so the runtime's requirements must be in
~/.cache/unumctl/lambda-site (or $UNUMCTL_CACHE) before pytest starts: `make lambda-site`
(tools/lambda_site.py) fills it, and `make test` / `make check` depend on it. When the keys the
suite packages (tools/lambda_site.py default_keys) are not filled, the session header names the
missing directories, and a failed test whose report shows the packager's pip failure (NEEDS_PIP)
or the guard stopping pip on its way to PyPI has its report replaced by MESSAGE. A test that sets
UNUMCTL_CACHE to a cache of its own (tests/aws/test_package.py) is not affected: the check
reads the cache of the session's environment.
"""

from __future__ import annotations

from typing import Any

import pytest

from tools.lambda_site import missing

# what the packager's PackagingError (unumctl/aws/package.py) or the egress guard print when pip
# could not reach PyPI
NEEDS_PIP = ("has no wheel for Lambda", "pip could not install", "getaddrinfo 'pypi.org'")
MESSAGE = ("the Lambda site cache {dirs} is not filled (pip may not reach PyPI inside pytest): "
           "run `make lambda-site` (tools/lambda_site.py, docs/testing.md) and run the tests again")
_STATE: dict[str, list[str]] = {}


def _missing() -> list[str]:
    """The unfilled cache directories of the session (computed once)."""
    if "missing" not in _STATE:
        _STATE["missing"] = [str(d) for d in missing()]
    return _STATE["missing"]


def pytest_report_header(config: Any) -> str | None:
    dirs = _missing()
    return MESSAGE.format(dirs=", ".join(dirs)) if dirs else None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: Any, call: Any) -> Any:
    report = yield
    if report.failed and _missing() and any(s in report.longreprtext for s in NEEDS_PIP):
        report.longrepr = MESSAGE.format(dirs=", ".join(_missing()))
    return report
