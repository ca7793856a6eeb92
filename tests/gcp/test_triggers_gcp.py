"""Triggers on the GCP target (docs/triggers.md "GCP"; unumctl/gcp/sources.py,
runtime/gcp/sources.py).

Offline: the rendered triggers.tf of an app with every GCP kind is checked against the
pinned google provider schema and by the dependency check (APIs, agents, IAM propagation);
the check catches a trigger function whose wait on its grants is removed on purpose; the
public opt-in alone grants allUsers; an eventbridge trigger and a schedule with no cron
equivalent are refused in one line; EventBridge Scheduler expressions map to unix-cron.

On the emulators (Firestore, Pub/Sub): the trigger function (runtime/gcp/sources.py
TriggerFunction, in process over the BUILT entry archive) gets each event of each source
twice, some out of order: a Pub/Sub message's CloudEvent data, a Cloud Storage
`finalized` StorageObjectData, Cloud Scheduler's request with its schedule-time header, an
HTTPS request with an Idempotency-Key. Our emulation has no Eventarc, Cloud Scheduler or
HTTPS front, so the function is handed the events in their documented shapes; what it
starts goes to the entry's topic on the Pub/Sub emulator, and the entry (runtime/gcp/entry.py)
runs each published start: one session per event, with the event's input.
"""

from __future__ import annotations

import base64
import json
import sys
import time
import uuid
import zipfile

import pytest

from runtime.bundle import FUNCTION_FILE
from unumctl.build import build_function
from unumctl.manifest import AppError
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.triggers import echo_app

hcl2 = pytest.importorskip("hcl2", reason="python-hcl2 not installed (pip install -e '.[test]')")

from unumctl.gcp.checks import tf_deps, tf_schema  # noqa: E402
from unumctl.gcp.sources import cron  # noqa: E402

GCP_KINDS = ("web", "open", "nightly", "orders", "uploads")
FLAGS = {"project": "demo-project", "region": "europe-west1"}


def _render(tmp_path, only=GCP_KINDS):
    from unumctl.gcp.render import render

    app = load_app(echo_app(tmp_path / "app", only=only))
    out, _ = render(app, deployment(app, "gcp", **FLAGS))
    return out


def test_every_gcp_kind_renders_schema_and_dependency_clean(tmp_path):
    from unumctl.gcp.render import PROVIDER_VERSION

    out = _render(tmp_path)
    text = (out / "triggers.tf").read_text()
    assert text.count('resource "google_cloudfunctions2_function"') == len(GCP_KINDS)
    assert 'entry_point     = "handle_trigger_http"' in text and 'entry_point     = "handle_trigger_event"' in text
    assert text.count('member   = "allUsers"') == 1 and 'resource "google_cloud_run_service_iam_member" "trigger_open_public"' in text
    assert 'event_type            = "google.cloud.storage.object.v1.finalized"' in text
    assert 'event_type            = "google.cloud.pubsub.topic.v1.messagePublished"' in text
    assert 'schedule  = "0 2 * * *"' in text and "oidc_token {" in text
    problems, _ = tf_schema.check_dir(out, tf_schema.load_schema(PROVIDER_VERSION))
    assert problems == []
    findings, resources = tf_deps.check(out)
    assert findings == [] and resources > 0
    assert not (_render(tmp_path / "none", only=()) / "triggers.tf").exists()


def test_dependency_check_catches_a_trigger_function_that_does_not_wait_for_its_grants(tmp_path):
    out = _render(tmp_path, only=("uploads",))
    tf = out / "triggers.tf"
    tf.write_text(tf.read_text().replace("depends_on = [time_sleep.trigger_grants]",
                                         "depends_on = [google_project_iam_member.triggers_event_receiver]"))
    findings, _ = tf_deps.check(out)
    assert any("trigger_uploads" in f and "time_sleep" in f for f in findings), findings


def test_eventbridge_and_uncronnable_schedules_are_refused(tmp_path):
    app = load_app(echo_app(tmp_path / "a", only=("audit",)))
    with pytest.raises(AppError, match=r"triggers\.audit\.type: eventbridge is an AWS source"):
        deployment(app, "gcp", **FLAGS)
    root = echo_app(tmp_path / "b", only=("nightly",))
    (root / "unumctl.yaml").write_text((root / "unumctl.yaml").read_text().replace(
        "cron(0 2 * * ? *)", "cron(0 2 L * ? *)"))
    with pytest.raises(AppError, match=r"triggers\.nightly\.expression: .* no Cloud Scheduler cron equivalent"):
        deployment(load_app(root), "gcp", **FLAGS)


@pytest.mark.parametrize("expression, unix", [
    ("rate(1 minute)", "* * * * *"), ("rate(15 minutes)", "*/15 * * * *"), ("rate(6 hours)", "0 */6 * * *"),
    ("rate(1 day)", "0 0 * * *"), ("cron(0 2 * * ? *)", "0 2 * * *"), ("cron(30 9 ? * 2-6 *)", "30 9 * * 1-5"),
    ("cron(0 0 ? * MON *)", "0 0 * * MON")])
