"""Sessions pinned to the version they started on, on the aws target (docs/versions.md "On
AWS"): the built aws archives (runtime/aws unpatched) deployed through the emulated Lambda
(unumctl/aws/emulate/lambda_front.py MotoLambda, which runs a published version's own code
when invoked with a Qualifier) on moto. Each function signs as its role and conftest
`aws_calls` checks every AWS call it made against its rendered policy, qualified Invoke ARNs
included; moto's own enforcement is off (`moto_without_iam`, as every MotoLambda test of
tests/aws: moto 5.2.5 refuses the signature of every Lambda GET under enforcement, even
GetFunction signed by the admin user). Sessions are held mid-way at a gate while version 2 (a renamed function, a new
step, a fan-in widened from 2 to 3; tests/unumctl/local/test_versions.py's app) is published
and the stage alias moved; each session ends with its own version's result, `unumctl
versions --cloud aws` lists both, and version 1's function versions are deleted once its
sessions have drained. The check is shown to catch a runtime that invokes `$LATEST`.

The default run holds 3 + 3 sessions; the 50 + 50 run is `aws_long` (make test-aws-all)."""

from __future__ import annotations

import contextlib
import json
import time
import uuid
import zipfile
from pathlib import Path

import boto3
import pytest
from typer.testing import CliRunner

from runtime.aws.datastore import DynamoDBDatastore
from runtime.errors import UnumError
from runtime.aws.pins import SessionPins, roster_partition
from runtime.payload import RESULT_KEY, VersionId
from unumctl.aws.emulate.lambda_front import MotoLambda
from unumctl.aws.target import AwsTarget
from unumctl.aws.versions import AwsVersions
from unumctl.cli import app as cli_app
from unumctl.pipeline import deployment
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, publish_version, sign_as_role

from tests.unumctl.local.test_versions import pinning_problems, write_version

STAGE = "dev"


def _wait_for(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


@contextlib.contextmanager
def emulated(moto_url: str, tmp_path: Path, monkeypatch):
    """The emulated Lambda in front of moto, a Lambda client on it, and an execution role
    ARN for CreateFunction."""
    with MotoLambda(moto_url, tmp_path / "emu", concurrency=4) as front:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", front.url)
        iam = boto3.client("iam")
        role = f"unum-versions-{uuid.uuid4().hex[:8]}"
        arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps({
            "Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "sts:AssumeRole",
                                                    "Principal": {"Service": "lambda.amazonaws.com"}}]}))["Role"]["Arn"]
        yield front, boto3.client("lambda", endpoint_url=front.url), arn


