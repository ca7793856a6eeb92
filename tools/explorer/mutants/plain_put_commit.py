"""The commit is a plain put instead of create-if-absent: every execution "wins"."""

from . import DatastoreProxy, wrap_engine_ports

NAME = "plain-put-commit"
ABOUT = "checkpoints are written with put and the writer always believes it committed"
WORKFLOWS = ["chain", "fanout", "blobs"]
TESTS = ["tests/runtime/test_engine_commit_point.py"]
INVISIBLE = None


class PlainPut(DatastoreProxy):
    def create_if_absent(self, session, name, item, expires_at):
        if name.startswith("ckpt/"):
            self._inner.put(session, name, item, expires_at)
            return True, item
        return self._inner.create_if_absent(session, name, item, expires_at)


def apply(p):
    wrap_engine_ports(p, ds=PlainPut)
