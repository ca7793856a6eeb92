"""Map MaxConcurrency on the GCP target (functions-framework behind Pub/Sub push, the
Firestore emulator; tests/gcp/test_examples_gcp.py): MaxConcurrency 2 over 20 items never
has more than 2 items in flight, measured from the stubs' own start/end times."""

from __future__ import annotations

import pytest

from unumctl.pipeline import load as load_app

from tests.runtime.asl.test_fanout import concurrency_machine, make_app, max_overlap, read_spans

pytestmark = pytest.mark.timeout(300)


def test_max_concurrency_2_over_20_items_on_gcp(emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    root = make_app(tmp_path / "app", concurrency_machine({"MaxConcurrency": 2}), ["Slow"], name="mc-gcp")
    app = load_app(root)
    with EmulatorPlatform(app, emulators, tmp_path / "plat") as plat:
        try:
            session = plat.start_session({"items": list(range(20)), "dir": str(tmp_path)})
            item = plat.wait_result(session, timeout=180)
        except TimeoutError:
            pytest.fail(plat.logs())
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [i * 10 for i in range(20)]
    spans = read_spans(tmp_path)
    assert sorted(s[0] for s in spans) == list(range(20))
    assert max_overlap([(t0, t1) for _, t0, t1 in spans]) <= 2
