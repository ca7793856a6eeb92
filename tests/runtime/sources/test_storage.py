"""Storage events (runtime/sources/storage.py): S3 object-created records, Cloud Storage
finalize data and the watched directory's objects each give one Start keyed by the object
and its version, filtered by the trigger's prefix and suffix."""

from __future__ import annotations

import pytest

from runtime.sources import SourceEventError, starts
from runtime.sources.storage import LOCAL_OBJECT_KIND

UPLOADS = {"name": "uploads", "type": "storage", "prefix": "in/", "suffix": ".json"}


def s3_record(key: str, sequencer: str = "0055AED6DCD90281E5", version: str | None = None,
              event_name: str = "ObjectCreated:Put") -> dict:
    """An S3 notification record (version 2.1 of the structure in
    https://docs.aws.amazon.com/AmazonS3/latest/userguide/notification-content-structure.html)."""
    obj = {"key": key, "size": 1024, "eTag": "d41d8cd98f00b204e9800998ecf8427e", "sequencer": sequencer}
    if version is not None:
        obj["versionId"] = version
    return {"eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-west-2",
            "eventTime": "1970-01-01T00:00:00.000Z", "eventName": event_name,
            "s3": {"s3SchemaVersion": "1.0", "configurationId": "c", "bucket": {"name": "amzn-s3-demo-bucket",
                                                                             "arn": "arn:aws:s3:::amzn-s3-demo-bucket"},
                   "object": obj}}


def test_an_s3_record_is_keyed_by_bucket_key_and_sequencer_and_its_key_is_url_decoded():
    (s,) = starts(UPLOADS, {"Records": [s3_record("in/my+fil%C3%A9.json")]})
    assert s.key == "s3:amzn-s3-demo-bucket/in/my filé.json@0055AED6DCD90281E5"
    assert s.input == {"bucket": "amzn-s3-demo-bucket", "key": "in/my filé.json", "size": 1024,
                       "etag": "d41d8cd98f00b204e9800998ecf8427e", "version": None}


def test_a_versioned_object_is_keyed_by_its_version_id():
    (s,) = starts(UPLOADS, {"Records": [s3_record("in/a.json", version="3sL4kqtJlcpXroDTDmJ")]})
    assert s.key.endswith("@3sL4kqtJlcpXroDTDmJ") and s.input["version"] == "3sL4kqtJlcpXroDTDmJ"


def test_records_outside_the_filter_other_events_and_the_test_event_start_nothing():
    event = {"Records": [s3_record("out/a.json"), s3_record("in/a.txt"), s3_record("in/b.json", event_name="ObjectRemoved:Delete"),
                         s3_record("in/c.json")]}
    assert [s.input["key"] for s in starts(UPLOADS, event)] == ["in/c.json"]
    assert starts(UPLOADS, {"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"}) == []


def test_a_cloud_storage_object_is_keyed_by_its_generation():
    data = {"kind": "storage#object", "bucket": "b", "name": "in/x.json", "generation": "1710000000000001",
            "size": "52", "etag": "CJ+4", "timeCreated": "2024-03-09T00:00:00.000Z"}
    (s,) = starts(UPLOADS, data)
    assert s.key == "gcs:b/in/x.json#1710000000000001"
    assert s.input == {"bucket": "b", "key": "in/x.json", "size": 52, "etag": "CJ+4", "version": "1710000000000001"}


def test_a_watched_directory_object_has_its_own_prefix():
    (s,) = starts({**UPLOADS, "prefix": "", "suffix": ""},
                  {"kind": LOCAL_OBJECT_KIND, "bucket": "uploads", "name": "a.csv", "generation": 17, "size": 3})
    assert (s.key, s.context["source"]) == ("storage:uploads/a.csv#17", "storage")


@pytest.mark.parametrize("event, field", [
    ({"Records": [{"eventSource": "aws:sqs"}]}, "eventSource"),
    ({"Records": [{**s3_record("in/a.json"), "s3": {"bucket": {}, "object": {"key": "k"}}}]}, "bucket.name"),
    ({"Records": [s3_record("in/a.json", sequencer="")]}, "neither versionId nor sequencer"),
    ({"bucket": "b", "name": "in/a.json"}, "generation"),
    ({"kind": "other", "bucket": "b", "name": "in/a.json", "generation": "1"}, "kind"),
    ({"x": 1}, "expected S3 notification Records"),
])
def test_an_event_of_another_shape_is_one_line_naming_the_field(event, field):
    with pytest.raises(SourceEventError, match=field) as exc:
        starts(UPLOADS, event)
    assert str(exc.value).startswith("triggers.uploads: storage event")
