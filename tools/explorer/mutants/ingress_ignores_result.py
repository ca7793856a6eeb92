"""The ingress does not look at the session's `result`: an invocation delivered after the
session ended runs its user code (issue 22: "an ingress that ignores `result`")."""

from runtime.engine import Engine

from . import DatastoreProxy, in_phase, mark_phase, wrap_engine_ports

NAME = "ingress-ignores-result"
ABOUT = "the ingress reads `result` but treats it as absent"
WORKFLOWS = ["fanout-fail-none", "chain"]
TESTS = ["tests/runtime/test_engine_commit_point.py", "tests/runtime/test_session.py"]
INVISIBLE = None


class NoResult(DatastoreProxy):
    def get_many(self, session, names):
        got = self._inner.get_many(session, names)
        if in_phase("ingress"):
            got = [None if n == "result" else it for n, it in zip(names, got)]
        return got


def apply(p):
    mark_phase(p, Engine, "_ingress", "ingress")
    wrap_engine_ports(p, ds=NoResult)
