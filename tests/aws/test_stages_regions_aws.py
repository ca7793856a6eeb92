"""Stages and regions of one app side by side in one moto account: a fan-out + fan-in app
applied with the real terraform binary and hashicorp/aws provider as stage `dev` and stage
`prod` in us-east-1 and stage `dev` in eu-west-1 (one moto_server holds every region; one
emulated Lambda endpoint per region, unumctl/aws/emulate/lambda_front.py), each invoked
through its own functions and table, then destroyed one by one while the others' functions,
roles and tables stay and still run. Each deployment has its own Terraform state
(deploy/statepath.py). Terraform and the runs go with moto's IAM enforcement off, as every
Terraform cycle of tests/aws does (conftest `moto_without_iam`: the bucket's TLS-only statement);
the rendered policies under enforcement are tests/aws/test_iam_aws.py's.

Both tests are `aws_long` (make test-aws-all): the full cycle (three applies and destroys) and
the shorter one that applies two stages in us-east-1 and plans the second region against the
same account (4-5 min on a 2-core machine, which the suite's 45-minute budget cannot hold)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from unumctl.aws.emulate.lambda_front import MotoLambda
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import make_app
from .conftest import aws_env
from .test_terraform_aws import tf_env  # noqa: F401 (fixture)

APP = "sides"
SECOND = "eu-west-1"
DATA = [1, 2, 3, 4]
EXPECTED = {"n": 4, "sum": 100}


@pytest.fixture(autouse=True)
def _no_twin_policy_check(aws_calls, monkeypatch):
    """The functions run under the emulated Lambda with the environment's keys, not the twin
    roles conftest.aws_calls checks calls against (as tests/aws/test_emulate_aws.py)."""
    monkeypatch.delenv("UNUM_RECORD_CALLS", raising=False)


def fan_app(root: Path) -> Path:
    """Split -> Map Work (x 10 each) -> fan-in Join ({"n", "sum"})."""
    return make_app(root, APP, {
        "Split": ({"Start": True, "Next": {"Name": "Work", "Type": "Map"}},
                  "def handler(event, context):\n    return event\n"),
        "Work": ({"Next": {"Name": "Join", "Type": "Fan-in", "Values": ["Work-UnumIndex-*"],
                           "Payload Modifiers": ["Pop"]}},
                 "def handler(event, context):\n    return event * 10\n"),
        "Join": ({}, "def handler(event, context):\n    return {'n': len(event), 'sum': sum(event)}\n"),
    })


class Side:
    """One deployment (stage, region) of the app: its target and the environment its
    commands run in (the region's Lambda endpoint)."""

    def __init__(self, app_dir: Path, stage: str, region: str, env: dict[str, str], monkeypatch):
        self.stage, self.region, self.env, self._mp = stage, region, env, monkeypatch
        with self.active():
            self.target = AwsTarget(load_app(app_dir), stage=stage, region=region)
            self.model = self.target.model

    @contextlib.contextmanager
    def active(self):
        for k, v in self.env.items():
            self._mp.setenv(k, v)
        yield self

    def client(self, service: str):
        return boto3.client(service, region_name=self.region)

    def run(self) -> None:
        """Invoke the app and check its result."""
        with self.active():
            _, item = self.target.invoke(DATA, True, 300)
        assert item is not None and item["status"] == "SUCCEEDED" and item["v"] == EXPECTED, (self.stage, item)

    def exists(self) -> bool:
        """Whether this deployment's functions, roles and table are on moto (all or none:
        AssertionError for a partial deployment). Each is looked up by name: the suite's one
        moto_server holds other tests' resources too, beyond a list call's first page (IAM
        ListRoles: MaxItems default 100, docs.aws.amazon.com/IAM/latest/APIReference/API_ListRoles.html;
        Lambda ListFunctions: at most 50 per page, docs.aws.amazon.com/lambda/latest/api/API_ListFunctions.html)."""
        with self.active():
            lam, iam, ddb = self.client("lambda"), self.client("iam"), self.client("dynamodb")
            every = self.model.functions + [self.model.error_handler]
            found = [_found(lam.get_function, FunctionName=f.name) for f in every] + \
                [_found(iam.get_role, RoleName=f.role.name) for f in every] + \
                [_found(ddb.describe_table, TableName=self.model.table)]
        assert all(found) or not any(found), (self.stage, self.region, found)
        return all(found)


def _found(call, **name) -> bool:
    """Whether `call(**name)` finds the resource (False on its not-found error)."""
    try:
        call(**name)
    except ClientError as exc:
        if exc.response["Error"]["Code"] in ("ResourceNotFoundException", "NoSuchEntity"):
            return False
        raise
    return True


@pytest.fixture
def sides(tmp_path, tf_env, moto_without_iam, monkeypatch):  # noqa: F811 (tf_env)
    """(app dir, {(stage, region): Side}): dev and prod in us-east-1, dev in eu-west-1, each
    region with its emulated Lambda endpoint in front of the one moto_server."""
    app_dir = fan_app(tmp_path / "src" / APP)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    with contextlib.ExitStack() as stack:
        fronts = {r: stack.enter_context(MotoLambda(moto_without_iam, tmp_path / f"emu-{r}", region=r))
                  for r in ("us-east-1", SECOND)}
        out = {}
        for stage, region in (("dev", "us-east-1"), ("prod", "us-east-1"), ("dev", SECOND)):
            env = {**aws_env(moto_without_iam, fronts[region].url), "AWS_REGION": region,
                   "AWS_DEFAULT_REGION": region}
            out[(stage, region)] = Side(app_dir, stage, region, env, monkeypatch)
        yield app_dir, out


def _distinct_state(sides) -> None:
    dirs = {s.target.workdir for s in sides}
    assert len(dirs) == len(sides)
    for s in sides:
        assert s.target.workdir.parts[-3:] == ("aws", s.region, s.stage), s.target.workdir


def _apply(side: Side) -> None:
    with side.active():
        side.target.apply(yes=True)
    assert side.exists() and (side.target.workdir / "terraform.tfstate").is_file()


def _destroy(side: Side) -> None:
    with side.active():
        side.target.destroy(yes=True)
    assert not side.exists()


@pytest.mark.aws_long  # two applies and destroys on moto: 232-287 s on a 2-core machine at load 3-8
def test_two_stages_apply_side_by_side_and_second_region_plans(sides):
    """dev and prod of one app in one region of one account apply, run, and are destroyed one
    at a time; the same app's dev in a second region plans a whole new deployment (nothing to
    change or destroy: the first region's resources are not in its state)."""
    _, by = sides
    dev, prod, eu = by[("dev", "us-east-1")], by[("prod", "us-east-1")], by[("dev", SECOND)]
    _distinct_state([dev, prod, eu])
    names = {s.model.table for s in (dev, prod, eu)} | {s.model.error_handler.role.name for s in (dev, prod, eu)}
    assert len(names) == 5  # tables regional (dev twice, two regions), roles account-global: all distinct
    assert dev.model.table == eu.model.table and dev.model.error_handler.role.name != eu.model.error_handler.role.name
    for s in (dev, prod):
        _apply(s)
    dev.run()
    prod.run()
    with eu.active():
        plan = eu.target.plan()
    assert plan["add"] > 0 and plan["change"] == plan["destroy"] == 0, plan
    _destroy(dev)
    assert prod.exists()
    prod.run()
    _destroy(prod)


@pytest.mark.aws_long  # three applies and destroys on moto: 20 min on a 2-core machine at load 18 (the default test: 17 min there)
def test_two_stages_and_two_regions_apply_run_destroy_side_by_side(sides):
    """dev and prod in us-east-1 and dev in eu-west-1 (same function and table names as
    us-east-1's dev, other roles and bucket) apply and run side by side; each is destroyed
    in turn and the others still exist and run."""
    _, by = sides
    order = [by[("dev", "us-east-1")], by[("dev", SECOND)], by[("prod", "us-east-1")]]
    _distinct_state(order)
    for s in order:
        _apply(s)
    for s in order:
        s.run()
    left = list(order)
    while left:
        gone = left.pop(0)
        _destroy(gone)
        for s in left:
            assert s.exists(), (s.stage, s.region)
            s.run()
