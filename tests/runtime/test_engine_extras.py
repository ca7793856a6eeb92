"""Engine extensions used by the Step Functions front-end: payload fields beyond the
protocol's (`Payload.extra`) reach the wrapper through the context and every child
payload (Scalar, Map and Fan-in), and wrappers with `attach` get the engine."""

from runtime.engine import Engine
from runtime.ir import load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker


class Recorder(Invoker):
    def __init__(self):
        self.calls = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


class Wrap:
    def __init__(self):
        self.engine = None
        self.seen = []

    def attach(self, engine):
        self.engine = engine

    def __call__(self, call_user, value, ctx):
        self.seen.append(dict(ctx.extra))
        ctx.extra["Added"] = 1  # a wrapper may add fields for its continuations
        return call_user(value, ctx), "go"


def test_extra_reaches_wrapper_and_children(tmp_path):
    ir = load_function({"Name": "A", "Next": [
        {"Name": "B", "Type": "Map", "Conditional": "$route == 'go'"},
        {"Name": "C", "Type": "Fan-in", "Values": ["A"]}]})
    inv, w = Recorder(), Wrap()
    eng = Engine(ir, lambda e, c: [1, 2], SqliteDatastore(tmp_path / "db"), inv,
                 FileBlobStore(tmp_path / "b"), wrapper=w)
    assert w.engine is eng
    out = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": 0}, "AslExec": {"Start": 5}})
    assert out.status == "ran"
    assert len(w.seen) == 1 and w.seen[0]["AslExec"] == {"Start": 5}
    assert set(w.seen[0]) == {"AslExec", "UnumSession"}  # the entry starts the session's context
    assert [fn for fn, _ in inv.calls] == ["B", "B", "C"]
    for _, payload in inv.calls:
        assert payload["AslExec"] == {"Start": 5} and payload["Added"] == 1


def test_ended_session_runs_no_more_user_code_under_gc_none(tmp_path):
    """Under `runtime.gc: none` (the aws and gcp default) the ingress still reads `result`: once
    a session has ended (another branch failed, a stop, a give-up), an invocation that has no
    checkpoint yet drops instead of running its user code (docs/protocol.md "GC modes")."""
    import time

    from runtime.engine import Options
    from runtime.session import failure_item, finish

    ds = SqliteDatastore(tmp_path / "db")
    ran = []
    ir = load_function({"Name": "B", "Next": {"Name": "C"}})
    eng = Engine(ir, lambda e, c: ran.append(e) or e, ds, Recorder(), FileBlobStore(tmp_path / "b"),
                 options=Options(gc="none"))
    finish(ds, "s1", failure_item("A", "Boom", "another branch failed"), time.time() + 3600)
    out = eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": 1},
                      "UnumSession": {"Start": time.time()}})
    assert out.status == "dropped" and "finished" in out.detail
    assert ran == []
