"""Redrive (runtime/redrive.py, Step Functions' RedriveExecution) on the local target: a
session whose middle step fails is redriven: it succeeds, the step that had succeeded ran
once, redriveCount is 1 and ExecutionRedriven is in the history; a SUCCEEDED session, an
app without runtime.redrive and a session past the 14-day window are not redrivable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runtime.redrive import REDRIVE_WINDOW
from unumctl.local.target import LocalTarget
from unumctl.pipeline import load as load_app
from unumctl.observe import reader
from unumctl.targets import TargetError

from unumctl_testing.apps import make_app
from tests.unumctl.test_cli import cli, one_error

# First counts its runs in a file; Flaky fails unless the flag file exists
COUNTED = """
import os
def handler(e, c):
    with open(e["dir"] + "/first.runs", "a") as f:
        f.write("x")
    return {**e, "n": e["n"] + 1}
"""
FLAKY = """
import os
def handler(e, c):
    with open(e["dir"] + "/flaky.runs", "a") as f:
        f.write("x")
    if not os.path.exists(e["dir"] + "/fixed"):
        raise RuntimeError("not fixed yet")
    return {**e, "n": e["n"] * 10}
"""
LAST = "def handler(e, c):\n    return e['n'] + 1\n"


def redrive_app(root: Path, redrive: bool = True, name: str = "redrive-app") -> Path:
    """First -> Flaky -> Last, checkpointing, with runtime.redrive set to `redrive`."""
    return make_app(root, name, {
        "First": ({"Start": True, "Next": {"Name": "Flaky"}}, COUNTED),
        "Flaky": ({"Next": {"Name": "Last"}}, FLAKY),
        "Last": ({}, LAST)}, runtime={"redrive": redrive})


def runs(d: Path, name: str) -> int:
    p = d / f"{name}.runs"
    return len(p.read_text()) if p.exists() else 0


@pytest.fixture
def failed(tmp_path):
    """(app dir, side-effect dir, session id) of a session that FAILED in Flaky."""
    app = redrive_app(tmp_path / "app")
    fx = tmp_path / "fx"
    fx.mkdir()
    (tmp_path / "in.json").write_text(json.dumps({"dir": str(fx), "n": 1}))
    code, out, err = cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--session", "s1")
    assert code == 1, (out, err)
    assert runs(fx, "first") == 1 and runs(fx, "flaky") == 1
    return app, fx, "s1"


def test_a_failed_session_is_redriven_from_its_failed_step(failed):
    app, fx, session = failed
    (fx / "fixed").write_text("")
    code, out, err = cli("redrive", str(app), session)
    assert code == 0, (out, err)
    assert json.loads(out) == (1 + 1) * 10 + 1
    assert runs(fx, "first") == 1  # committed before the failure: never re-run
    assert runs(fx, "flaky") == 2
    a = load_app(app)
    r = reader("local", a)
    assert r.describe(session)["status"] == "SUCCEEDED"
    kinds = [e.get("kind") for e in r.history(session)]
    assert kinds.count("redriven") == 1, kinds
    ds, _ = LocalTarget(a).callback_ports()
    from runtime.redrive import describe
    st = describe(ds, session, None, 0.0)
    assert (st.count, st.status) == (1, "NOT_REDRIVABLE") and st.date is not None
    # a SUCCEEDED session: Step Functions' error, one line
    code, out, err = cli("redrive", str(app), session)
    assert code != 0
    assert one_error(err) == "unumctl: ExecutionNotRedrivable: Execution is SUCCEEDED and cannot be redriven"


def test_a_session_past_the_redrivable_period_is_not_redrivable(failed):
    app, fx, session = failed
    (fx / "fixed").write_text("")
    target = LocalTarget(load_app(app))
    ds, _ = target.callback_ports()
    from runtime.redrive import describe
    first = ds.get(session, "redrive/from/0")
    stop = first["at"]
    assert describe(ds, session, None, stop + REDRIVE_WINDOW - 60).status == "REDRIVABLE"
    with pytest.raises(TargetError, match=r"^ExecutionNotRedrivable: Execution stopped 14\.0 days ago"):
        target.redrive(session, now=stop + REDRIVE_WINDOW + 60)
    assert runs(fx, "flaky") == 1  # nothing was re-invoked
    assert target.redrive(session, now=stop + REDRIVE_WINDOW - 60)["result"]["status"] == "SUCCEEDED"


def test_an_app_without_runtime_redrive_keeps_nothing_to_redrive(tmp_path):
    app = redrive_app(tmp_path / "app", redrive=False)
    fx = tmp_path / "fx"
    fx.mkdir()
    (tmp_path / "in.json").write_text(json.dumps({"dir": str(fx), "n": 1}))
    assert cli("invoke", str(app), "--data", str(tmp_path / "in.json"), "--session", "s2")[0] == 1
    code, _out, err = cli("redrive", str(app), "s2")
    assert code != 0
    assert one_error(err).startswith("unumctl: ExecutionNotRedrivable: Execution kept no state to redrive from")
