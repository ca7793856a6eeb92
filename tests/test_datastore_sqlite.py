"""The local target's SQLite datastore passes the datastore conformance suite."""

import pytest

from runtime.local.datastore import SqliteDatastore

from .conformance.datastore_suite import DatastoreSuite


class TestSqliteDatastore(DatastoreSuite):
    @pytest.fixture
    def store(self, tmp_path):
        ds = SqliteDatastore(tmp_path / "unum.db")
        yield ds
        ds.close()


def test_purge_expired_emulates_ttl(tmp_path):
    ds = SqliteDatastore(tmp_path / "u.db")
    ds.put("s", "old", {"v": 1}, expires_at=100.0)
    ds.put("s", "new", {"v": 2}, expires_at=10**12)
    ds.set_add("s", "gc/old", "x", expires_at=100.0)
    assert ds.purge_expired(now=200.0) == 2
    assert ds.get("s", "old") is None and ds.get("s", "new") == {"v": 2}
    assert ds.set_add("s", "gc/old", "y", 10**12) == 1
