"""Every example runs end to end on the GCP adapter against the emulators: built gcp
bundles served by functions-framework, invoked through Pub/Sub push subscriptions, state in
the Firestore emulator, large values in the GCS stand-in. Nothing in runtime/gcp is mocked.
Afterwards the datastore holds only the session's result item (under `runtime.gc: safe`), or
(under `none`, the GCP default) nothing else outlives the session's item lifetime (the
Firestore TTL policy on `expires_at` removes it)."""

from __future__ import annotations

import json
import time

import pytest
from google.cloud import firestore

from runtime.engine import Options
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import cloud_example_params, expected_of, matches_expected


def _quiesce(plat, session, timeout=20.0):
    """What the session leaves that outlives its item lifetime: under `gc: safe`/`eager`, wait
    until the items settle to the result alone (GC runs after the result is written) and
    return their names; under `none` nothing is collected, so return `result` and the names
    of documents whose `expires_at` lies beyond start + session timeout + margin."""
    options = Options.from_mapping(plat.app.runtime_options("gcp"))
    if options.gc == "none":
        retention = options.retention
        horizon = time.time() + retention.session_timeout + retention.margin + 60
        docs = plat.ds.coll.where(filter=firestore.FieldFilter("session", "==", session)).stream()
        return sorted({d.get("name") for d in (s.to_dict() for s in docs)
                       if d.get("name") == "result" or d["expires_at"].timestamp() > horizon})
    deadline = time.monotonic() + timeout
    names = None
    while time.monotonic() < deadline:
        names = plat.ds.dump(session).get(session, [])
        if names == ["result"]:
            return names
        time.sleep(0.2)
    return names


pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("example", cloud_example_params(pytest.mark.gcp_long))
def test_example_runs_on_gcp_emulators(example, emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app = load_app(example)
    value = json.loads((example / "input.json").read_text())
    with EmulatorPlatform(app, emulators, tmp_path) as plat:
        try:
            session = plat.start_session(value)
            item = plat.wait_result(session, timeout=120)
        except TimeoutError:
            pytest.fail(plat.logs())
        assert item["status"] == "SUCCEEDED", (item, plat.logs())
        assert matches_expected(item["v"], expected_of(example))
        assert _quiesce(plat, session) == ["result"]