def deploy_under_traffic(tmp_path: Path, moto_url: str, monkeypatch, n: int, patch=None,
                         pinned: bool = True) -> dict:
    """Publish version 1, start `n` sessions and hold them at the Gate, publish version 2,
    start `n` more, list the versions, open the gate; returns the results (None for a
    session without one in time), both ids and function maps, the listing while both ran
    and after the drain, what was collected and which function versions are left. `patch`
    (a deployment model -> None) changes each version's archives before it is published;
    `pinned` False: the listing is taken without waiting for the new sessions' pins (a
    runtime that never pins)."""
    root = write_version(tmp_path / "app", 1)
    stage = "v" + uuid.uuid4().hex[:6]  # the suite's one moto holds other tests' `pinned` apps
    held, barrier = tmp_path / "held", tmp_path / "barrier"
    held.mkdir()
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)

    def data(i: int) -> dict:
        return {"n": i, "held": str(held), "barrier": str(barrier)}

    with emulated(moto_url, tmp_path, monkeypatch) as (front, lam, role):
        dep1 = deployment(load_app(root), "aws", stage=stage)
        if patch is not None:
            patch(dep1)
        v1, map1 = publish_version(dep1, table, bucket, lam, role, stage, sign_as_role)
        out = {"entry_function": dep1.entry, "table": table, "bucket": bucket, "blob_prefix": "s/",
               "error_handler": dep1.error_handler.name,  # type: ignore[union-attr]
               "functions": {f.unum_name: {"name": f.name} for f in dep1.functions}}
        monkeypatch.setattr(AwsTarget, "outputs", lambda self: out)
        target = AwsTarget(load_app(root), stage=stage)
        for i in range(n):
            target.invoke(data(i), False, 0, session=f"old-{i}")
        _wait_for(lambda: len(list(held.iterdir())) >= n, 120 + 10 * n, f"{n} sessions held at the gate")
        write_version(root, 2)
        dep2 = deployment(load_app(root), "aws", stage=stage)
        if patch is not None:
            patch(dep2)
        v2, map2 = publish_version(dep2, table, bucket, lam, role, stage, sign_as_role)
        target = AwsTarget(load_app(root), stage=stage)
        for i in range(n):
            target.invoke(data(i), False, 0, session=f"new-{i}")
        store = target._versions(out, target._stores(out)[0])
        # a session is listed once pinned, by its entry's first invocation of the next step
        if pinned:
            _wait_for(lambda: store.running(v2) >= n, 120 + 10 * n, f"{n} new sessions pinned")
        cli = CliRunner()
        shown = cli.invoke(cli_app, ["versions", str(root), "--cloud", "aws", "--stage", stage, "--json"])
        assert shown.exit_code == 0, shown.output
        barrier.touch()
        results: dict[str, dict | None] = {}
        deadline = time.monotonic() + 300 + 20 * n  # a loaded 2-core machine: executions take seconds
        for s in [f"old-{i}" for i in range(n)] + [f"new-{i}" for i in range(n)]:
            item = target.result(s)
            while item is None and time.monotonic() < deadline:
                time.sleep(0.5)
                item = target.result(s)
            results[s] = item and ({k: item.get(k) for k in ("status", "v")} if item["status"] == "SUCCEEDED"
                                   else item)
        front.wait_idle(120)
        collected = store.collect(grace=0)
        after = cli.invoke(cli_app, ["versions", str(root), "--cloud", "aws", "--stage", stage, "--json"])
        assert after.exit_code == 0, after.output
        left = {f.name: sorted(v["Version"] for v in lam.list_versions_by_function(FunctionName=f.name)["Versions"])
                for f in dep1.functions + dep2.functions}
    return {"results": results, "v1": v1, "v2": v2, "map1": map1, "map2": map2, "listing": json.loads(shown.stdout),
            "after": json.loads(after.stdout), "collected": collected, "left": left,
            "names": {f.unum_name: f.name for f in dep1.functions + dep2.functions}}


def check_deploy(rep: dict, n: int) -> None:
    """Every session ended on its version; both versions were listed with their sessions;
    version 1 alone was collected, and of its function versions only those version 2 shares
    are left (none: every function of version 2 is a new version)."""
    assert rep["v1"] != rep["v2"]
    assert pinning_problems(rep["results"], n, n) == []
    running = {r["version"]: (r["running"], r["current"]) for r in rep["listing"]}
    assert running == {rep["v2"]: (n, True), rep["v1"]: (n, False)}, rep["listing"]
    assert rep["collected"] == [rep["v1"]]
    assert [(r["version"], r["running"]) for r in rep["after"]] == [(rep["v2"], 0)]
    for fn, number in rep["map1"].items():
        assert number not in rep["left"][rep["names"][fn]], (fn, number, rep["left"])
    for fn, number in rep["map2"].items():
        assert number in rep["left"][rep["names"][fn]], (fn, number, rep["left"])


def test_sessions_finish_on_the_lambda_version_they_started_on(tmp_path, moto_env, moto_without_iam, monkeypatch):
    n = 3
    check_deploy(deploy_under_traffic(tmp_path, moto_env, monkeypatch, n), n)


@pytest.mark.aws_long
def test_fifty_sessions_finish_on_the_lambda_version_they_started_on(tmp_path, moto_env, moto_without_iam, monkeypatch):
    n = 50
    check_deploy(deploy_under_traffic(tmp_path, moto_env, monkeypatch, n), n)


def test_the_check_catches_a_runtime_that_invokes_latest(tmp_path, moto_env, moto_without_iam, monkeypatch):
    """Injected bug: the runtime's invoker ignores the session's pin (every continuation
    unqualified, `$LATEST`). The old sessions then run version 2's code and IR past the
    gate and end with its result, or fail on the renamed function."""
    n = 2
    rep = deploy_under_traffic(tmp_path, moto_env, monkeypatch, n, patch=lambda dep: _invoke_latest(dep, tmp_path),
                               pinned=False)
    problems = pinning_problems(rep["results"], n, n)
    assert sorted(p.split(":")[0] for p in problems) == [f"old-{i}" for i in range(n)], problems


