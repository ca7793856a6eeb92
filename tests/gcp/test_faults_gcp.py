"""Faults on the GCP path (emulators, functions-framework, Pub/Sub push):

- a short seeded campaign: injected crashes at the engine's four crash points (the function
  answers HTTP 500 and Pub/Sub redelivers), duplicated publishes, and a duplicated entry
  message; invariants: every session completes with the fault-free result and afterwards
  the datastore holds only result items (or, under the default `gc: none`, nothing else
  outlives the item lifetime);
- a function that crashes on every delivery: after max_delivery_attempts the session is
  recorded as FAILED and the message is on the dead-letter topic (nothing lost silently).
"""

from __future__ import annotations

import json
import time

import pytest

from runtime.faults import FaultSpec
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import EXAMPLES, expected_of, make_app, matches_expected
from .test_examples_gcp import _quiesce

CAMPAIGN = ["text-processing", "wordcount", "pipeline-fold", "loop-counter"]


pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("name", CAMPAIGN)
def test_fault_campaign(name, emulators, tmp_path, campaign_runs):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    example = EXAMPLES / name
    app = load_app(example)
    value = json.loads((example / "input.json").read_text())
    runs = max(1, campaign_runs // 15)  # CI default 30 -> 2 sessions per example
    faults = FaultSpec.parse("seed=7,crash=0.15,duplicate=0.1")
    with EmulatorPlatform(app, emulators, tmp_path, faults=faults) as plat:
        sessions = []
        for i in range(runs):
            sid = plat.start_session(value, session=f"{name}-campaign-{i}")
            if i == 0:  # the entry message published twice
                plat.start_session(value, session=sid)
            sessions.append(sid)
        for sid in sessions:
            try:
                item = plat.wait_result(sid, timeout=180)
            except TimeoutError:
                pytest.fail(plat.logs())
            assert item["status"] == "SUCCEEDED", item
            assert matches_expected(item["v"], expected_of(example)), sid
        logs = "".join(p.log.read_text() for p in plat.servers.values())  # whole logs, not the tails
        for sid in sessions:
            left = _quiesce(plat, sid)
            assert left == ["result"], f"{sid} left {left}"
    assert "injected crash" in logs  # the campaign really injected crashes


def test_crash_on_every_delivery_fails_session_and_dead_letters(emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    root = make_app(tmp_path / "app", "crashy", {
        "Start": ({"Start": True, "Next": {"Name": "Boom"}}, "def handler(e, c):\n    return e\n"),
        "Boom": ({}, "class Crash(BaseException):\n    pass\n\n"
                     "def handler(e, c):\n    raise Crash('the runtime process died')\n"),
    }, runtime={"max_delivery_attempts": 2})
    app = load_app(root)
    with EmulatorPlatform(app, emulators, tmp_path / "plat") as plat:
        sid = plat.start_session({"x": 1})
        item = plat.wait_result(sid, timeout=120)
        assert item["status"] == "FAILED" and item["instance"] == "Boom", item
        assert item["error"] == "Crash" and "2 delivery attempts" in item["cause"]
        sub = plat.subscriber.subscription_path(emulators.project, f"{plat.dead_letter}-hold")
        deadline, msgs = time.monotonic() + 20, []
        while not msgs and time.monotonic() < deadline:
            msgs = plat.subscriber.pull(request={"subscription": sub, "max_messages": 10},
                                        timeout=5).received_messages
        assert msgs, "no message on the dead-letter topic"
        m = msgs[0].message
        assert json.loads(m.data)["Session"] == sid
        assert m.attributes["unum_function"] == "Boom" and m.attributes["unum_error"] == "Crash"
        assert _quiesce(plat, sid) == ["result"]
