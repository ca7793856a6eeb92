"""Sessions pinned to the version they started on, on the gcp target (docs/versions.md "On
GCP"), on the Google emulators: sessions held mid-way on one version while a version that
renames a function, adds a step and widens a fan-in from 2 to 3 is deployed beside it (its
own functions and topics, unumctl/gcp/emulate/platform.py); new sessions start on the new
one through `unumctl invoke --cloud gcp`'s path; every session ends with its own version's
result, `unumctl versions --cloud gcp` lists both with their running sessions, and the old
version's topics and record are collected once drained. The check is shown to catch a
runtime that publishes every invocation to the current version's topics. Fast: what the CLI
publishes into a running session (send-task-*, redrive) goes to its pinned version."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runtime.ports import Invoker
from unumctl.cli import app as cli_app
from unumctl.gcp.emulate.platform import EmulatorPlatform, collect_retired
from unumctl.gcp.versions import GcpVersions, PinnedInvoker
from unumctl.pipeline import load as load_app
from unumctl.targets import get_target

from tests.unumctl.local.test_versions import _wait_for, pinning_problems, write_version

N_DEFAULT = 10   # sessions per version in the slow tier
N_LONG = 50      # in the gcp_long tier (make test-gcp-all)


def _staged(root: Path, stage: str) -> Path:
    """The app at `root` deployed as stage `stage` (the manifest's `stage:`)."""
    m = root / "unumctl.yaml"
    m.write_text(m.read_text() + f"stage: {stage}\n")
    return root


def deploy_under_traffic_on_gcp(emulators, tmp_path: Path, n: int, results_within: float = 300,
                                collect_within: float = 60) -> dict:
    """`n` sessions on version 1 held at the Gate, version 2 deployed beside it, `n` sessions
    started on the current version as `unumctl invoke --cloud gcp` starts them, the gate
    released; returns the results (those without one within `results_within` s of the
    release: {"status": "no result"}), both ids, the listing while both ran (`unumctl
    versions --cloud gcp --json`), what was collected within `collect_within` s, the topics
    left of each version and version 2's own topics."""
    from google.cloud import pubsub_v1
    stage = "t" + uuid.uuid4().hex[:8]  # a deployment of its own on the shared emulators
    root = _staged(write_version(tmp_path / "app", 1), stage)
    held, barrier = tmp_path / "held", tmp_path / "barrier"
    held.mkdir()
    logs = tmp_path / "logs"

    def data(i: int) -> dict:
        return {"n": i, "held": str(held), "barrier": str(barrier)}
    p1 = EmulatorPlatform(load_app(root), emulators, tmp_path / "emulated", log_dir=logs).start()
    platforms = [p1]
    try:
        for i in range(n):
            p1.start_session(data(i), f"old-{i}")
        _wait_for(lambda: len(list(held.iterdir())) >= n, 240, f"{n} sessions held at the gate")
        _staged(write_version(root, 2), stage)
        app2 = load_app(root)
        p2 = EmulatorPlatform(app2, emulators, tmp_path / "emulated", log_dir=logs).start()
        platforms.append(p2)
        target = get_target("gcp", app2)
        for i in range(n):
            target.start(data(i), f"new-{i}")
        out = CliRunner().invoke(cli_app, ["versions", str(root), "--cloud", "gcp", "--json"])
        assert out.exit_code == 0, out.output
        listing = json.loads(out.output)
        assert collect_retired(platforms) == []          # both have sessions that can still run
        barrier.touch()
        results = {}
        deadline = time.monotonic() + results_within
        for s in [f"old-{i}" for i in range(n)] + [f"new-{i}" for i in range(n)]:
            try:
                item = p2.wait_result(s, max(1.0, deadline - time.monotonic()))
            except TimeoutError:  # e.g. a fan-in that waits for a branch its version never had
                results[s] = {"status": "no result"}
                continue
            results[s] = {k: item.get(k) for k in ("status", "v")} if item["status"] == "SUCCEEDED" else item
        deadline = time.monotonic() + collect_within
        collected: list[str] = []
        while not collected and time.monotonic() < deadline:  # the pins go with the sessions' sweep
            collected = collect_retired(platforms)
            time.sleep(0.5)
        project = emulators.project
        topics = {t.name.rsplit("/", 1)[1] for t in pubsub_v1.PublisherClient().list_topics(
            request={"project": f"projects/{project}"})}
        after = target.versions()  # type: ignore[attr-defined]
        return {"results": results, "v1": p1.version, "v2": p2.version, "listing": listing,
                "collected": collected, "after": after,
                "old_topics": sorted(t for t in topics if t.startswith(p1.topic_prefix)),
                "new_topics": sorted(t for t in topics if t.startswith(p2.topic_prefix)),
                "v2_topics": sorted(p2.topics), "v2_functions": len(app2.workflow.functions)}
    finally:
        for p in platforms:
            p.stop()


def _check(rep: dict, n: int) -> None:
    assert rep["v1"] != rep["v2"]
    assert pinning_problems(rep["results"], n, n) == []
    running = {r["version"]: (r["running"], r["current"]) for r in rep["listing"]}
    assert running == {rep["v2"]: (n, True), rep["v1"]: (n, False)}
    assert rep["collected"] == [rep["v1"]], "version 1 was not collected after its sessions drained"
    assert rep["old_topics"] == [] and rep["new_topics"] == rep["v2_topics"]
    assert len(rep["v2_topics"]) == rep["v2_functions"]
    assert [r["version"] for r in rep["after"]] == [rep["v2"]]


@pytest.mark.slow
def test_sessions_finish_on_the_version_they_started_on(emulators, tmp_path):
    _check(deploy_under_traffic_on_gcp(emulators, tmp_path, N_DEFAULT), N_DEFAULT)


@pytest.mark.gcp_long
def test_fifty_sessions_finish_on_the_version_they_started_on(emulators, tmp_path):
    _check(deploy_under_traffic_on_gcp(emulators, tmp_path, N_LONG), N_LONG)


@pytest.mark.slow
def test_the_checker_catches_a_runtime_that_runs_every_invocation_on_the_current_version(
        emulators, tmp_path, monkeypatch):
    """Injected bug: every version's functions publish to one set of topics, the deployment's
    unversioned ones, whose push subscriptions a deploy points at the newest functions (one
    set of functions per app, as before versions): the old sessions continue on version 2
    and end with its result, or fail."""
    from unumctl.gcp import names
    from unumctl.gcp.emulate import platform
    monkeypatch.setattr(platform, "version_topic_prefix",
                        lambda app, stage, region, version: names.topic_prefix(app, stage, region))
    n = 3
    rep = deploy_under_traffic_on_gcp(emulators, tmp_path, n, results_within=45, collect_within=2)
    problems = pinning_problems(rep["results"], n, n)
    assert sorted(p.split(":")[0] for p in problems) == [f"old-{i}" for i in range(n)]


class _Records(GcpVersions):
    """The records of a deployment without a database: session -> pinned version, version ->
    topic prefix (None: collected)."""

    def __init__(self, pins: dict, prefixes: dict):
        self.pins, self.prefixes = pins, prefixes

    def pinned(self, session):
        return self.pins.get(session)

    def topic_prefix(self, version):
        return self.prefixes.get(version)


class _Recorder(Invoker):
    def __init__(self, prefix: str, calls: list):
        self.prefix, self.calls = prefix, calls

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend((self.prefix + fn, p["Session"]) for fn, p in calls)


def test_what_the_cli_publishes_into_a_session_goes_to_its_pinned_version():
    """send-task-* and redrive publish through PinnedInvoker: each call to the topics of its
    session's version, a session without a pin to the current version's; a session whose
    version was collected is refused naming it."""
    v1, v0 = "00000000000000a1", "00000000000000b0"
    calls: list = []
    inv = PinnedInvoker(_Records({"s1": v1, "s0": v0}, {v1: "app-dev-r-a1-"}),
                        lambda prefix: _Recorder(prefix, calls), "app-dev-r-b2-")
    inv.invoke_many([("F", {"Session": "s1"}), ("G", {"Session": "new"}), ("H", {"Session": "s1"})])
    assert sorted(calls) == [("app-dev-r-a1-F", "s1"), ("app-dev-r-a1-H", "s1"), ("app-dev-r-b2-G", "new")]
    with pytest.raises(RuntimeError, match=f"version {v0} of the app, which session s0 started on, was collected"):
        inv.invoke_many([("F", {"Session": "s0"})])
