"""examples/window-campaigns on the GCP adapter against the emulators (functions-framework
serving the built gcp bundles, Pub/Sub push subscriptions, Firestore): the ByTime window's
timer on GCP is a Cloud Scheduler job publishing to the consumer's topic (docs/ir.md), which
the emulators do not run: the test publishes the job's own rendered message (its base64
`data`) to that topic, as Cloud Scheduler does, and the window fires with every view
counted once."""

from __future__ import annotations

import base64
import json

import pytest

from runtime.triggers import window
from unumctl.deploy.appgraph import build
from unumctl.gcp.timers import timers as scheduler_jobs
from unumctl.pipeline import load as load_app
from unumctl.cost.measure import wait_closed, open_window

from unumctl_testing.apps import ROOT

pytestmark = pytest.mark.timeout(300)

EVENTS = [{"event_id": f"e-{i:03d}", "user_id": "u", "ad_id": f"ad-{(i * 13) % 100:03d}",
           "event_type": ("view", "click")[i % 3 == 1], "event_time": 1700000000 + i} for i in range(12)]


def test_campaign_window_on_gcp_emulators(emulators, tmp_path):
    from runtime.gcp.invoker import topic_id
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app = load_app(ROOT / "examples" / "window-campaigns")
    dep = build(app, "gcp")
    [job] = scheduler_jobs(dep.app, "dev", dep.timers)
    assert job["schedule"] == "* * * * *" and job["consumer"] == "Count"
    with EmulatorPlatform(app, emulators, tmp_path) as plat:
        topic = plat.publisher.topic_path(emulators.project, topic_id(app.name, "Count", plat.topic_prefix))

        def tick() -> None:  # what the Cloud Scheduler job publishes
            plat.publisher.publish(topic, data=base64.b64decode(job["data"])).result(timeout=30)

        try:
            # the emulators' database is shared with the other gcp tests (the example's own
            # run among them): close a window they left open, so this test's is fresh
            wait_closed(plat.ds, {"campaigns": open_window(plat.ds, "campaigns")}, tick=tick)
            first = open_window(plat.ds, "campaigns")
            for i, ev in enumerate(EVENTS):
                plat.start_session(ev, session=f"ev-{i}")
            for i in range(len(EVENTS)):
                assert plat.wait_result(f"ev-{i}", timeout=120)["status"] == "SUCCEEDED"
            # a late tick of another test may have closed a window among the events: this
            # test's objects are in the windows from `first` on, each in exactly one
            wait_closed(plat.ds, {"campaigns": open_window(plat.ds, "campaigns")}, tick=tick)
            items = [plat.wait_result(window.window_session("campaigns", j), timeout=120)
                     for j in range(first, open_window(plat.ds, "campaigns"))]
        except TimeoutError:
            pytest.fail(plat.logs())
    assert items and all(item["status"] == "SUCCEEDED" for item in items), items
    assert json.loads(base64.b64decode(job["data"])) == window.tick_payload("campaigns", None)
    views = sorted(e["event_id"] for e in EVENTS if e["event_type"] == "view")
    assert sorted(x for item in items for x in item["v"]["event_ids"]) == views
    assert sum(sum(item["v"]["counts"].values()) for item in items) == len(views)


def test_cost_harness_counts_the_window_consumer_on_gcp(emulators):
    """`unumctl cost --cloud gcp` on the window app (unumctl/gcp/measure.py measure_gcp):
    after the sessions the harness publishes the Cloud Scheduler job's message, waits for the
    window to close and counts the consumer session's Count execution (its usage record is
    filed under the window store's session, the tick's) and lists it. (Before: only the
    Ingest executions were measured.)"""
    from unumctl.gcp.measure import measure_gcp

    app_dir = ROOT / "examples" / "window-campaigns"
    m = measure_gcp(app_dir, json.loads((app_dir / "input.json").read_text()), sessions=2, emulators=emulators)
    assert sorted(f for f, _ in m["executions"]) == ["Count", "Ingest", "Ingest"]
    # the emulators are shared with the test above (the same database): the window the
    # measured sessions filled is the first one after those it fired
    [consumer] = m["windows"]["consumer_sessions"]
    assert m["windows"]["ticks"] == [["campaigns", 60.0]] and consumer.startswith("win-campaigns-")
