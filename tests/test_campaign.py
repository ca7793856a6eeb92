"""Fault-injection campaign (CI: --campaign-runs=30 per example; `make campaign`: 200).

Crashes before/after the checkpoint and mid-invoke, duplicate and delayed/reordered
deliveries; invariants in tools/fault_campaign.py: every session completes with the fault-free
result, every execution of an invocation saw the same input (text-processing has a
nondeterministic function), and only result items remain in the datastore."""

import pytest

from tools.fault_campaign import run_example

from .helpers import example_dirs


@pytest.mark.campaign
@pytest.mark.parametrize("example", [p for p in example_dirs() if (p / "expected_output.json").exists()],
                         ids=lambda p: p.name)
def test_fault_campaign(example, campaign_runs):
    report = run_example(example, campaign_runs)
    print(f"{example.name}: {report.as_dict()}")
    assert report.stats["crashes"] > 0 and report.stats["duplicated"] > 0 and report.stats["delayed"] > 0
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.passed == campaign_runs
