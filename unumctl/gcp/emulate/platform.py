"""Running an app's built GCP bundles for real on this machine: each function served by
functions-framework (as Cloud Functions gen2 runs it), Pub/Sub emulator topics with push
subscriptions delivering to those servers (as the gen2 Eventarc trigger does), Firestore
emulator, and the GCS stand-in for large values.

Used by tests/gcp and bench/gcp_calls.py. Nothing of runtime/gcp is replaced: the functions
run the bundle's own `main.py` -> runtime.gcp.entry.handle_cloudevent.

Each start is one version of the app (docs/versions.md "On GCP"): its functions publish to its
own topics (`<app>-<stage>-<region>-<version>-<fn>`) and carry UNUM_VERSION, and its record
is written to the deployment's versions collection (unumctl/gcp/versions.py), which makes it
current. A platform of an older version may keep running beside it until its sessions have
drained; `collect_retired` then deletes its topics, push subscriptions and record and stops
its servers, as a later `apply` deletes a drained version's functions and topics.

Each function server's stdout and stderr are appended to
`unumctl.gcp.logs.emulator_log_dir(app)/<app>-<function>.log` (Cloud Logging has no
emulator: this is where `unumctl logs --cloud gcp` reads the functions' output, labelled per
execution by the runtime, docs/observability.md).
"""

from __future__ import annotations

import sys
import time
import uuid
import zipfile
from pathlib import Path
from typing import Any

from runtime.engine import Options
from runtime.faults import FaultSpec
from runtime.gcp.pin import pin
from runtime.payload import SessionId
from runtime.session import entry_payload, wait_result

from unumctl import pipeline
from unumctl.deploy.versions import version_of
from unumctl.gcp.bundle import ENTRY_POINT
from unumctl.gcp.logs import emulator_log_dir, log_name
from unumctl.gcp.model import build, params
from unumctl.gcp.names import payload_prefix, topic_id, version_topic_prefix
from unumctl.gcp.versions import GcpVersions
from unumctl.manifest import App

from .emulators import Emulators, Process, free_port, start_process

__all__ = ["EmulatorPlatform", "collect_retired"]

PUSH_ACK_DEADLINE = 60  # seconds a push delivery may take before Pub/Sub redelivers