def test_eventbridge_expressions_as_unix_cron(expression, unix):
    assert cron(expression, "w") == unix


@pytest.mark.parametrize("expression", ["rate(7 minutes)", "rate(2 days)", "cron(0 0 1 1 ? 2030)", "cron(0 0 ? * 6#3 *)"])
def test_expressions_without_a_cron_equivalent(expression):
    with pytest.raises(ValueError, match="no Cloud Scheduler cron equivalent"):
        cron(expression, "triggers.t.expression")


# ------------------------------------------------------------------ duplicate delivery
def _bundle(tmp_path, name):
    app = load_app(echo_app(tmp_path / "app", name, only=GCP_KINDS))
    art = build_function(app, "Echo", "gcp", tmp_path / "build")
    src = tmp_path / "bundle"
    with zipfile.ZipFile(art.path) as zf:
        zf.extractall(src)
    sys.modules.pop(json.loads((src / FUNCTION_FILE).read_text())["handler"].rpartition(".")[0], None)
    return src


def _http(body, headers):
    from runtime.gcp.sources import http_event
    return http_event("POST", "/", headers, json.dumps(body), uuid.uuid4().hex)


def test_every_source_delivered_twice_starts_one_session_per_event(emulators, tmp_path):
    from google.cloud import pubsub_v1

    from runtime.gcp.entry import GcpFunction
    from runtime.gcp.sources import TriggerFunction

    name = f"tg{uuid.uuid4().hex[:6]}"
    src = _bundle(tmp_path, name)
    env = {**emulators.env, "UNUM_PROJECT": emulators.project, "UNUM_GIVE_UP_SECONDS": "3600", "UNUM_ENTRY": "Echo"}
    entry = GcpFunction(src, env)
    publisher, subscriber = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    topic = entry.invoker.topic_path("Echo")
    publisher.create_topic(name=topic)
    sub = subscriber.subscription_path(emulators.project, f"{name}-entry")
    subscriber.create_subscription(name=sub, topic=topic)
    fns = {t: TriggerFunction(src, {**env, "UNUM_TRIGGER": t}) for t in ("web", "nightly", "orders", "uploads")}

    reqs = [_http({"n": i}, {"Idempotency-Key": f"k-{i}"}) for i in range(3)]
    answers = [fns["web"].http(e) for e in reqs + reqs[::-1]]
    assert {a[1] for a in answers} == {202} and answers[0][0] == answers[-1][0]
    ticks = [_http({"mode": "full"}, {"X-CloudScheduler-ScheduleTime": f"2026-12-0{d}T02:00:00Z"}) for d in (1, 2)]
    assert {fns["nightly"].http(e)[1] for e in ticks + ticks[::-1]} == {200}
    msgs = [{"message": {"data": base64.b64encode(json.dumps({"order": i}).encode()).decode(),
                         "messageId": f"{name}-{i}", "publishTime": "2026-12-01T00:00:00Z", "attributes": {}},
             "subscription": "projects/p/subscriptions/eventarc"} for i in range(3)]
    for m in msgs + [msgs[2], msgs[0], msgs[1]]:
        fns["orders"].start(m)
    objects = [{"kind": "storage#object", "bucket": "b", "name": f"in/{i}.json", "generation": str(1700 + i),
                "size": "2", "etag": "e"} for i in range(2)]
    for o in objects + objects[::-1]:
        fns["uploads"].start(o)

    published: dict[str, dict] = {}
    deadline = time.monotonic() + 30
    while len(published) < 10 and time.monotonic() < deadline:
        resp = subscriber.pull(subscription=sub, max_messages=50, timeout=5)
        for rm in resp.received_messages:
            entry.handle({"message": {"data": base64.b64encode(rm.message.data).decode(),
                                      "messageId": rm.message.message_id, "publishTime": "2099-01-01T00:00:00Z",
                                      "attributes": {}}, "subscription": sub})
            published.setdefault(json.loads(rm.message.data)["Session"], {})
        if resp.received_messages:
            subscriber.acknowledge(subscription=sub, ack_ids=[m.ack_id for m in resp.received_messages])
    time.sleep(1)
    extra = subscriber.pull(subscription=sub, max_messages=50, timeout=3).received_messages
    assert extra == [] and len(published) == 3 + 2 + 3 + 2  # one start per event, none for a redelivery
    inputs = []
    for session in published:
        item = entry.ds.get(session, "result")
        assert item is not None and item["status"] == "SUCCEEDED", (session, item)
        inputs.append(item["v"]["input"])
    for want in [{"n": i} for i in range(3)] + [{"order": i} for i in range(3)]:
        assert want in inputs
    assert sum(1 for i in inputs if i == {"mode": "full"}) == 2
    assert sorted(i["key"] for i in inputs if isinstance(i, dict) and "key" in i) == ["in/0.json", "in/1.json"]