PINNED = "qualifier = self.pins.qualifier(str(payload.get(\"Session\")), function) if self.pins else None"


def _invoke_latest(dep, tmp_path: Path) -> None:
    """The injected bug, in the archives the emulated Lambda runs: runtime/aws/invoker.py of
    every function invokes unqualified. The archives are rewritten beside the test (the
    build's own stay as they are)."""
    for f in dep.functions + [dep.error_handler]:
        out = tmp_path / "latest" / f"{uuid.uuid4().hex[:8]}-{Path(f.zip_path).name}"
        out.parent.mkdir(exist_ok=True)
        with zipfile.ZipFile(f.zip_path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
            for info in src.infolist():
                data = src.read(info)
                if info.filename == "runtime/aws/invoker.py":
                    text = data.decode()
                    assert PINNED in text, "the invoker's pinned call moved: update the injected bug"
                    data = text.replace(PINNED, "qualifier = None").encode()
                dst.writestr(info, data)
        f.archive.path = out


def test_a_deployment_without_versions_has_none_and_collects_nothing(unum_table):
    """An app applied without versions (every function `$LATEST`): no record, nothing to
    list or collect, and the runtime's pins stay off (SessionPins.from_env: None)."""
    store = AwsVersions(DynamoDBDatastore(unum_table), boto3.client("lambda"), "pinned-dev_", STAGE)
    assert store.current() is None and store.listing() == [] and store.collect() == []


def test_a_session_is_pinned_once_to_the_version_of_its_first_invoker(unum_table):
    ds = DynamoDBDatastore(unum_table)
    store = AwsVersions(ds, boto3.client("lambda"), "pinned-dev_", STAGE)
    v1, v2 = VersionId("00000000000000a1"), VersionId("00000000000000b2")
    store.register(v1, {"F": "3", "G": "4"}, now=100.0)
    store.register(v2, {"F": "5", "H": "6"}, now=200.0)
    assert SessionPins(ds, v1, STAGE).qualifier("s1", "G") == "4"          # the entry of v1 pins s1
    assert SessionPins(ds, v2, STAGE).qualifier("s1", "F") == "3"          # a v2 process reads the pin
    assert SessionPins(ds, None, STAGE).qualifier("s1", "F") == "3"        # so does the CLI (redrive)
    assert SessionPins(ds, None, STAGE).qualifier("s2", "F") == STAGE      # unpinned: through the alias
    assert ds.names(roster_partition(v1)) == ["s1"] and ds.names(roster_partition(v2)) == []
    with pytest.raises(UnumError, match="pinned to a version without function H"):
        SessionPins(ds, v2, STAGE).qualifier("s1", "H")
    with pytest.raises(UnumError, match="has no record in the table"):
        SessionPins(ds, VersionId("00000000000000c3"), STAGE).qualifier("s3", "F")


def test_a_version_is_kept_while_a_session_pinned_to_it_can_run(unum_table):
    """The retirement rule on the table, without Lambda: version 1 stays while a rostered
    session has no result and within the grace after version 2's deploy; once the session
    has its result it is collected (no function version to delete: none recorded)."""
    ds = DynamoDBDatastore(unum_table)
    store = AwsVersions(ds, boto3.client("lambda"), "pinned-dev_", STAGE)
    v1, v2 = VersionId("00000000000000a1"), VersionId("00000000000000b2")
    store.register(v1, {}, now=100.0)
    ds.put(roster_partition(v1), "s1", {"at": 100.0}, time.time() + 60)
    store.register(v2, {}, now=200.0)
    assert [(r["version"], r["running"], r["current"]) for r in store.listing()] == [(v2, 0, True), (v1, 1, False)]
    assert store.collect(now=300.0, grace=0) == []                  # s1 may still run
    ds.create_if_absent("s1", RESULT_KEY, {"status": "SUCCEEDED", "v": 1}, time.time() + 60)
    assert store.collect(now=250.0, grace=100) == []                # within the grace
    assert store.collect(now=300.0, grace=100) == [v1]
    assert [r["version"] for r in store.records()] == [v2] and ds.names(roster_partition(v1)) == []
