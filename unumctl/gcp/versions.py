"""The versions of an app's deployment on the gcp target (docs/versions.md "On GCP").

Each version is its own set of Cloud Functions and Pub/Sub topics: the topic of function F
of version V is `<app>-<stage>-<region>-<V>-F` (names.version_topic_prefix), the function's
UNUM_TOPIC_PREFIX, so every invocation stays on the version that published it, and the
function carries UNUM_VERSION, so the entry function pins each session it starts
(runtime/gcp/pin.py). Why not Cloud Run revision tags: a gen2 function's Eventarc trigger
delivers to a Cloud Run service, not to a revision or a tag (Eventarc API, `CloudRun`
destination: `service`, `path`, `region`), and its traffic is managed on the underlying
service, outside the function, which routes to the latest revision on each deploy
(Cloud Run functions, "Traffic splitting"). docs/versions.md cites the pages.

The record of the deployment's versions is one Firestore document per version in the
collection `<items collection>-versions` of the app's database (no TTL: a version's record
lives until it is collected):

    document id  <version>
    fields       version: str, deployed_at: float (Unix s it was last made current: the
                 newest is current), functions: [str], topic_prefix: str

New sessions start on the current version (`unumctl invoke` publishes to its entry topic);
a version is retired by the rule of unumctl/deploy/versions.py `retirable`, counting its
sessions that can still run from their pins (`running_by_version`).
"""

from __future__ import annotations

import datetime as _dt
import json
import time
from typing import Any, Callable, Iterable, Sequence

from runtime.gcp.datastore import doc_id
from runtime.gcp.pin import PIN_ITEM
from runtime.payload import RESULT_KEY, VersionId
from runtime.ports import Invoker
from runtime.redrive import FROM_PREFIX

from ..deploy.versions import retirable

__all__ = ["GcpVersions", "PinnedInvoker", "versions_collection"]

_GET_ALL = 300  # documents per batchGet


def versions_collection(collection: str) -> str:
    """The collection of a deployment's version records: `<collection>-versions`."""
    return f"{collection}-versions"