class EmulatorPlatform:
    """One app deployed onto running `Emulators` (a context manager).

    `env`: extra environment for the function servers (e.g. UNUM_USAGE_LOG).
    `faults`: a runtime/faults.py FaultSpec, given to every function as UNUM_FAULTS (the
    adapter injects its crash points and duplicate publishes; runtime/gcp/entry.py).
    `log_dir`: where the function servers' output goes (default: emulator_log_dir(app)).
    `bucket`: the GCS bucket for large values (created when missing; default: a new
    `<bucket prefix>-<8 hex>`, as the Terraform module names it; apps may share one, each keeps
    its values under its own prefix). Every other name (topics, dead-letter topic, database,
    collection) is the deployment model's (unumctl/gcp/model.py, stage "dev" and the app's
    region), as in the rendered Terraform. After `start`: `version` (the id of what it runs),
    `topic_prefix` (that version's topics), `versions` (the deployment's version records)."""

    def __init__(self, app: App, emulators: Emulators, workdir: Path,
                 env: dict[str, str] | None = None, log_dir: Path | None = None,
                 faults: FaultSpec | None = None, bucket: str | None = None):
        self.app = app
        self.emu = emulators
        self.workdir = Path(workdir)
        self.log_dir = Path(log_dir) if log_dir is not None else emulator_log_dir(app)
        self.env = dict(env or {})
        if faults is not None:
            self.env["UNUM_FAULTS"] = faults.encode()
        self.servers: dict[str, Process] = {}
        self.push_subscriptions: list[str] = []
        # the names the Terraform module gives them (a random bucket suffix, as random_id does)
        self.model = build(app, {"project": emulators.project})
        assert self.model.blobs is not None and self.model.blobs.bucket_prefix
        self.bucket = bucket or f"{self.model.blobs.bucket_prefix}-{uuid.uuid4().hex[:8]}"
        self.version = ""
        self.topic_prefix = params(self.model).topic_prefix  # the version's, once started
        self.topics: list[str] = []
        self.dead_letter = params(self.model).dead_letter.name

    # ------------------------------------------------------------------ set-up
    def start(self) -> "EmulatorPlatform":
        from google.cloud import firestore, pubsub_v1, storage

        from runtime.gcp.blobs import GcsBlobStore
        from runtime.gcp.datastore import FirestoreDatastore
        from runtime.gcp.invoker import PubSubInvoker

        project = self.emu.project
        self.publisher = pubsub_v1.PublisherClient()
        self.subscriber = pubsub_v1.SubscriberClient()
        # the app's own database, as the functions (runtime/gcp/entry.py) and the CLI use it
        database = self.env.get("UNUM_DATABASE") or self.model.datastore.database or "(default)"
        self.ds = FirestoreDatastore(firestore.Client(project=project, database=database),
                                     self.model.datastore.name)
        gcs = storage.Client(project=project)
        if not gcs.bucket(self.bucket).exists():
            gcs.create_bucket(self.bucket)
        self.blobs = GcsBlobStore(gcs, self.bucket, payload_prefix(self.app.name))
        self._topic(self.dead_letter)
        self._subscription(f"{self.dead_letter}-hold", self.dead_letter, None)
        arts = pipeline.bundles(self.app, "gcp", out_dir=self.workdir / "build")
        self.version = version_of(((f.unum_name, arts[f.unum_name].sha256, f.timeout, f.memory)
                                   for f in self.model.functions),
                                  self.model.max_delivery_attempts, self.model.history)
        self.topic_prefix = version_topic_prefix(self.app.name, params(self.model).stage, self.model.region or "",
                                                 self.version)
        self.invoker = PubSubInvoker(self.publisher, project, self.app.name, topic_prefix=self.topic_prefix)
        self.versions = GcpVersions(self.ds.client, self.model.datastore.name)
        try:
            for fn, art in arts.items():
                src = self.workdir / "versions" / self.version / fn
                src.mkdir(parents=True, exist_ok=True)
                with zipfile.ZipFile(art.path) as zf:
                    zf.extractall(src)
                port = free_port()
                env = {**self.emu.env, "PYTHONPATH": str(src), "UNUM_PROJECT": project,
                       "UNUM_BUCKET": self.bucket, "UNUM_DEAD_LETTER_TOPIC": self.dead_letter,
                       "UNUM_DATABASE": database, "UNUM_COLLECTION": self.model.datastore.name,
                       "UNUM_TOPIC_PREFIX": self.topic_prefix, "UNUM_VERSION": self.version,
                       "UNUM_MAX_DELIVERY_ATTEMPTS": str(self.app.manifest.runtime.max_delivery_attempts),
                       **self.env}
                cmd = [str(Path(sys.executable).parent / "functions-framework"), "--target", ENTRY_POINT,
                       "--source", str(src / "main.py"),
                       "--host", "127.0.0.1", "--port", str(port)]
                self.servers[fn] = start_process(log_name(self.app.name, fn), cmd, "127.0.0.1", port,
                                                 self.log_dir, env=env, append=True)
                topic = topic_id(self.app.name, fn, self.topic_prefix)
                self._topic(topic)
                self.topics.append(topic)
                self._subscription(f"{topic}-push", topic, f"http://127.0.0.1:{port}/")
        except BaseException:
            self.stop()
            raise
        self.versions.register(self.version, arts, self.topic_prefix)  # the deploy: now current
        return self

    def _topic(self, topic: str) -> None:
        from google.api_core.exceptions import AlreadyExists

        try:
            self.publisher.create_topic(name=self.publisher.topic_path(self.emu.project, topic))
        except AlreadyExists:
            pass

    def _subscription(self, name: str, topic: str, push_endpoint: str | None) -> None:
        from google.api_core.exceptions import AlreadyExists
        from google.cloud import pubsub_v1

        request: dict[str, Any] = {
            "name": self.subscriber.subscription_path(self.emu.project, name),
            "topic": self.publisher.topic_path(self.emu.project, topic),
            "ack_deadline_seconds": PUSH_ACK_DEADLINE}
        if push_endpoint:
            request["push_config"] = pubsub_v1.types.PushConfig(push_endpoint=push_endpoint)
        try:
            self.subscriber.create_subscription(request=request)
        except AlreadyExists:  # left by an earlier platform on the same emulator
            if push_endpoint:
                self.subscriber.modify_push_config(request={
                    "subscription": request["name"], "push_config": request["push_config"]})
        if push_endpoint:
            self.push_subscriptions.append(request["name"])

    def stop(self) -> None:
        """Delete the push subscriptions, then stop every function server by process id
        (topics live as long as the emulator)."""
        for sub in self.push_subscriptions:
            try:
                self.subscriber.delete_subscription(request={"subscription": sub}, timeout=10)
            except Exception:  # noqa: BLE001 - the emulator may be gone already
                pass
        self.push_subscriptions.clear()
        for p in self.servers.values():
            p.stop()
        self.servers.clear()

    def retire(self) -> None:
        """Collect this platform's version: stop it (push subscriptions, servers), delete its
        topics, then its record (unumctl/gcp/versions.py)."""
        self.stop()
        for topic in self.topics:
            try:
                self.publisher.delete_topic(request={"topic": self.publisher.topic_path(self.emu.project, topic)},
                                            timeout=10)
            except Exception:  # noqa: BLE001 - deleted already (the emulator answers NotFound)
                pass
        self.topics.clear()
        self.versions.forget(self.version)

    def __enter__(self) -> "EmulatorPlatform":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ sessions
    def start_session(self, value: Any, session: str | None = None) -> SessionId:
        """Pin the session to this platform's version and publish the entry message to its
        entry topic (as `unumctl invoke --cloud gcp` does on the current version); returns
        the id (`session` parsed, or a new one)."""
        session = SessionId.of(session)
        retention = Options.from_mapping(self.app.manifest.runtime.model_dump()).retention
        pin(self.ds, session, self.version, retention.item_expiry(time.time()))
        self.invoker.invoke_many([(self.app.workflow.entry.name, entry_payload(session, value))])
        return session

    def wait_result(self, session: str, timeout: float = 120.0, poll: float = 0.1) -> dict[str, Any]:
        """Poll Firestore for the session's result item (runtime.session.wait_result, every
        `poll` s); TimeoutError naming the logs."""
        item = wait_result(self.ds, self.blobs, session, timeout, poll, max_poll=poll)
        if item is not None:
            return item
        raise TimeoutError(f"session {session}: no result after {timeout:.0f}s "
                           f"(function logs: {self.log_dir})")

    def run(self, value: Any, timeout: float = 120.0) -> dict[str, Any]:
        return self.wait_result(self.start_session(value), timeout)

    def logs(self) -> str:
        return "\n".join(f"== {p.name}\n{p.log.read_text()[-3000:]}" for p in self.servers.values())


def collect_retired(platforms: list[EmulatorPlatform]) -> list[str]:
    """Retire (EmulatorPlatform.retire) every platform of `platforms` whose version the
    deployment's records say may be collected (GcpVersions.retirable: not current, no session
    that can still run); returns their versions. The platforms are one app's, on one
    emulator."""
    if not platforms:
        return []
    gone = {r["version"] for r in platforms[0].versions.retirable()}
    out = []
    for p in platforms:
        if p.version in gone:
            p.retire()
            out.append(p.version)
    return out
