import pytest


def pytest_addoption(parser):
    parser.addoption("--campaign-runs", type=int, default=30,
                     help="seeded fault-injection runs per example (CI: 30, long campaign: 200)")


@pytest.fixture
def campaign_runs(request):
    return request.config.getoption("--campaign-runs")