class GcpVersions:
    """The versions of one gcp deployment: `client` a google.cloud.firestore.Client of the
    app's database, `collection` the id of its items collection. google.api_core exceptions
    propagate."""

    def __init__(self, client: Any, collection: str):
        self.client = client
        self.items = client.collection(collection)
        self.records = client.collection(versions_collection(collection))

    def register(self, version: VersionId, functions: Iterable[str], topic_prefix: str,
                 now: float | None = None) -> None:
        """Record `version` (its `functions` and the `topic_prefix` of its topics) and make it
        current; a version registered before becomes current again (a rollback)."""
        self.records.document(VersionId(version)).set(
            {"version": version, "deployed_at": time.time() if now is None else now,
             "functions": sorted(functions), "topic_prefix": topic_prefix})

    def all(self) -> list[dict[str, Any]]:
        """Every recorded version {"version", "deployed_at", "functions", "topic_prefix"}, the
        current one first."""
        rows = [s.to_dict() for s in self.records.stream()]
        return sorted(rows, key=lambda r: (-float(r["deployed_at"]), r["version"]))

    def current(self) -> dict[str, Any] | None:
        """The record of the version new sessions start on, None before any deploy."""
        every = self.all()
        return every[0] if every else None

    def pinned(self, session: str) -> str | None:
        """The version `session` is pinned to (runtime/gcp/pin.py), None when it has no pin."""
        snap = self.items.document(doc_id(session, PIN_ITEM)).get()
        return json.loads(snap.to_dict()["item"])["version"] if snap.exists else None

    def topic_prefix(self, version: str) -> str | None:
        """The topic prefix of `version`, None when it is not recorded (collected)."""
        snap = self.records.document(VersionId(version)).get()
        return snap.to_dict()["topic_prefix"] if snap.exists else None

    def not_redrivable(self, session: str) -> str | None:
        """Why `session` cannot be re-run here, or None: the version it is pinned to was
        collected (a redrive re-runs a session on the version it started on)."""
        version = self.pinned(session)
        if version and self.topic_prefix(version) is None:
            return (f"version {version} of the app, which session {session} started on, was collected once "
                    "its sessions ended; start a new session")
        return None

    def running_by_version(self, now: float | None = None) -> dict[str, int]:
        """{version: number of its sessions that can still run}: pinned, the pin not expired
        (the session's item expiry bounds a session that never ends), and without a result
        or FAILED and redrivable (its frontier, runtime/redrive.py, is kept: a redrive re-runs
        it on its version). One query of the pins, then batch reads of their results."""
        from google.cloud import firestore
        now = time.time() if now is None else now
        pins: list[tuple[str, str]] = []
        for snap in self.items.where(filter=firestore.FieldFilter("name", "==", PIN_ITEM)).stream():
            d = snap.to_dict()
            expires = d.get("expires_at")
            if isinstance(expires, _dt.datetime) and expires.timestamp() < now:
                continue
            pins.append((d["session"], json.loads(d["item"])["version"]))
        ended: set[str] = set()
        redrivable: set[str] = set()
        names = [(s, n) for s, _ in pins for n in (RESULT_KEY, FROM_PREFIX + "0")]
        for i in range(0, len(names), _GET_ALL):
            refs = [self.items.document(doc_id(s, n)) for s, n in names[i:i + _GET_ALL]]
            for snap in self.client.get_all(refs):
                if snap.exists:
                    d = snap.to_dict()
                    (ended if d["name"] == RESULT_KEY else redrivable).add(d["session"])
        out: dict[str, int] = {}
        for session, version in pins:
            if session not in ended or session in redrivable:
                out[version] = out.get(version, 0) + 1
        return out

    def listing(self, now: float | None = None) -> list[dict[str, Any]]:
        """[{"version", "deployed_at", "running", "current", "functions"}], the current first:
        what `unumctl versions --cloud gcp` prints."""
        running = self.running_by_version(now)
        return [{"version": r["version"], "deployed_at": float(r["deployed_at"]),
                 "running": running.get(r["version"], 0), "current": i == 0, "functions": list(r["functions"])}
                for i, r in enumerate(self.all())]

    def retirable(self, now: float | None = None) -> list[dict[str, Any]]:
        """The records of the versions that may be collected (unumctl/deploy/versions.py
        `retirable`): not current, none of their sessions can still run."""
        every = self.all()
        if len(every) < 2:
            return []
        gone = set(retirable([r["version"] for r in every], every[0]["version"], self.running_by_version(now)))
        return [r for r in every if r["version"] in gone]

    def forget(self, version: str) -> None:
        """Delete the record of `version` (once its functions and topics are deleted)."""
        self.records.document(VersionId(version)).delete()


class PinnedInvoker(Invoker):
    """The Invoker of what the CLI publishes into a running session (send-task-*, redrive):
    each call goes to the topics of the version its payload's session is pinned to
    (GcpVersions.pinned), a session without a pin to `fallback_prefix` (the current version's
    topics, or a deployment from before versions). `make(prefix)` builds the PubSubInvoker of
    one topic prefix. RuntimeError naming the version when the session's version was
    collected."""

    def __init__(self, versions: GcpVersions, make: Callable[[str], Invoker], fallback_prefix: str):
        self.versions = versions
        self.make = make
        self.fallback_prefix = fallback_prefix
        self.max_payload_bytes = make(fallback_prefix).max_payload_bytes

    def _prefix(self, session: Any) -> str:
        version = self.versions.pinned(session) if isinstance(session, str) and session else None
        if not version:
            return self.fallback_prefix
        prefix = self.versions.topic_prefix(version)
        if prefix is None:
            raise RuntimeError(self.versions.not_redrivable(session) or f"version {version} was collected")
        return prefix

    def invoke_many(self, calls: Sequence[tuple[str, dict[str, Any]]], delay: float = 0.0) -> None:
        by_prefix: dict[str, list[tuple[str, dict[str, Any]]]] = {}
        for fn, payload in calls:
            by_prefix.setdefault(self._prefix(payload.get("Session")), []).append((fn, payload))
        for prefix, group in by_prefix.items():
            self.make(prefix).invoke_many(group, delay)
