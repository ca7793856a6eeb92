"""Fault-injection campaign (CI: --campaign-runs=30 per example; `make campaign`: 200).

Crashes before/after the checkpoint and mid-invoke, duplicate and delayed/reordered
deliveries; invariants in tools/fault_campaign.py: every session completes with the fault-free
result, every execution of an invocation saw the same input (text-processing has a
nondeterministic function), and only result items remain in the datastore.

The campaign workloads (tools/campaign_apps: blob-sized random values, Checkpoint: false,
gc eager, flaky code with Retry, empty Maps, Step Functions `$$`) run at --campaign-runs
too: together 40-80 s at 30 runs on 2 shared cores."""

import pytest

from tools.fault_campaign import CAMPAIGN_APPS, app_dirs, at_least_once_consumers, run_example
from unumctl.manifest import load_app

from .helpers import example_dirs

WORKLOADS = [p for p in app_dirs() if p.parent == CAMPAIGN_APPS]


def _check(report, runs):
    assert report.stats["crashes"] > 0 and report.stats["duplicated"] > 0 and report.stats["delayed"] > 0
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.passed == runs


@pytest.mark.campaign
@pytest.mark.parametrize("example", [p for p in example_dirs() if (p / "expected_output.json").exists()],
                         ids=lambda p: p.name)
def test_fault_campaign(example, campaign_runs):
    report = run_example(example, campaign_runs)
    print(f"{example.name}: {report.as_dict()}")
    _check(report, campaign_runs)


def test_workloads_are_found():
    names = {p.name for p in WORKLOADS}
    assert {"blob-random", "no-checkpoint", "gc-eager", "flaky-retry", "empty-map-nested",
            "empty-map-top", "sfn-context", "map-loop", "sfn-branches"} <= names


@pytest.mark.campaign
@pytest.mark.parametrize("app", WORKLOADS, ids=lambda p: p.name)
def test_fault_campaign_workloads(app, campaign_runs):
    report = run_example(app, campaign_runs)
    print(f"{app.name}: {report.as_dict()}")
    _check(report, campaign_runs)


def test_invariant_2_excludes_exactly_the_consumers_of_non_checkpointed_functions():
    assert at_least_once_consumers(load_app(CAMPAIGN_APPS / "no-checkpoint")) == {"Use"}
    assert at_least_once_consumers(load_app(CAMPAIGN_APPS / "gc-eager")) == set()
