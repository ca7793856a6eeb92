"""Payloads against the Eventarc event limit, and the entry point declared in code (issue 23
item 2, GCP half).

Cloud Run functions deliver at most 512 KB per Eventarc event (cloud.google.com/functions/quotas,
"Max event size for event-driven functions"), and a Pub/Sub event carries the message data
base64-encoded. A value is published inline up to `PubSubInvoker.max_payload_bytes` and by
reference (a GCS object) above it, both by the engine (a function's output to its successor)
and by `invoke --cloud gcp` (the entry input); at the boundary the inline event, as Eventarc
builds it with the longest subscription name, fits. Runs on the Pub/Sub, Firestore and GCS
emulators, the engine and invoker real.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import uuid
import zipfile

import pytest

from runtime.bundle import FUNCTION_FILE
from runtime.gcp.invoker import MAX_EVENT_BYTES, PubSubInvoker
from runtime.session import entry_payload
from unumctl.build import build_function
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app

pytestmark = pytest.mark.timeout(180)
LIMIT = PubSubInvoker.max_payload_bytes


def _event_bytes(msg, project: str) -> int:
    """Size of the Eventarc event of a received Pub/Sub message: the CloudEvent's data is
    MessagePublishedData {"message": {"data": base64, "attributes", "messageId",
    "publishTime"}, "subscription"}, here with a 255-character subscription id (the longest
    Pub/Sub allows), plus its CloudEvent attributes (id, source, type, specversion, time)."""
    data = {"message": {"data": base64.b64encode(msg.data).decode(), "attributes": dict(msg.attributes),
                        "messageId": msg.message_id, "publishTime": msg.publish_time.isoformat()},
            "subscription": f"projects/{project}/subscriptions/{'s' * 255}"}
    attrs = {"id": msg.message_id, "source": f"//pubsub.googleapis.com/projects/{project}/topics/{'t' * 255}",
             "type": "google.cloud.pubsub.topic.v1.messagePublished", "specversion": "1.0",
             "time": msg.publish_time.isoformat()}
    return len(json.dumps(data).encode()) + len(json.dumps(attrs).encode())


@pytest.fixture
def pubsub(emulators):
    """(publisher, subscriber, create(topic) -> subscription path, pull(subscription) -> messages)."""
    from google.cloud import pubsub_v1

    pub, sub = pubsub_v1.PublisherClient(), pubsub_v1.SubscriberClient()
    made = []

    def create(topic: str) -> str:
        pub.create_topic(name=pub.topic_path(emulators.project, topic))
        path = sub.subscription_path(emulators.project, f"{topic}-pull-{uuid.uuid4().hex[:6]}")
        sub.create_subscription(request={"name": path, "topic": pub.topic_path(emulators.project, topic)})
        made.append(path)
        return path

    def pull(path: str, n: int) -> list:
        got = []
        for _ in range(50):
            resp = sub.pull(request={"subscription": path, "max_messages": n}, timeout=10)
            got += [r.message for r in resp.received_messages]
            if resp.received_messages:
                sub.acknowledge(request={"subscription": path, "ack_ids": [r.ack_id for r in resp.received_messages]})
            if len(got) >= n:
                return got
        raise TimeoutError(f"{path}: {len(got)} of {n} messages")

    yield pub, sub, create, pull
    for path in made:
        sub.delete_subscription(request={"subscription": path})


@pytest.fixture
def bucket(emulators):
    from google.cloud import storage

    name = f"unum-size-{uuid.uuid4().hex[:8]}"
    storage.Client(project=emulators.project).create_bucket(name)
    return name


def _blob(emulators, bucket: str, app: str, session: str, key: str) -> bytes:
    from google.cloud import storage

    from runtime.gcp.blobs import GcsBlobStore
    from runtime.names import payload_prefix
    return GcsBlobStore(storage.Client(project=emulators.project), bucket, payload_prefix(app)).get(session, key)


def test_function_output_at_the_boundary(emulators, tmp_path, pubsub, bucket):
    """A's output of exactly LIMIT bytes (compact JSON) goes to B inline and its event fits
    512 KB; one byte more goes by reference. Fails without the fix: the bound was 9 MB, so
    the inline event was ~12 MB."""
    from runtime.gcp.entry import GcpFunction

    _, _, create, pull = pubsub
    name = f"size-{uuid.uuid4().hex[:6]}"
    root = make_app(tmp_path / "app", name, {
        "A": ({"Start": True, "Next": {"Name": "B", "Type": "Scalar"}}, "def handler(e, c):\n    return 'x' * e\n"),
        "B": ({}, "def handler(e, c):\n    return len(e)\n")})
    app = load_app(root)
    art = build_function(app, "A", "gcp", tmp_path / "build")
    src = tmp_path / "bundle"
    with zipfile.ZipFile(art.path) as zf:
        zf.extractall(src)
    sys.modules.pop(json.loads((src / FUNCTION_FILE).read_text())["handler"].rpartition(".")[0], None)
    fn = GcpFunction(src, {**emulators.env, "UNUM_PROJECT": emulators.project, "UNUM_BUCKET": bucket,
                           "UNUM_GIVE_UP_SECONDS": "3600", "UNUM_DATABASE": "(default)"})
    sub_b = create(f"{name}-B")
    sizes = {"inline": LIMIT - 2, "blob": LIMIT - 1}  # a string of k characters is k + 2 bytes of JSON
    for label, k in sizes.items():
        payload = entry_payload(f"s-{label}", k)
        push = {"subscription": "projects/p/subscriptions/x",
                "message": {"data": base64.b64encode(json.dumps(payload).encode()).decode(),
                            "messageId": f"m-{label}", "publishTime": "2099-01-01T00:00:00Z", "attributes": {}}}
        fn.handle(push)
    got = {json.loads(m.data)["Session"]: m for m in pull(sub_b, 2)}
    inline, ref = got["s-inline"], got["s-blob"]
    assert json.loads(inline.data)["Data"] == {"Source": "http", "Value": "x" * sizes["inline"]}
    assert _event_bytes(inline, emulators.project) <= MAX_EVENT_BYTES
    data = json.loads(ref.data)["Data"]
    assert data["Source"] == "blob" and len(ref.data) < 2000
    assert json.loads(_blob(emulators, bucket, name, "s-blob", data["Value"])) == "x" * sizes["blob"]


def test_entry_input_at_the_boundary(emulators, tmp_path, pubsub, bucket, monkeypatch):
    """`invoke --cloud gcp` (GcpTarget.invoke) sends an entry input of LIMIT bytes inline and
    one byte more through GCS. Fails without the fix: the CLI published every input inline."""
    from unumctl.gcp.target import GcpTarget

    _, _, create, pull = pubsub
    name = f"entry-{uuid.uuid4().hex[:6]}"
    root = make_app(tmp_path / "app", name, {"A": ({"Start": True}, "def handler(e, c):\n    return e\n")})
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", emulators.project)
    monkeypatch.setenv("UNUM_BUCKET", bucket)
    target = GcpTarget(load_app(root))
    topic = target.model.entry_function.topic
    assert topic is not None  # the model names A's topic per stage and region (unumctl/gcp/names.py)
    sub_a = create(topic.name)
    inline_session, _ = target.invoke("y" * (LIMIT - 2), wait=False, timeout=10)
    blob_session, _ = target.invoke("y" * (LIMIT - 1), wait=False, timeout=10)
    got = {json.loads(m.data)["Session"]: m for m in pull(sub_a, 2)}
    assert json.loads(got[inline_session].data)["Data"]["Source"] == "http"
    assert _event_bytes(got[inline_session], emulators.project) <= MAX_EVENT_BYTES
    data = json.loads(got[blob_session].data)["Data"]
    assert data["Source"] == "blob"
    assert json.loads(_blob(emulators, bucket, name, blob_session, data["Value"])) == "y" * (LIMIT - 1)


def test_invoker_refuses_a_message_whose_event_cannot_be_delivered(emulators):
    """Above MAX_MESSAGE_BYTES the invoker raises (the execution fails and is retried, the
    error names the limit) instead of publishing an event the trigger cannot deliver."""
    from google.cloud import pubsub_v1

    from runtime.gcp.invoker import MAX_MESSAGE_BYTES

    inv = PubSubInvoker(pubsub_v1.PublisherClient(), emulators.project, "no-such-app")
    with pytest.raises(ValueError, match=f"above the {MAX_MESSAGE_BYTES} bytes whose Eventarc event fits"):
        inv.invoke_many([("F", {"Data": {"Source": "http", "Value": "z" * MAX_MESSAGE_BYTES}})])
    assert inv.usage["publishes"] == 0


def test_entry_point_is_a_cloudevent_function_in_code(tmp_path, monkeypatch):
    """functions-framework started as a real deployment starts it, with no --signature-type
    and no FUNCTION_SIGNATURE_TYPE, serves the generated main.py's entry point as a CloudEvent
    function: a request that is no CloudEvent is refused by the CloudEvent parser (400)
    before the function runs. Fails without `@functions_framework.cloud_event`: the entry
    point is served as an HTTP function, called with the raw request (500)."""
    functions_framework = pytest.importorskip("functions_framework", reason="functions-framework not installed")
    from unumctl.gcp.bundle import ENTRY_POINT, MAIN_PY

    monkeypatch.delenv("FUNCTION_SIGNATURE_TYPE", raising=False)
    monkeypatch.setattr(os, "environ", dict(os.environ))  # create_app writes the type it chose here
    (tmp_path / "main.py").write_text(MAIN_PY)
    app = functions_framework.create_app(ENTRY_POINT, str(tmp_path / "main.py"))
    resp = app.test_client().post("/", json={"message": {"data": "e30="}})
    assert resp.status_code == 400 and b"cloudevent" in resp.data
    assert os.environ["FUNCTION_SIGNATURE_TYPE"] == "cloudevent"
