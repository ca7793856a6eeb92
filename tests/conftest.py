"""Options, markers and the two tiers of the suite (docs/testing.md).

The fast tier (`make check`: `pytest -m "not slow"`) is every test that runs in this process
or in short child processes; the full suite (`make test`) runs every test. A test is in the slow
tier, marked `slow`, when it starts something that takes seconds to come up or to run:
- by a fixture it uses, directly or through another fixture (SLOW_FIXTURES), so that a new test
  on moto_server, the GCP emulators or terraform is slow without a mark of its own;
- by a marker that implies it (SLOW_MARKERS: campaigns, the long AWS cycles);
- by its file (SLOW_MODULES: files whose tests start a browser or a corpus run without such a
  fixture);
- by the durations record (docs/test-durations.json, written by `make durations`): a test that
  took SLOW_SECONDS or more in the last recorded run (most of these run the local platform's
  worker processes, `unumctl invoke` or `unumctl serve`); a test the record does not name yet
  is fast until the record is refreshed;
- by hand, `@pytest.mark.slow`, for a single long test elsewhere.
tests/repo/test_tiers.py keeps docs/testing.md's lists equal to these.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

# every test fails when it, or a process it started, reaches beyond 127.0.0.1 (tests/egress_guard.py)
from tests import egress_guard
from tests.egress_guard import (egress_attempts, pytest_runtest_call, pytest_runtest_setup,  # noqa: F401
                                pytest_runtest_teardown)
# a test failing for want of `make lambda-site` says so in one line (tests/lambda_site_check.py)
from tests.lambda_site_check import pytest_report_header, pytest_runtest_makereport  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]

# fixture -> what it starts (the reason docs/testing.md gives)
SLOW_FIXTURES = {
    "moto_url": "moto_server with IAM enforcement (tests/aws/conftest.py)",
    "no_aws_endpoint": "the local platform's embedded moto_server",
    "emulators": "the Firestore and Pub/Sub emulators and the GCS stand-in (tests/gcp/conftest.py)",
    "tf_cli_config": "terraform with the hashicorp/aws provider mirror",
    "campaign_runs": "seeded fault-injection runs of every example",
    "wheel_venv": "a wheel built and installed into a fresh venv (tests/aws/test_wheel_install.py)",
}

# marker -> why it implies `slow`
SLOW_MARKERS = {
    "campaign": "a fault-injection campaign",
    "aws_long": "a long moto/Terraform cycle (deselected unless --aws-all-examples)",
    "gcp_long": "a long run on the Google emulators (deselected unless --gcp-all-examples)",
}

# marker -> the option that selects its tests (deselected, not skipped, without it)
LONG_MARKERS = {"aws_long": "--aws-all-examples", "gcp_long": "--gcp-all-examples"}

# test file (relative to the repository root) -> what its tests start
SLOW_MODULES: dict[str, str] = {
    "tests/runtime/asl/test_conformance.py": "the ASL conformance corpora through tools/asl_conformance.py",
    "tests/unumctl/observe/test_trace.py": "headless chromium driven by Playwright",
}

# the durations record: test id -> seconds (setup + call + teardown) in the last recorded run
DURATIONS = ROOT / "docs" / "test-durations.json"
SLOW_SECONDS = 1.0


@functools.lru_cache(maxsize=4)
def recorded(path: Path) -> dict[str, float]:
    """The record's seconds by test id (tests/x.py::name[param]); empty when the file is
    missing or unreadable (every test not slow by another rule is then fast)."""
    try:
        return {k: float(v) for k, v in json.loads(path.read_text())["tests"].items()}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def slow_reason(item: pytest.Item) -> str | None:
    """Why `item` belongs in the slow tier (a SLOW_* entry's text, or its recorded seconds), or
    None for the fast tier. Reads the item's markers, fixture closure, file path and the
    durations record."""
    if item.get_closest_marker("slow") is not None:
        return "marked slow"
    for name in SLOW_MARKERS:
        if item.get_closest_marker(name) is not None:
            return SLOW_MARKERS[name]
    for name in getattr(item, "fixturenames", ()):
        if name in SLOW_FIXTURES:
            return SLOW_FIXTURES[name]
    file = _file(item)
    if file in SLOW_MODULES:
        return SLOW_MODULES[file]
    rest = item.nodeid.split("::", 1)[1:]
    seconds = recorded(DURATIONS).get("::".join([file, *rest]))
    if seconds is not None and seconds >= SLOW_SECONDS:
        return f"{seconds:.1f} s in the durations record (docs/test-durations.json)"
    return None


def _file(item: pytest.Item) -> str:
    """The item's test file relative to the repository root, with / separators."""
    try:
        return Path(item.path).resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return item.nodeid.split("::", 1)[0]


def mark_tiers(items: list[pytest.Item]) -> None:
    """Adds the `slow` marker to every item slow_reason names, and records its tier (and
    reason) as user properties, which `--junitxml` reports write out (tools/suite_durations.py
    reads them)."""
    for item in items:
        reason = slow_reason(item)
        if reason is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        item.user_properties.append(("tier", "fast" if reason is None else "slow"))
        if reason is not None:
            item.user_properties.append(("slow_reason", reason))


def pytest_addoption(parser):
    parser.addoption("--campaign-runs", type=int, default=30,
                     help="seeded fault-injection runs per example (CI: 30, long campaign: 200)")
    _long_addoption(parser)


@pytest.fixture
def campaign_runs(request):
    return request.config.getoption("--campaign-runs")


def pytest_configure(config):
    egress_guard.configure(config)


def pytest_unconfigure(config):
    egress_guard.unconfigure(config)


@pytest.hookimpl(tryfirst=True)  # before `-m` selects on the markers added here
def pytest_collection_modifyitems(config, items):
    """The tiers first (mark_tiers) and `aws` on every test under tests/aws. Long AWS and
    GCP runs (LONG_MARKERS) are deselected (not skipped) from the default run;
    `make test-aws-all` and `make test-gcp-all` run them."""
    mark_tiers(items)
    for item in items:
        if _file(item).startswith("tests/aws/"):
            item.add_marker(pytest.mark.aws)
    off = [m for m, option in LONG_MARKERS.items() if not config.getoption(option)]
    keep = [i for i in items if not any(i.get_closest_marker(m) for m in off)]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i not in keep])
        items[:] = keep


def _long_addoption(parser):
    parser.addoption("--aws-all-examples", action="store_true", default=False,
                     help="run the Terraform apply/plan/destroy cycle on moto for every example")
    parser.addoption("--gcp-all-examples", action="store_true", default=False,
                     help="run every example on the Google emulators, the gcp_long ones too")
