"""Issue 25, item 1: each execution's history event (level `full`) carries what a planner
needs (runtime/metadata.py): `peak_memory_mb`, `fanout_width` (calls planned per edge kind)
and `edges` (bytes sent per target), beside the existing `payload_bytes` (input) and
`checkpoint_bytes` (output) and the time split (duration). Nothing at session-only."""

from __future__ import annotations

import resource

from runtime.engine import Engine, Options
from runtime.ir import load_function
from runtime.local.datastore import FileBlobStore, SqliteDatastore
from runtime.local.history import SqliteHistory
from runtime.storage import encode
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app
from unumctl.observe import LocalHistoryReader

from tests.unumctl.observe.test_history import Recorder, hist_app


def test_events_carry_planner_metadata(tmp_path):
    app_dir = hist_app(tmp_path / "app")
    with LocalRunner(load_app(app_dir)) as runner:
        assert runner.run(["a", "bb", "c"], "m-1", timeout=60)["status"] == "SUCCEEDED"
        runner.platform.wait_idle(30)
    r = LocalHistoryReader(load_app(app_dir))
    events = [e for e in r.history("m-1") if e["kind"] == "ran"]
    r.close()
    by_fn: dict[str, list[dict]] = {}
    for e in events:
        by_fn.setdefault(e["function"], []).append(e)
    (start,), works, (join,) = by_fn["Start"], by_fn["Work"], by_fn["Join"]
    # Start fans out to 3 Map branches: each payload value is one item's JSON
    assert start["fanout_width"] == {"map": 3}
    assert start["edges"] == {"Work": ["map", len(encode("a")) + len(encode("bb")) + len(encode("c"))]}
    assert len(works) == 3
    for w in works:  # every branch plans its fan-in call (its set add), with its output's size
        assert w["fanout_width"] == {"fanin": 1}
        assert w["edges"] == {"Join": ["fanin", w["checkpoint_bytes"]]} and w["checkpoint_bytes"] > 0
    assert "fanout_width" not in join and "edges" not in join  # a terminal plans no call
    for e in events:
        assert 1 < e["peak_memory_mb"] < 4096 and e["payload_bytes"] > 0
        assert all(e[k] >= 0 for k in ("user_ms", "datastore_ms", "invoke_ms", "runtime_ms"))


def test_peak_memory_is_the_process_peak_and_only_at_full(tmp_path):
    """In one process: the recorded peak is getrusage's ru_maxrss (KiB on Linux) in MB; at
    session-only no execution event is written at all."""
    for level in ("full", "session-only"):
        ds = SqliteDatastore(tmp_path / f"{level}.db")
        ev = SqliteHistory(ds, level)
        ir = load_function({"Name": "A", "Start": True, "Next": {"Name": "B"}})
        eng = Engine(ir, lambda e, c: e, ds, Recorder(), FileBlobStore(tmp_path / "b"),
                     Options(history=level), events=ev)
        eng.handle({"Session": "s1", "Data": {"Source": "http", "Value": [1, 2]}}, {"attempt": 1})
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        events = ev.events("s1")
        if level == "full":
            (e,) = events
            assert 0 < e["peak_memory_mb"] <= round(after, 1) + 0.1
            assert e["fanout_width"] == {"scalar": 1} and e["edges"] == {"B": ["scalar", len(encode([1, 2]))]}
        else:
            assert events == []
