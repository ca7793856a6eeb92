"""Windows across sessions on the local target (worker processes, SQLite, the platform's
delayed invocations as the ByTime timer): examples/window-campaigns counts a stream of
events sent as one session each, and a ByBatchSize app fires every N objects."""

from __future__ import annotations

import time

from runtime.triggers import window
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import ROOT, make_app


def _windows(ds, name: str) -> list[dict]:
    """The results of the consumer sessions of window `name`, in window order."""
    out, j = [], 0
    while (item := ds.get(window.window_session(name, j), "result")) is not None:
        out.append(item["v"])
        j += 1
    return out


def test_campaign_stream_counts_every_view_once_across_windows(tmp_path):
    """240 events (two thirds of them `view`s) sent over about
    2.5 s, one session each, some sessions started twice: every view is counted in exactly one
    ByTime window of 1 s, no other event is, and the stream spans several windows."""
    app = load_app(ROOT / "examples" / "window-campaigns")
    types = ("view", "click", "purchase")
    events = [{"event_id": f"e-{i:04d}", "user_id": f"u-{i % 7}", "ad_id": f"ad-{(i * 37) % 100:03d}",
               "event_type": types[i % 3] if i % 2 else "view", "event_time": 1700000000 + i / 100}
              for i in range(240)]
    with LocalRunner(app, state=tmp_path, quiet=True) as runner:
        t0 = time.monotonic()
        for i, ev in enumerate(events):
            runner.start(ev, session=f"ev-{i}")
            if i % 40 == 0:
                runner.start(ev, session=f"ev-{i}")  # the same session again: no second object
            time.sleep(0.01)
        sent = time.monotonic() - t0
        for i in range(len(events)):
            assert runner.platform.wait_result(f"ev-{i}", 60)["status"] == "SUCCEEDED"
        runner.platform.wait_idle(60)
        wins = _windows(runner.platform.ds, "campaigns")
    views = [e for e in events if e["event_type"] == "view"]
    counted = [eid for w in wins for eid in w["event_ids"]]
    assert sorted(counted) == sorted(e["event_id"] for e in views)  # each view once, nothing else
    assert [w["window"] for w in wins] == list(range(len(wins)))
    assert len(wins) >= 2, (sent, [len(w["event_ids"]) for w in wins])
    camp = {}
    for e in views:
        c = f"campaign-{int(e['ad_id'][3:]) // 10}"
        camp[c] = camp.get(c, 0) + 1
    total = {}
    for w in wins:
        assert sum(w["counts"].values()) == len(w["event_ids"])
        for c, n in w["counts"].items():
            total[c] = total.get(c, 0) + n
    assert total == camp


def test_batch_window_fires_every_n_objects_on_local(tmp_path):
    """ByBatchSize 5 over 12 sessions: two windows of 5, in slot order, each its own session;
    the last 2 objects wait for a window that never fills."""
    root = make_app(tmp_path / "app", "batch-win", {
        "Emit": ({"Start": True, "Next": {"Name": "Sum", "Type": "Window", "Window": "nums",
                                          "ByBatchSize": 5}}, "def handler(e, c):\n    return e\n"),
        "Sum": ({}, "def handler(e, c):\n    return {'items': e, 'id': c.extra['Window']['Id']}\n"),
    })
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as runner:
        for i in range(12):
            assert runner.run(i, session=f"s{i}", timeout=60)["v"] == i
        runner.platform.wait_idle(60)
        wins = _windows(runner.platform.ds, "nums")
    assert [w["id"] for w in wins] == [0, 1]
    assert sorted(w["items"] for w in wins) == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
