"""examples/quorum-replicas (`Quorum: 2` of 3 replicas, docs/ir.md "Quorum") on the GCP path
under faults: Firestore and Pub/Sub emulators, functions-framework serving the built functions,
injected crashes at the engine's crash points (HTTP 500, Pub/Sub redelivers) and duplicated
publishes. The plain run is tests/gcp/test_examples_gcp.py[quorum-replicas]."""

from __future__ import annotations

import json

import pytest

from runtime.faults import FaultSpec
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import EXAMPLES, expected_of
from .test_examples_gcp import _quiesce

pytestmark = pytest.mark.timeout(300)


def test_quorum_under_crashes_and_duplicates_on_gcp(emulators, tmp_path):
    """The session (its entry message published twice) ends with the agreed answer of two
    different replicas in quorum order, and nothing else outlives the item lifetime."""
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    example = EXAMPLES / "quorum-replicas"
    value = json.loads((example / "input.json").read_text())
    answer = {k: v for k, v in expected_of(example).items() if k not in ("$ignore", "replicas", "order")}
    faults = FaultSpec.parse("seed=5,crash=0.2,duplicate=0.3")
    with EmulatorPlatform(load_app(example), emulators, tmp_path, faults=faults) as plat:
        sid = plat.start_session(value, session="quorum-faults-1")
        plat.start_session(value, session=sid)  # the entry message published twice
        try:
            item = plat.wait_result(sid, timeout=180)
        except TimeoutError:
            pytest.fail(plat.logs())
        assert item["status"] == "SUCCEEDED", (item, plat.logs())
        v = item["v"]
        assert {k: v[k] for k in answer} == answer, v
        assert len(set(v["replicas"])) == 2 and sorted(v["order"]) == v["replicas"], v
        assert _quiesce(plat, sid) == ["result"]
        logs = "".join(p.log.read_text() for p in plat.servers.values())
    assert "injected crash" in logs  # the campaign really injected crashes
