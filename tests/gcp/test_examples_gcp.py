"""Every example runs end to end on the GCP adapter against the emulators: built gcp
bundles served by functions-framework, invoked through Pub/Sub push subscriptions, state in
the Firestore emulator, large values in the GCS stand-in. Nothing in runtime/gcp is mocked.
Afterwards the datastore holds only the session's result item."""

from __future__ import annotations

import json
import time

import pytest

from unumctl.manifest import load_app

from ..helpers import example_dirs, expected_of, matches_expected


def _quiesce(ds, session, timeout=20.0):
    """Wait until the session's items settle to the result alone (GC runs after the
    result is written)."""
    deadline = time.monotonic() + timeout
    names = None
    while time.monotonic() < deadline:
        names = ds.dump(session).get(session, [])
        if names == ["result"]:
            return names
        time.sleep(0.2)
    return names


pytestmark = pytest.mark.timeout(300)


@pytest.mark.parametrize("example", example_dirs(), ids=lambda p: p.name)
def test_example_runs_on_gcp_emulators(example, emulators, tmp_path):
    from unumctl_testing.gcp.platform import EmulatorPlatform

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
        assert _quiesce(plat.ds, session) == ["result"]
