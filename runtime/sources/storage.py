"""Storage triggers (`type: storage`): the sessions object-created events ask for.

Event shapes, as delivered to the entry function:

- AWS, S3 event notifications to Lambda: {"Records": [{"eventSource": "aws:s3",
  "eventName": "ObjectCreated:Put", "eventTime", "s3": {"bucket": {"name"}, "object":
  {"key" (URL-encoded, spaces as '+'), "size", "eTag", "versionId" (versioned buckets),
  "sequencer"}}}]} (https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html);
  the key is `s3:<bucket>/<key>@<versionId, else sequencer>`. Records of other event
  names and the `s3:TestEvent` message start nothing.
- GCP, Eventarc `google.cloud.storage.object.v1.finalized`, the CloudEvent's data (a
  StorageObjectData: {"kind": "storage#object", "bucket", "name", "generation", "size",
  "etag", "contentType", "timeCreated", ...},
  https://cloud.google.com/eventarc/docs/cloudevents); the key is
  `gcs:<bucket>/<name>#<generation>` (a new generation per write of the object).
- local/serve, the watched directory: {"kind": "unumctl#localObject", "bucket": the
  trigger's directory name, "name": the path below it, "generation": the file's mtime in
  ns, "size"}; the key is `storage:<bucket>/<name>#<generation>`.

The session's input is {"bucket", "key", "size", "etag", "version"} (etag None locally).
The trigger's `prefix` and `suffix` filter here too (the cloud notification filters first).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote_plus

from .base import SourceEventError, Start, field_of

__all__ = ["LOCAL_OBJECT_KIND", "storage_starts"]

LOCAL_OBJECT_KIND = "unumctl#localObject"
_GCS_KINDS = {"storage#object": "gcs", LOCAL_OBJECT_KIND: "storage"}


def storage_starts(trigger: Mapping[str, Any], event: Mapping[str, Any]) -> list[Start]:
    """The Starts of a storage event for `trigger` (its "name", "prefix", "suffix"): one per
    object-created S3 record whose key passes the filter, or one for a GCS / local object.
    SourceEventError for another shape."""
    name = str(trigger.get("name"))
    where = f"triggers.{name}: storage event"
    if event.get("Event") == "s3:TestEvent":
        return []
    if "Records" in event:
        records = event["Records"]
        if not isinstance(records, list):
            raise SourceEventError(f"{where}: Records: expected a list of S3 records")
        starts: list[Start | None] = [_s3(name, r, f"{where}: Records[{i}]") for i, r in enumerate(records)]
    elif "bucket" in event and "name" in event:
        starts = [_object(name, event, where)]
    else:
        raise SourceEventError(f"{where}: expected S3 notification Records or Cloud Storage object data")
    prefix, suffix = trigger.get("prefix") or "", trigger.get("suffix") or ""
    return [s for s in starts if s is not None
            and s.input["key"].startswith(prefix) and s.input["key"].endswith(suffix)]


def _s3(name: str, record: Any, where: str) -> Start | None:
    if field_of(record, "eventSource", where) != "aws:s3":
        raise SourceEventError(f"{where}.eventSource: expected 'aws:s3'")
    if not str(record.get("eventName", "")).startswith("ObjectCreated:"):
        return None
    s3 = field_of(record, "s3", where, dict)
    bucket = field_of(field_of(s3, "bucket", f"{where}.s3", dict), "name", f"{where}.s3.bucket")
    obj = field_of(s3, "object", f"{where}.s3", dict)
    key = unquote_plus(field_of(obj, "key", f"{where}.s3.object"))
    version = obj.get("versionId") or None
    ident = version or obj.get("sequencer")
    if not isinstance(ident, str) or not ident:
        raise SourceEventError(f"{where}.s3.object: neither versionId nor sequencer (the event's identity)")
    value = {"bucket": bucket, "key": key, "size": obj.get("size"), "etag": obj.get("eTag"), "version": version}
    ctx = {"trigger": name, "source": "s3", "bucket": bucket, "key": key, "event_time": record.get("eventTime")}
    return Start(f"s3:{bucket}/{key}@{ident}", value, ctx)


def _object(name: str, data: Mapping[str, Any], where: str) -> Start:
    kind = _GCS_KINDS.get(str(data.get("kind", "storage#object")))
    if kind is None:
        raise SourceEventError(f"{where}.kind: expected one of {', '.join(_GCS_KINDS)}")
    bucket, key = field_of(data, "bucket", where), field_of(data, "name", where)
    generation = data.get("generation")
    if not isinstance(generation, (str, int)) or isinstance(generation, bool) or str(generation) == "":
        raise SourceEventError(f"{where}.generation: expected the object's generation")
    size = data.get("size")
    value = {"bucket": bucket, "key": key, "size": int(str(size)) if str(size).isdigit() else size,
             "etag": data.get("etag"), "version": str(generation)}
    ctx = {"trigger": name, "source": kind, "bucket": bucket, "key": key,
           "event_time": data.get("timeCreated") or data.get("updated")}
    return Start(f"{kind}:{bucket}/{key}#{generation}", value, ctx)
