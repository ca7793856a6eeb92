"""Fault-injection campaign (CI: --campaign-runs=30 per example; `make campaign`: 200).

Crashes before/after the checkpoint and mid-invoke, duplicate and delayed/reordered
deliveries on every app (CI_FAULTS); SIGKILLs of instances (at a random point, as a timeout,
as the OOM killer, before the transaction commits: tools/fault_campaign.py DEFAULT_FAULTS) on
two apps, one with blob-sized values, since each kill costs a cold start (`make campaign`
draws them on every app). Invariants in tools/fault_campaign.py: every session completes with
the fault-free result, every execution of an invocation saw the same input (text-processing
has a nondeterministic function), only result items remain in the datastore and only the
result's blob in the blob store; a campaign that drew or landed no kill of a kind fails.

The campaign workloads (tools/campaign_apps: blob-sized random values, Checkpoint: false,
gc eager, flaky code with Retry, empty Maps, Step Functions `$$`) run at --campaign-runs
too: together 40-80 s at 30 runs on 2 shared cores."""

from pathlib import Path

import pytest
import yaml

from runtime.local.datastore import FileBlobStore, SqliteDatastore
from collections import Counter

from tools.fault_campaign import (CAMPAIGN_APPS, DEFAULT_FAULTS, ROOT, app_dirs, at_least_once_consumers,
                                  blob_leftovers, instrumented_copy, main, missing_kinds, run_example)
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import example_dirs

WORKLOADS = [p for p in app_dirs() if p.parent == CAMPAIGN_APPS]
# per-app CI runs: the fault mix without kills (a kill is a cold start: ~10x the time on
# loop-counter); test_fault_campaign_kills draws the kills
CI_FAULTS = "crash=0.08,duplicate=0.15,delay=0.25,max_delay_ms=25"


def _check(report, runs):
    assert report.stats["crashes"] > 0 and report.stats["duplicated"] > 0 and report.stats["delayed"] > 0
    assert not report.failures, "\n".join(report.failures[:10])
    assert report.passed == runs


# Python workflows in the campaign: the probe wraps their steps through the IR app they
# compile to (tools/fault_campaign.py as_ir_app). The other `-py` examples compile to the IR
# of their twins (tests/unumctl/test_python_workflow.py), whose campaign runs here; each
# costs 10-30 s at 30 runs.
PY_CAMPAIGN = {"loop-counter-py", "text-processing-py"}


def _campaign_examples() -> list[Path]:
    """The examples with an expected output, Python workflows among them those in PY_CAMPAIGN."""
    return [p for p in example_dirs() if (p / "expected_output.json").exists()
            and ("python" not in yaml.safe_load((p / "unumctl.yaml").read_text())["workflow"]
                 or p.name in PY_CAMPAIGN)]


def test_the_probe_wraps_every_step_of_a_python_workflow(tmp_path):
    """A Python workflow's copy becomes the IR app it compiles to, with every step's handler
    the probe's (test_fault_campaign[loop-counter-py] runs such a copy)."""
    example = next(p for p in example_dirs() if p.name == "nested-map-py")
    log = tmp_path / "probe.log"
    copy = instrumented_copy(example, tmp_path / "app", log)
    app = load_app(copy)
    assert {n: f.handler for n, f in app.manifest.functions.items()} == dict.fromkeys(
        load_app(example).workflow.functions, "unum_probe.handler")
    assert {n: f.to_dict() for n, f in app.workflow.functions.items()} == {
        n: f.to_dict() for n, f in load_app(example).workflow.functions.items()}


@pytest.mark.campaign
@pytest.mark.parametrize("example", _campaign_examples(), ids=lambda p: p.name)
def test_fault_campaign(example, campaign_runs):
    report = run_example(example, campaign_runs, CI_FAULTS)
    print(f"{example.name}: {report.as_dict()}")
    _check(report, campaign_runs)


def test_workloads_are_found():
    names = {p.name for p in WORKLOADS}
    assert {"blob-random", "no-checkpoint", "gc-eager", "flaky-retry", "empty-map-nested",
            "empty-map-top", "sfn-context", "map-loop", "sfn-branches"} <= names


