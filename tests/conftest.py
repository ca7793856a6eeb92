import pytest


def pytest_addoption(parser):
    parser.addoption("--campaign-runs", type=int, default=30,
                     help="seeded fault-injection runs per example (CI: 30, long campaign: 200)")
    _aws_addoption(parser)


@pytest.fixture
def campaign_runs(request):
    return request.config.getoption("--campaign-runs")


def pytest_configure(config):
    config.addinivalue_line("markers", "aws: tests of the aws target")


def _aws_addoption(parser):
    parser.addoption("--aws-all-examples", action="store_true", default=False,
                     help="run the Terraform apply/plan/destroy cycle on moto for every example")
