"""`unumctl tune --cloud aws --from-history` reads the planner metadata (issue 25) back from
CloudWatch Logs through the AWS history reader: sessions of hist-app run in the local Lambda
emulator (its output goes to moto's CloudWatch Logs as Lambda's does), then tune writes a
plan for aws from them. Long (about a minute): marked aws_long, run by `make test-aws-all`."""

from __future__ import annotations

import json

import pytest

from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.pipeline import load as load_app
from unumctl.tuning import planfile

from .test_history_aws import _json, cli, deployed  # noqa: F401  (the fixture)


@pytest.mark.aws_long
def test_tune_from_aws_history(deployed, tmp_path, monkeypatch):  # noqa: F811
    app_dir, _, _, specs, env = deployed
    app = str(app_dir)
    (tmp_path / "in.json").write_text('["a", "b", "c"]')
    with LocalLambda(specs, env) as emu:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", emu.url)
        for s in ("t-1", "t-2"):
            code, out, err = cli("invoke", app, "--cloud", "aws", "--data", str(tmp_path / "in.json"),
                                 "--session", s, "--timeout", "90")
            assert code == 0 and json.loads(out) == "ABC", err
        emu.wait_idle(60)
    events = _json(cli("history", app, "t-1", "--cloud", "aws", "--json"))
    start = next(e for e in events if e["kind"] == "ran" and e["function"] == "Start")
    assert start["fanout_width"] == {"map": 3} and start["peak_memory_mb"] > 0
    assert start["edges"]["Work"][0] == "map"
    code, out, err = cli("tune", app, "--cloud", "aws", "--from-history")
    assert code == 0, err
    plan = planfile.load(app_dir, load_app(app_dir).workflow.functions)
    assert plan.derived["cloud"] == "aws" and plan.derived["sessions"] == 2
    assert set(plan.memory) == {"Start", "Work", "Join"}
    assert plan.derived["predicted_critical_path_ms"] <= 1.1 * plan.derived["critical_path_ms"] + 0.1


@pytest.mark.aws_long
def test_tune_emulated_runs_the_cost_harness(tmp_path, monkeypatch):
    """`tune --cloud aws --emulated` runs the sessions on moto + the emulated Lambda through
    the measured run of `unumctl cost` (child process) and plans from the histories it hands
    back (11 s)."""
    # that run signs with moto's dummy credentials: no call is checked against a policy
    monkeypatch.delenv("UNUM_RECORD_CALLS", raising=False)
    import shutil
    from pathlib import Path

    from tests.unumctl.test_cli import cli as cli_proc
    src = Path(__file__).resolve().parents[2] / "examples" / "iot-pipeline"
    app_dir = tmp_path / "iot"
    shutil.copytree(src, app_dir, ignore=shutil.ignore_patterns(".unum"))
    code, out, err = cli_proc("tune", str(app_dir), "--cloud", "aws", "--emulated", "--sessions", "2")
    assert code == 0, err
    plan = planfile.load(app_dir, load_app(app_dir).workflow.functions)
    assert plan.derived["cloud"] == "aws" and plan.derived["sessions"] == 2
    assert "--emulated" in plan.derived["command"] and set(plan.memory) == {"Aggregate", "HvacDecide"}
    # the measured run's bill, in unumctl cost's figures (unumctl.tuning.command.measured_bill)
    assert [ln for ln in out.splitlines() if ln.startswith("measured, as unumctl cost bills it: $")], out
    code, _, err = cli_proc("tune", str(app_dir), "--cloud", "local", "--emulated")
    assert code == 2 and "--emulated" in err[-1]
