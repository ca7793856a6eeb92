"""`unumctl redrive --cloud aws` (Target.redrive, runtime/redrive.py, unumctl/aws/redrive.py):
the built aws archives run by the emulated Lambda (runtime/aws unpatched) on moto's DynamoDB,
S3 and CloudWatch Logs. A session whose middle step fails is redriven: it succeeds, the step
that had succeeded ran once, redriveCount is 1, the history (CloudWatch lines + the session
index) has the redriven event and the new end; a SUCCEEDED session is ExecutionNotRedrivable;
one past the 14 days is refused (the clock is passed, no sleep)."""

from __future__ import annotations

import json
import uuid

import pytest

from runtime.redrive import REDRIVE_WINDOW, describe
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import deployment
from unumctl.aws.emulate.local_lambda import LocalLambda
from unumctl.pipeline import load as load_app
from unumctl.targets import TargetError
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs

from tests.runtime.test_redrive import redrive_app, runs
from .conftest import aws_env
from .test_history_aws import _json, cli


@pytest.fixture
def deployed(moto_env, tmp_path, monkeypatch):
    """redrive-app built for aws, its table and bucket on moto, AwsTarget.outputs answering
    what `terraform output` would; yields (app dir, side-effect dir, emulated Lambda)."""
    app_dir = redrive_app(tmp_path / "app")
    dep = deployment(load_app(app_dir), "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    out = {"entry_function": dep.entry, "table": table, "bucket": bucket, "blob_prefix": "s/",
           "error_handler": dep.error_handler.name,
           "functions": {f.unum_name: {"name": f.name} for f in dep.functions}}
    monkeypatch.setattr(AwsTarget, "outputs", lambda self: out)
    fx = tmp_path / "fx"
    fx.mkdir()
    (tmp_path / "in.json").write_text(json.dumps({"dir": str(fx), "n": 1}))
    with LocalLambda(local_specs(dep, table, bucket, tmp_path / "bundles"), aws_env(moto_env)) as emu:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", emu.url)
        code, _, err = cli("invoke", str(app_dir), "--cloud", "aws", "--data", str(tmp_path / "in.json"),
                           "--session", "r1", "--timeout", "90")
        assert code == 1, err
        yield app_dir, fx, emu


def test_a_failed_session_is_redriven_on_aws(deployed):
    app_dir, fx, emu = deployed
    app = str(app_dir)
    assert (runs(fx, "first"), runs(fx, "flaky")) == (1, 1)
    (fx / "fixed").write_text("")
    code, out, err = cli("redrive", app, "r1", "--cloud", "aws", "--timeout", "90")
    assert code == 0, err
    assert json.loads(out) == 21
    emu.wait_idle(60)
    assert (runs(fx, "first"), runs(fx, "flaky")) == (1, 2)  # the committed First never re-ran
    ds, _ = AwsTarget(load_app(app_dir)).callback_ports()
    st = describe(ds, "r1", None, 0.0)
    assert (st.count, st.status) == (1, "NOT_REDRIVABLE")
    d = _json(cli("describe", app, "r1", "--cloud", "aws", "--json"))
    assert d["status"] == "SUCCEEDED" and d["input"] == {"dir": str(fx), "n": 1}  # the record kept its start
    kinds = [e["kind"] for e in _json(cli("history", app, "r1", "--cloud", "aws", "--json"))]
    assert kinds.count("redriven") == 1 and kinds.index("failed") < kinds.index("redriven"), kinds
    code, out, err = cli("redrive", app, "r1", "--cloud", "aws")
    assert code != 0
    assert "unumctl: ExecutionNotRedrivable: Execution is SUCCEEDED and cannot be redriven" in err.splitlines()


def test_a_session_past_the_redrivable_period_is_refused_on_aws(deployed):
    app_dir, fx, _emu = deployed
    target = AwsTarget(load_app(app_dir))
    ds, _ = target.callback_ports()
    stop = ds.get("r1", "redrive/from/0")["at"]
    with pytest.raises(TargetError, match=r"^ExecutionNotRedrivable: Execution stopped 14\.0 days ago"):
        target.redrive("r1", now=stop + REDRIVE_WINDOW + 60, wait=False)
    assert describe(ds, "r1", None, stop + REDRIVE_WINDOW - 60).status == "REDRIVABLE"
    assert runs(fx, "flaky") == 1
