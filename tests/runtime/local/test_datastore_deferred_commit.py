"""The local datastore's deferred commit (runtime/local/datastore.py, docs/local.md
"Transactions"): an execution's writes from its checkpoint on become visible to other
processes together, at `commit_deferred()`, or not at all."""

import os
import sqlite3

import pytest

from runtime.local.datastore import SqliteDatastore
from runtime.local.queue import DurableQueue


@pytest.fixture
def two(tmp_path):
    a, b = SqliteDatastore(tmp_path / "unum.db"), SqliteDatastore(tmp_path / "unum.db")
    yield a, b
    a.close()
    b.close()


def test_writes_from_the_checkpoint_on_are_one_transaction(two):
    a, b = two
    qa, qb = DurableQueue(a), DurableQueue(b)  # (creating the tables commits: before the execution)
    a.defer_from("ckpt/")
    a.create_if_absent("s", "asl/try/1", {"v": 1}, 1e12)  # before the commit point: at once
    assert b.get("s", "asl/try/1") == {"v": 1}
    assert a.create_if_absent("s", "ckpt/F", {"v": 2}, 1e12) == (True, {"v": 2})
    a.put("s", "ckpt/E", {"gc": True}, 1e12)
    (qid,) = qa.add([("G", {"Session": "s"})], "owner")
    assert a.get_many("s", ["ckpt/F", "ckpt/E"]) == [{"v": 2}, {"gc": True}]  # its own writes
    assert b.get_many("s", ["ckpt/F", "ckpt/E"]) == [None, None]  # nobody else's yet
    assert qb.get(qid) is None
    a.commit_deferred()
    assert b.get_many("s", ["ckpt/F", "ckpt/E"]) == [{"v": 2}, {"gc": True}]
    assert qb.get(qid) is not None
    b.put("s", "after", {"v": 3}, 1e12)  # the writers' lock was released with the commit
    a.put("s", "after2", {"v": 4}, 1e12)  # and `a` writes one transaction at a time again
    assert b.get("s", "after2") == {"v": 4}


def test_a_failed_write_undoes_only_itself(two):
    a, b = two
    a.defer_from("ckpt/")
    a.create_if_absent("s", "ckpt/F", {"v": 1}, 1e12)
    with pytest.raises(RuntimeError):
        with a._write():
            a.db.execute("INSERT INTO items VALUES ('s', 'half', '{}', 1e12)")
            raise RuntimeError("a failed write")
    with pytest.raises(sqlite3.IntegrityError):  # one statement (no SAVEPOINT): SQLite undoes it
        with a._write(single=True):
            a.db.execute("INSERT INTO items VALUES ('s', 'null', NULL, 1e12)")
    a.put("s", "after", {"v": 2}, 1e12)
    a.commit_deferred()
    assert b.get_many("s", ["ckpt/F", "half", "null", "after"]) == [{"v": 1}, None, None, {"v": 2}]


def test_a_crash_before_the_commit_loses_every_write(two):
    """A SIGKILLed instance (here: a forked child that exits without committing) leaves
    nothing of its execution, and the lock it held is released."""
    a, b = two
    pid = os.fork()
    if pid == 0:  # child: its own connection, as a worker process has
        try:
            c = SqliteDatastore(a.path)
            c.defer_from("ckpt/")
            c.create_if_absent("s", "ckpt/F", {"v": 1}, 1e12)
            c.set_add("s", "fanin/J", "F", 1e12)
        finally:
            os._exit(9)
    _, status = os.waitpid(pid, 0)
    assert os.WEXITSTATUS(status) == 9
    assert b.get("s", "ckpt/F") is None
    assert b.set_add("s", "fanin/J", "G", 1e12) == 1  # F's add was lost with it


def test_the_result_of_a_function_with_no_edge_starts_the_transaction_too(two):
    """Its commit point is the create of `result`: what it writes from there (tombstones of
    its inputs, the final sweep) is one transaction, as after a checkpoint."""
    a, b = two
    a.put("s", "ckpt/W0", {"v": 0}, 1e12)
    a.defer_from("ckpt/", ("result",))
    a.create_if_absent("s", "resultant", {"v": 1}, 1e12)  # only the exact name counts
    assert b.get("s", "resultant") == {"v": 1}
    assert a.create_if_absent("s", "result", {"v": 2}, 1e12) == (True, {"v": 2})
    a.put("s", "ckpt/W0", {"gc": True}, 1e12)
    assert b.get_many("s", ["result", "ckpt/W0"]) == [None, {"v": 0}]
    a.commit_deferred()
    assert b.get_many("s", ["result", "ckpt/W0"]) == [{"v": 2}, {"gc": True}]
    a.put("s", "after", {"v": 3}, 1e12)  # one transaction per write again
    assert b.get("s", "after") == {"v": 3}
