"""Garbage collection of checkpoints by consumer count (runtime/gc.py, seed 001 §3.5,
docs/protocol.md "Egress" 5): a parent with several consumers is collected through its GC
set `gc/<parent>` by the consumer whose add completes it, never earlier."""

from __future__ import annotations

import pytest

from runtime.engine import Engine, Options
from runtime.ir import build_workflow, load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.ports import Invoker
from runtime.session import entry_payload


class Recorder(Invoker):
    """The platform's invoke API as a list (the test delivers the calls)."""

    def __init__(self):
        self.calls: list[tuple[str, dict]] = []

    def invoke_many(self, calls, delay=0.0):
        self.calls.extend(calls)


@pytest.mark.parametrize("gc,gone", [("safe", {"gc": True}), ("eager", None)])
@pytest.mark.parametrize("shape", ["parallel", "map"])
def test_a_fan_out_parent_is_collected_by_its_last_consumer_only(tmp_path, gc, gone, shape):
    """Start has 3 consumers (three Scalar edges, or a Map over 3 items): its checkpoint stays
    readable while any of them has not checkpointed, and the third one's GC collects it and
    its set (tools/explorer/mutants/gc_set_size_off_by_one.py collects it at the second)."""
    edge = ({"Next": [{"Name": "W"}, {"Name": "W"}, {"Name": "W"}]} if shape == "parallel"
            else {"Next": {"Name": "W", "Type": "Map"}})
    docs = [{"Name": "Start", "Start": True, **edge},
            {"Name": "W", "Next": {"Name": "J", "Type": "Fan-in", "Values": ["W-UnumIndex-*"],
                                   "Payload Modifiers": ["Pop"]}},
            {"Name": "J"}]
    w = build_workflow((load_function(d), d["Name"]) for d in docs)
    ds, inv = SqliteDatastore(tmp_path / "db"), Recorder()
    handlers = {"Start": lambda e, c: [1, 2, 3], "W": lambda e, c: c.index, "J": lambda e, c: e}
    eng = {fn: Engine(w.functions[fn], handlers[fn], ds, inv, FileBlobStore(tmp_path / "b"), Options(gc=gc))
           for fn in handlers}
    eng["Start"].handle(entry_payload("s1", None))
    branches, inv.calls[:] = [p for fn, p in inv.calls if fn == "W"], []
    assert len(branches) == 3
    start = ds.get("s1", "ckpt/Start")
    assert start["consumers"] == 3
    for i, p in enumerate(branches):
        assert eng["W"].handle(p).status == "ran"
        if i < 2:
            assert ds.get("s1", "ckpt/Start") == start, f"Start collected after {i + 1} of its 3 consumers"
    assert ds.get("s1", "ckpt/Start") == gone
    assert [fn for fn, _ in inv.calls] == ["J"]
    assert eng["J"].handle(inv.calls[0][1]).status == "ran"
    assert ds.get("s1", "result")["v"] == [0, 1, 2]
    assert ds.dump() == {"s1": ["result"]}