@pytest.mark.campaign
@pytest.mark.parametrize("app", WORKLOADS, ids=lambda p: p.name)
def test_fault_campaign_workloads(app, campaign_runs):
    report = run_example(app, campaign_runs, CI_FAULTS)
    print(f"{app.name}: {report.as_dict()}")
    _check(report, campaign_runs)


def test_invariant_2_excludes_exactly_the_consumers_of_non_checkpointed_functions():
    assert at_least_once_consumers(load_app(CAMPAIGN_APPS / "no-checkpoint")) == {"Use"}
    assert at_least_once_consumers(load_app(CAMPAIGN_APPS / "gc-eager")) == set()


def test_invariant_2_excludes_the_later_members_of_a_fused_group():
    """text-processing with its whole Parallel region fused (tools/campaign_plans): the later
    members run on the previous member's uncommitted output, so a group re-run before its one
    commit gives CreatePost and Publish other short links (ShortenUrl is random); the head
    Ingest runs on a committed input and stays checked. Without the exclusion, `make
    campaign-plans` failed 25 of 200 text-processing sessions with "CreatePost ran with 2
    different inputs"."""
    from unumctl.tuning import colocate
    app = colocate.apply(load_app(ROOT / "examples" / "text-processing"),
                         [["Ingest", "UserMention", "FindUrl", "ShortenUrl", "CreatePost", "Publish"]])
    assert at_least_once_consumers(app) == {"UserMention", "FindUrl", "ShortenUrl", "CreatePost", "Publish"}


@pytest.mark.campaign
def test_fault_campaign_kills(campaign_runs):
    """SIGKILLs at random points, timeout and OOM kills, kills before the commit, with the
    other faults, on a chain with a nondeterministic function and on blob-sized values:
    every kind drawn and landed, every session right."""
    totals: Counter = Counter()
    for app in (ROOT / "examples" / "text-processing", CAMPAIGN_APPS / "blob-random"):
        report = run_example(app, campaign_runs, DEFAULT_FAULTS)
        print(f"{app.name}: {report.as_dict()}")
        assert not report.failures, "\n".join(report.failures[:10])
        totals.update(report.stats)
    assert missing_kinds(totals, DEFAULT_FAULTS) == [], dict(totals)


def test_a_campaign_that_draws_no_kill_fails(capsys):
    """The campaign's own check (main): a kill kind with a non-zero rate never drawn fails
    the run although every session is right (a rate too small for 2 sessions)."""
    assert main(["--runs", "2", "--examples", "empty-map-top", "--faults", "kill=0.000001,kill_before_commit=1"]) == 1
    err = capsys.readouterr().err
    assert "empty-map-top: 2/2 sessions passed" in err
    assert "campaign: drew no kill in 2 sessions" in err
    stats = Counter({"kill_drawn": 3, "kills": 0, "oom_drawn": 1, "out_of_memory": 1})
    assert missing_kinds(stats, "kill=0.1,oom=0.1,timeout=0.1") == ["landed no kill", "drew no timeout"]


def test_blob_leftovers_names_the_blobs_the_result_does_not(tmp_path):
    """Invariant 4's checker catches a leaked blob (planted here) and keeps the result's."""
    ds, blobs = SqliteDatastore(tmp_path / "unum.db"), FileBlobStore(tmp_path / "blobs")
    blobs.put("s1", "result/abc", b"1")
    blobs.put("s1", "payload/B/def", b"2")
    blobs.put("s2", "payload/C/0", b"3")
    ds.put("s1", "result", {"status": "SUCCEEDED", "blob": "result/abc"}, 1e12)
    ds.put("s2", "result", {"status": "SUCCEEDED", "v": 1}, 1e12)
    assert blob_leftovers(ds, tmp_path / "blobs") == {"s1": ["payload/B/def"], "s2": ["payload/C/0"]}
    blobs.delete("s1", ["payload/B/def"])
    blobs.sweep("s2")
    assert blob_leftovers(ds, tmp_path / "blobs") == {}
    ds.close()
