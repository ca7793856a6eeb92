"""`unumctl redrive --cloud gcp` (Target.redrive, runtime/redrive.py) against the Firestore and
Pub/Sub emulators with the functions run by functions-framework (unumctl/emulate/gcp/platform.py):
a session whose middle step fails is redriven and succeeds, the step that had succeeded ran
once, redriveCount is 1, the history has the redriven event; a SUCCEEDED session is
ExecutionNotRedrivable; one past the 14 days is refused (the clock is passed, no sleep)."""

from __future__ import annotations

import json

import pytest

from runtime.redrive import REDRIVE_WINDOW, describe
from unumctl.pipeline import load as load_app
from unumctl.targets import TargetError, get_target

from tests.unumctl.test_cli import cli_process as cli  # a child process, as before
from tests.runtime.test_redrive import redrive_app, runs
from .test_history_gcp import _settle

pytestmark = pytest.mark.timeout(420)


def test_a_failed_session_is_redriven_on_gcp(emulators, tmp_path):
    from unumctl.gcp.emulate.platform import EmulatorPlatform

    app_dir = redrive_app(tmp_path / "app", name="gcp-redrive")
    fx = tmp_path / "fx"
    fx.mkdir()
    app = load_app(app_dir)
    with EmulatorPlatform(app, emulators, tmp_path / "plat") as plat:
        plat.start_session({"dir": str(fx), "n": 1}, session="g1")
        assert plat.wait_result("g1", 120)["status"] == "FAILED"
        plat.start_session({"dir": str(fx), "n": 1}, session="g2")
        assert plat.wait_result("g2", 120)["status"] == "FAILED"
        assert (runs(fx, "first"), runs(fx, "flaky")) == (2, 2)
        target = get_target("gcp", app)
        ds, _ = target.callback_ports()
        stop = ds.get("g2", "redrive/from/0")["at"]
        with pytest.raises(TargetError, match=r"^ExecutionNotRedrivable: Execution stopped 14\.0 days ago"):
            target.redrive("g2", now=stop + REDRIVE_WINDOW + 60, wait=False)

        (fx / "fixed").write_text("")
        code, out, err = cli("redrive", str(app_dir), "g1", "--cloud", "gcp", "--timeout", "120")
        assert code == 0, err
        assert json.loads(out) == 21
        events = _settle(app_dir, "g1")
        assert (runs(fx, "first"), runs(fx, "flaky")) == (2, 3)  # g1's First never re-ran
        st = describe(ds, "g1", None, 0.0)
        assert (st.count, st.status) == (1, "NOT_REDRIVABLE")
        kinds = [e["kind"] for e in events]
        assert kinds.count("redriven") == 1, kinds
        d = json.loads(cli("describe", str(app_dir), "g1", "--cloud", "gcp", "--json")[1])
        failed_at = next(e["t1"] for e in events if e["kind"] == "failed")
        assert d["status"] == "SUCCEEDED" and d["end"] > failed_at  # the redriven run's end
        code, out, err = cli("redrive", str(app_dir), "g1", "--cloud", "gcp")
        assert code != 0
        assert "unumctl: ExecutionNotRedrivable: Execution is SUCCEEDED and cannot be redriven" in err
