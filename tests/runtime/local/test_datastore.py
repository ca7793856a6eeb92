"""The local target's SQLite datastore passes the datastore conformance suite, directly
and with adversarial (item by item, reversed) reads, and holds sets of 20,000 members."""

import pytest

from runtime.local.datastore import SqliteDatastore

from unumctl_testing.conformance.datastore_suite import AdversarialReadsSuite, DatastoreSuite, LargeSetSuite


class SqliteStore:
    """`store` on a fresh file; `other_store` is a second connection to the same file."""

    @pytest.fixture
    def store(self, tmp_path):
        ds = SqliteDatastore(tmp_path / "unum.db")
        yield ds
        ds.close()

    @pytest.fixture
    def other_store(self, store):
        ds = SqliteDatastore(store.path)
        yield ds
        ds.close()

    @pytest.fixture
    def raw_names(self, store):
        def names(session):
            rows = store.db.execute(
                "SELECT name FROM items WHERE session=? UNION ALL "
                "SELECT name FROM set_sizes WHERE session=? UNION ALL "
                "SELECT name FROM set_members WHERE session=?", (session,) * 3).fetchall()
            return [r[0] for r in rows]
        return names


class TestSqliteDatastore(SqliteStore, DatastoreSuite, LargeSetSuite):
    large_n = 20_000


class TestSqliteDatastoreAdversarialReads(SqliteStore, AdversarialReadsSuite):
    pass


def test_purge_expired_emulates_ttl(tmp_path):
    ds = SqliteDatastore(tmp_path / "u.db")
    ds.put("s", "old", {"v": 1}, expires_at=100.0)
    ds.put("s", "new", {"v": 2}, expires_at=10**12)
    ds.set_add("s", "gc/old", "x", expires_at=100.0)
    assert ds.purge_expired(now=200.0) == 2
    assert ds.get("s", "old") is None and ds.get("s", "new") == {"v": 2}
    assert ds.set_add("s", "gc/old", "y", 10**12) == 1
