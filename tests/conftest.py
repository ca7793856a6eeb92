import pytest

# every test fails when it, or a process it started, reaches beyond 127.0.0.1 (tests/egress_guard.py)
from tests import egress_guard
from tests.egress_guard import (egress_attempts, pytest_runtest_call, pytest_runtest_setup,  # noqa: F401
                                pytest_runtest_teardown)


def pytest_addoption(parser):
    parser.addoption("--campaign-runs", type=int, default=30,
                     help="seeded fault-injection runs per example (CI: 30, long campaign: 200)")
    _aws_addoption(parser)


@pytest.fixture
def campaign_runs(request):
    return request.config.getoption("--campaign-runs")


def pytest_configure(config):
    egress_guard.configure(config)
    config.addinivalue_line("markers", "aws: tests of the aws target")
    config.addinivalue_line("markers", "aws_long: slow moto/Terraform cycles, deselected unless "
                                       "--aws-all-examples (make test-aws-all)")


def pytest_unconfigure(config):
    egress_guard.unconfigure(config)


def pytest_collection_modifyitems(config, items):
    """Long AWS cycles are deselected (not skipped) from the default run; `make test-aws-all`
    runs them."""
    if config.getoption("--aws-all-examples"):
        return
    keep = [i for i in items if i.get_closest_marker("aws_long") is None]
    if len(keep) != len(items):
        config.hook.pytest_deselected(items=[i for i in items if i.get_closest_marker("aws_long")])
        items[:] = keep


def _aws_addoption(parser):
    parser.addoption("--aws-all-examples", action="store_true", default=False,
                     help="run the Terraform apply/plan/destroy cycle on moto for every example")
