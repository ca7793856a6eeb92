"""Entry point of a Unum function on Cloud Functions gen2 (Pub/Sub trigger).

Source: seed 001 §4.2; Cloud Functions gen2 event-driven Python functions
(functions-framework `@cloud_event`, Eventarc `google.cloud.pubsub.topic.v1.messagePublished`
whose `data` is `{"message": {"data": <base64>, "messageId", "publishTime", "attributes"},
"subscription": ...}`). functions-framework also turns a raw Pub/Sub push request (as the
Pub/Sub emulator sends it) into that CloudEvent, and `handle_cloudevent` accepts the plain
push JSON as a dict too.

Configuration (environment, set by the rendered Terraform):
  UNUM_PROJECT (or GOOGLE_CLOUD_PROJECT)   project of the topics and the database
  UNUM_DATABASE          Firestore database id (default: the app's own "unum-<app>",
                         runtime/names.py, as the deployment model names it)
  UNUM_COLLECTION        Firestore collection (default "unum-<app>")
  UNUM_BUCKET            GCS bucket for large values (unset: values above the limits fail)
  UNUM_MAX_DELIVERY_ATTEMPTS  failed executions of one message before the session is
                         recorded as failed (default: manifest runtime.max_delivery_attempts)
  UNUM_GIVE_UP_SECONDS   a message older than this is not run but recorded as failed
                         (covers hard crashes/timeouts, which cannot count themselves);
                         default attempts x (timeout + 600 s, gen2's maximum backoff)
  UNUM_DEAD_LETTER_TOPIC topic id that receives messages given up on
  UNUM_TOPIC_PREFIX      prefix of every function's topic id (`<app>-<stage>-<region>-<version>-`:
                         the topics of the function's own version, so every invocation it
                         publishes stays on that version; default `<app>-`, invoker.topic_id)
  UNUM_VERSION           the version this function belongs to (docs/versions.md): the entry
                         function pins each session it starts to it (runtime/gcp/pin.py)
  UNUM_FAULTS            fault-injection spec (tests only; runtime/faults.py syntax)
  UNUM_USAGE_LOG         "1": print one JSON line of billed operations per execution

History (runtime.history, docs/observability.md): the engine's events go through
runtime/gcp/history.py (structured log lines + Firestore `<collection>-history`); this
module adds the platform's events: `retried` (a failed delivery that Pub/Sub redelivers),
`gave_up`, and with fault injection `duplicated`. While a delivery runs, the function's
output is written as structured lines labelled with the session and invocation
(runtime/gcp/output.py). With fault injection, each injected fault is also printed as one
line {"unum_fault": {...}} on stderr (the injector's own record, independent of history).

Failures: an exception from the engine (infrastructure error, injected crash) is counted in
the datastore set `delivery/<messageId>` (one fresh member per failed execution) and
re-raised, so functions-framework answers 500 and Pub/Sub redelivers (RETRY_POLICY_RETRY).
At `UNUM_MAX_DELIVERY_ATTEMPTS` failures the session's result item is written as
{"status": "FAILED", "error", "cause", "instance"} (the shape of runtime/engine.py `_fail`),
the message goes to the dead-letter topic and the delivery is acknowledged.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
import os
import sys
import threading
import time
import traceback
import uuid
from pathlib import Path
from typing import Any

import functions_framework

from ..bundle import load_bundle
from ..engine import Options, Outcome
from ..names import database_name, payload_prefix, store_name
from ..payload import SESSION_ID_RE, Payload, frames_name
from ..platform_events import record_platform_event
from ..ports import BlobStore, emit_safely
from ..session import give_up, session_status
from .pin import pin

BUNDLE_ROOT = Path(__file__).resolve().parent.parent.parent


def decode_message(event: Any) -> dict[str, Any]:
    """The Pub/Sub message of a CloudEvent (or of a raw push body given as a dict).

    Returns {"payload": dict, "message_id": str, "publish_time": str|None}. Raises
    ValueError when the event carries no Pub/Sub message or its data is not JSON."""
    data = event if isinstance(event, dict) else getattr(event, "data", None)
    if isinstance(data, (bytes, str)):
        data = json.loads(data)
    msg = data.get("message") if isinstance(data, dict) else None
    if not isinstance(msg, dict) or "data" not in msg:
        raise ValueError("event has no Pub/Sub message (expected data.message.data); "
                         "is the function triggered by its Pub/Sub topic?")
    raw = base64.b64decode(msg["data"])
    try:
        payload = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"Pub/Sub message {msg.get('messageId')}: data is not JSON: {exc}") from None
    attempt = data.get("deliveryAttempt") if isinstance(data, dict) else None
    return {"payload": payload, "message_id": str(msg.get("messageId") or msg.get("message_id") or ""),
            "publish_time": msg.get("publishTime") or msg.get("publish_time"),
            "attempt": int(attempt) if isinstance(attempt, int) else None}


class GcpFunction:
    """One function instance: the bundle's Engine wired to Firestore, GCS and Pub/Sub.

    `env`: configuration mapping (defaults to os.environ); clients are created from the
    standard Google environment (ADC, *_EMULATOR_HOST)."""

    def __init__(self, bundle_dir: str | Path = BUNDLE_ROOT, env: dict[str, str] | None = None):
        from google.cloud import firestore, pubsub_v1

        from .datastore import FirestoreDatastore
        from .history import FirestoreHistory
        from .invoker import PubSubInvoker

        env = dict(os.environ if env is None else env)
        self.bundle = load_bundle(bundle_dir)
        app, opts = self.bundle.app, self.bundle.meta.get("options", {})
        self.project = env.get("UNUM_PROJECT") or env.get("GOOGLE_CLOUD_PROJECT") or ""
        if not self.project:
            raise RuntimeError("UNUM_PROJECT is not set (the Terraform module sets it; "
                               "for a local run export UNUM_PROJECT=<project id>)")
        client = firestore.Client(project=self.project,
                                  database=env.get("UNUM_DATABASE") or database_name(app))
        collection = env.get("UNUM_COLLECTION") or store_name(app)  # runtime/names.py
        self.ds = FirestoreDatastore(client, collection)
        self.publisher = pubsub_v1.PublisherClient()
        self.invoker = PubSubInvoker(self.publisher, self.project, app,
                                     topic_prefix=env.get("UNUM_TOPIC_PREFIX") or None)
        self.blobs = _make_blobs(env.get("UNUM_BUCKET"), app)
        self.max_attempts = int(env.get("UNUM_MAX_DELIVERY_ATTEMPTS")
                                or opts.get("max_delivery_attempts", 3))
        timeout = int(self.bundle.meta.get("timeout", 60))
        self.give_up = float(env.get("UNUM_GIVE_UP_SECONDS") or self.max_attempts * (timeout + 600))
        self.dead_letter = env.get("UNUM_DEAD_LETTER_TOPIC") or ""
        self.version = env.get("UNUM_VERSION") or ""
        self.usage_log = env.get("UNUM_USAGE_LOG") == "1"
        self.fault_spec = None
        # the delivery this thread runs (functions-framework serves requests on threads):
        # `attempt` (the attempt number when faults are armed, else 0)
        self._delivery = threading.local()
        if env.get("UNUM_FAULTS"):
            from ..faults import FaultSpec
            self.fault_spec = FaultSpec.parse(env["UNUM_FAULTS"])
        level = self.bundle.options.history
        self.history = (FirestoreHistory(client, collection, level, self.bundle.options.retention)
                        if level != "off" else None)
        self.engine = self.bundle.engine(self.ds, self.invoker, self.blobs, events=self.history)
        if self.fault_spec is not None:  # each delivery arms its own draws (`_arm_faults`)
            from ..faults import PerThreadFaults, PerThreadInvoker
            self.engine.faults = PerThreadFaults()
            # the engine's invoker is timed at runtime.history full; duplicates go through it
            self.engine.invoker = PerThreadInvoker(self.engine.invoker)

    @property
    def _attempt(self) -> int:
        """The attempt number of the delivery the calling thread runs (0: faults not armed)."""
        return getattr(self._delivery, "attempt", 0)

    # ------------------------------------------------------------------ one delivery
    def handle(self, event: Any) -> Outcome | None:
        """Run one delivery of a Pub/Sub message (see module docstring for failures).

        Returns the engine Outcome, or None when the message was given up on. Raises
        RuntimeError (-> HTTP 500 -> redelivery) while attempts remain."""
        msg = decode_message(event)
        if self.history is None:
            return self._handle(msg)
        from .output import execution_id, execution_output
        xid = execution_id()

        def labels() -> dict[str, Any]:
            rec = getattr(self.engine._obs, "rec", None) or {}
            payload = msg["payload"] if isinstance(msg["payload"], dict) else {}
            return {"execution_id": xid, "unum_session": rec.get("session") or payload.get("Session"),
                    "unum_function": self.bundle.ir.name, "unum_instance": rec.get("instance"),
                    "unum_attempt": self._attempt or msg["attempt"], "unum_message_id": msg["message_id"]}

        with execution_output(labels):
            return self._handle(msg)

    def _handle(self, msg: dict[str, Any]) -> Outcome | None:
        payload, mid = msg["payload"], msg["message_id"]
        if isinstance(payload, dict) and not payload.get("Session"):
            # an entry message without a session: derive it from the message id, so that a
            # redelivery continues the same session instead of starting another
            payload["Session"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"pubsub:{mid}"))
        session = payload.get("Session") if isinstance(payload, dict) else None
        before = self._usage()
        t0 = time.monotonic()
        try:
            if self._too_old(msg["publish_time"]):
                self._give_up(payload, mid, "DeliveryExpired",
                              f"message {mid} published at {msg['publish_time']} is older than "
                              f"{self.give_up:.0f}s: earlier deliveries crashed or timed out")
                return None
            prior = self._arm_faults(session, mid)
            delivery = {"attempt": self._attempt or msg["attempt"], "request_id": mid}
            try:
                if self.version and self.bundle.ir.start and isinstance(session, str) \
                        and SESSION_ID_RE.fullmatch(session):  # (a bad id is the engine's to refuse)
                    pin(self.ds, session, self.version, self.engine.retention.item_expiry(time.time()))
                outcome = self.engine.handle(payload, delivery)
                if session and (outcome.status == "dropped" or prior):
                    # a failed earlier delivery left its counter; the session may have been
                    # swept before it was written
                    self.ds.delete(session, [f"delivery/{mid}"])
                return outcome
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - infrastructure error or InjectedCrash
                if session is None:
                    raise RuntimeError(f"message {mid}: {type(exc).__name__}: {exc}") from None
                if self.fault_spec is not None and type(exc).__name__ == "InjectedCrash":
                    self._fault_record("crash", session, self.bundle.ir.name, str(exc), mid)
                # one member per failed execution; with faults armed the attempt number is
                # known, so concurrent redeliveries of one attempt count once
                token = f"attempt-{self._attempt}" if self._attempt else uuid.uuid4().hex
                failures = self.ds.set_add(session, f"delivery/{mid}", token,
                                           self.engine.retention.item_expiry(time.time()))
                if failures >= self.max_attempts:
                    self._give_up(payload, mid, type(exc).__name__, f"{exc} (after {failures} "
                                  f"delivery attempts)\n{traceback.format_exc(limit=5)}")
                    return None
                self._event("retried", self.bundle.ir.name, payload, failures + 1,
                            f"delivery attempt {failures} failed ({type(exc).__name__}: {str(exc)[:500]}); "
                            f"redelivered as attempt {failures + 1} of {self.max_attempts}",
                            type(exc).__name__, mid)
                raise RuntimeError(f"{type(exc).__name__}: {exc} (attempt {failures}/"
                                   f"{self.max_attempts}; Pub/Sub redelivers)") from None
        finally:
            if self.usage_log:
                after = self._usage()
                print(json.dumps({"unum_usage": {k: after[k] - before.get(k, 0) for k in after},
                                  "function": self.bundle.ir.name, "session": session,
                                  "duration_ms": round((time.monotonic() - t0) * 1000, 1)}),
                      file=sys.stderr, flush=True)

    def _usage(self) -> dict[str, int]:
        u = {f"firestore_{k}": v for k, v in self.ds.usage.items()}
        u.update(self.invoker.usage)
        u.update({f"gcs_{k}": v for k, v in getattr(self.blobs, "usage", {}).items()})
        u.update({f"history_{k}": v for k, v in getattr(self.history, "usage", {}).items()})
        return u

    def _too_old(self, publish_time: str | None) -> bool:
        if not publish_time or self.give_up <= 0:
            return False
        try:
            t = _dt.datetime.fromisoformat(publish_time.replace("Z", "+00:00"))
        except ValueError:
            return False
        return (_dt.datetime.now(_dt.timezone.utc) - t).total_seconds() > self.give_up

    def _arm_faults(self, session: str | None, mid: str) -> bool:
        """Install the seeded fault hook (tests); returns whether earlier deliveries of
        this message failed (only known when faults are armed)."""
        self._delivery.attempt = 0
        if self.fault_spec is None or session is None:
            return False
        from ..faults import DuplicatingInvoker, PerThreadFaults, PerThreadInvoker, SeededFaults
        faults, invoker = self.engine.faults, self.engine.invoker
        assert isinstance(faults, PerThreadFaults) and isinstance(invoker, PerThreadInvoker)  # __init__
        item = self.ds.get(session, f"delivery/{mid}")
        attempt = self._delivery.attempt = 1 + (item["size"] if item else 0)
        faults.use(SeededFaults(self.fault_spec, attempt, self.max_attempts, mid))
        invoker.use(DuplicatingInvoker(invoker.inner, self.fault_spec, f"{mid}/{attempt}",
                                       lambda fn, p: self._duplicated(fn, p, mid)))
        return attempt > 1

    def _duplicated(self, fn: str, payload: Any, mid: str) -> None:
        session = payload.get("Session") if isinstance(payload, dict) else None
        self._fault_record("duplicate", session, fn, "published twice", mid)
        self._event("duplicated", fn, payload, None, "injected fault: the invocation is delivered twice")

    @staticmethod
    def _fault_record(kind: str, session: Any, function: str, detail: str, mid: str) -> None:
        """The fault injector's own record (tests): one JSON line on stderr."""
        print(json.dumps({"unum_fault": {"kind": kind, "session": session, "function": function,
                                         "detail": detail, "message_id": mid}}), file=sys.stderr, flush=True)

    def _event(self, kind: str, fn: str, payload: Any, attempt: int | None, detail: str,
               error: str | None = None, request_id: str | None = None) -> None:
        """Record a platform event in the history (level full; never raises)."""
        record_platform_event(self.history, kind, fn, payload, attempt, detail, error, request_id,
                              log=lambda m: print(f"[{self.bundle.ir.name}] {m}", file=sys.stderr))

    def _give_up(self, payload: Any, mid: str, error: str, cause: str) -> None:
        """Record the session as failed, dead-letter the message, clean the session."""
        print(f"[{self.bundle.ir.name}] giving up on message {mid}: {error}: {cause.splitlines()[0]}",
              file=sys.stderr)
        session: str | None
        try:
            p = Payload.decode(payload, new_session=lambda: "")
            inst = frames_name(self.bundle.ir.name, p.frames, p.iteration)
            session = p.session
        except Exception:  # noqa: BLE001 - a payload that does not decode: given up under the function's name
            inst, session = self.bundle.ir.name, (payload or {}).get("Session") if isinstance(payload, dict) else None
        if self.dead_letter:
            data = json.dumps(payload, separators=(",", ":")).encode()
            self.publisher.publish(self.publisher.topic_path(self.project, self.dead_letter), data,
                                   unum_function=self.bundle.ir.name, unum_error=error,
                                   unum_message_id=mid).result(timeout=60)
        if session:
            result = give_up(self.ds, self.blobs, session, inst, error, cause, self.engine.retention,
                             time.time(), sweep=self.bundle.options.gc != "none")
            self._event("gave_up", self.bundle.ir.name, payload, None, f"{error}: {cause}"[:2000], error, mid)
            if self.history is not None:
                emit_safely(self.history.session_ended, session, session_status(result), time.time(), result)


class _NoBlobs(BlobStore):
    """Used when no bucket is configured: large values fail with a one-line error."""

    def put(self, session, key, data):
        raise RuntimeError(f"value of {len(data)} bytes needs the GCS bucket; set UNUM_BUCKET")

    def get(self, session, ref):
        raise KeyError(f"blob {ref}: no bucket configured (UNUM_BUCKET)")

    def delete(self, session, refs):
        return None

    def sweep(self, session, keep=()):
        return None


def _make_blobs(bucket: str | None, app: str) -> BlobStore:
    if not bucket:
        return _NoBlobs()
    from google.cloud import storage

    from .blobs import GcsBlobStore
    return GcsBlobStore(storage.Client(), bucket, payload_prefix(app))


_FUNCTION: GcpFunction | None = None


@functions_framework.cloud_event
def handle_cloudevent(cloud_event: Any) -> None:
    """The gen2 function's entry point (Terraform `entry_point = "handle_cloudevent"`).

    Declared a CloudEvent function in code (functions-framework's `@cloud_event` registers
    the signature type under the function's name, which wins over `--signature-type` and
    FUNCTION_SIGNATURE_TYPE: https://github.com/GoogleCloudPlatform/functions-framework-python
    "CloudEvent functions"), so whatever the platform sets, an Eventarc delivery is parsed
    as a CloudEvent. Builds the function instance once per process (cold start), then runs
    the delivery."""
    global _FUNCTION
    if _FUNCTION is None:
        _FUNCTION = GcpFunction()
    _FUNCTION.handle(cloud_event)


__all__ = ["handle_cloudevent", "GcpFunction", "decode_message", "Options"]
