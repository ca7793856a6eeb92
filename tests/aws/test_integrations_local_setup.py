"""A Step Functions author's first app with a DynamoDB putItem Task on the local target, run
as a new user runs it (`unumctl invoke` in a subprocess): a Parallel whose second branch
ends in `arn:aws:states:::dynamodb:putItem`. Covers where the call goes and how it is signed
(docs/local.md "Where service integrations go": the region of a named endpoint follows
`--region` > AWS_REGION > AWS_DEFAULT_REGION > clouds.aws.region > us-east-1, placeholder
keys when the user configured none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import boto3
import pytest
import yaml

from unumctl_testing.apps import make_sfn_app
from unumctl.aws.emulate.moto_local import find_moto_server, moto_server

SHIP = "def handler(event, context):\n    return {'shipped': event['id']}\n"
KEY = {"KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
       "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}]}


def order_app(root: Path, table: str = "orders", extra: dict | None = None) -> Path:
    """Parallel ShipAndNotify: branch 1 a Lambda Task, branch 2 the putItem Task `Record`."""
    machine = {"StartAt": "ShipAndNotify", "States": {"ShipAndNotify": {
        "Type": "Parallel", "End": True, "Branches": [
            {"StartAt": "Ship", "States": {"Ship": {
                "Type": "Task", "Resource": "arn:aws:lambda:us-east-1:123456789012:function:Ship", "End": True}}},
            {"StartAt": "Record", "States": {"Record": {
                "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "End": True,
                "Parameters": {"TableName": table, "Item": {"pk": {"S.$": "$.id"}}}}}}]}}}
    make_sfn_app(root, machine, {"Ship": SHIP}, "orders")
    if extra:
        manifest = yaml.safe_load((root / "unumctl.yaml").read_text())
        manifest.update(extra)
        (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    (root / "in.json").write_text(json.dumps({"id": "o-1"}))
    return root


def invoke(root: Path, *args: str, env: dict[str, str] | None = None, pre: tuple[str, ...] = ()):
    """`unumctl [pre] invoke root --data in.json [args]` with the environment's AWS settings
    removed and `env` added: (exit code, stdout, stderr)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AWS_") and not k.startswith("UNUM_")}
    clean.update(env or {})
    proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *pre, "invoke", str(root), "--data",
                           str(root / "in.json"), *args], capture_output=True, text=True, timeout=180, env=clean)
    return proc.returncode, proc.stdout, proc.stderr


@pytest.fixture
def own_moto():
    """The user's own emulator: a moto_server on 127.0.0.1 (not the embedded one) with the
    table `orders` in eu-west-1 only."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    with moto_server() as url:
        ddb = boto3.client("dynamodb", endpoint_url=url, region_name="eu-west-1",
                           aws_access_key_id="testing", aws_secret_access_key="testing")
        ddb.create_table(TableName="orders", BillingMode="PAY_PER_REQUEST", **KEY)
        yield url, ddb


@pytest.mark.slow
@pytest.mark.parametrize("how", ["--region", "AWS_REGION"])
def test_named_endpoint_takes_region_from_flag_or_aws_region_and_needs_no_credentials(own_moto, tmp_path, how):
    """`--aws-endpoint` at the user's moto, no credentials anywhere, the region given only by
    the global `--region` or only by AWS_REGION: the putItem lands in that region's table."""
    url, ddb = own_moto
    root = order_app(tmp_path / "app")
    pre = ("--region", "eu-west-1") if how == "--region" else ()
    env = {"AWS_REGION": "eu-west-1"} if how == "AWS_REGION" else {}
    code, out, err = invoke(root, "--aws-endpoint", url, env=env, pre=pre)
    assert code == 0, err
    assert json.loads(out)[0] == {"shipped": "o-1"}
    assert ddb.get_item(TableName="orders", Key={"pk": {"S": "o-1"}})["Item"] == {"pk": {"S": "o-1"}}


@pytest.mark.slow
def test_named_endpoint_region_from_manifest_below_the_environment(own_moto, tmp_path):
    """clouds.aws.region is used when neither --region nor AWS_REGION/AWS_DEFAULT_REGION is set."""
    url, ddb = own_moto
    root = order_app(tmp_path / "app", extra={"clouds": {"aws": {"region": "eu-west-1"}}})
    code, _, err = invoke(root, "--aws-endpoint", url)
    assert code == 0, err
    assert "Item" in ddb.get_item(TableName="orders", Key={"pk": {"S": "o-1"}})


@pytest.mark.slow
def test_a_failed_task_in_a_parallel_branch_is_reported_as_its_state(tmp_path):
    """The putItem Task `Record` fails (its table does not exist on the embedded emulator):
    the session's failure names the state `Record`, not the compiled function of the branch."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    root = order_app(tmp_path / "app", table="missing")
    code, _, err = invoke(root)
    assert code == 1, err
    line = [ln for ln in err.splitlines() if ln.startswith("unumctl: ")]
    assert len(line) == 1, err
    assert " failed in state Record (ShipAndNotify_B1_Start-UnumIndex-1): " \
        "DynamoDB.ResourceNotFoundException: " in line[0], err
    session = err.splitlines()[0].removeprefix("session ").strip()
    desc = subprocess.run([sys.executable, "-m", "unumctl.cli", "describe", str(root), session, "--json"],
                          capture_output=True, text=True, timeout=60)
    assert json.loads(desc.stdout)["failed_state"] == "Record", desc.stderr


TABLE = {"TableName": "orders", **KEY}


@pytest.mark.slow
def test_declared_table_exists_on_the_embedded_emulator_before_the_first_run(tmp_path, monkeypatch):
    """integrations.resources.dynamodb_tables: the first run on local (embedded moto, no
    endpoint, no credentials) succeeds and the item is in the table, read while the emulator
    runs."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    from unumctl.local import LocalRunner
    from unumctl.pipeline import load as load_app
    for k in [k for k in os.environ if k.startswith("AWS_") or k.startswith("UNUM_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("UNUM_ASL_VIRTUAL_CLOCK", "1")
    root = order_app(tmp_path / "app", extra={"integrations": {"resources": {
        "dynamodb_tables": [TABLE], "s3_buckets": ["orders-archive"], "sqs_queues": ["orders-events"]}}})
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        item = r.run({"id": "o-1"}, timeout=120)
        assert item["status"] == "SUCCEEDED", item
        assert r.aws_endpoint and r.aws_endpoint.startswith("http://127.0.0.1:")
        keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing", "region_name": "us-east-1"}
        ddb = boto3.client("dynamodb", endpoint_url=r.aws_endpoint, **keys)
        assert ddb.get_item(TableName="orders", Key={"pk": {"S": "o-1"}})["Item"] == {"pk": {"S": "o-1"}}
        assert [b["Name"] for b in boto3.client("s3", endpoint_url=r.aws_endpoint, **keys)
                .list_buckets()["Buckets"]] == ["orders-archive"]
        assert boto3.client("sqs", endpoint_url=r.aws_endpoint, **keys).get_queue_url(
            QueueName="orders-events")["QueueUrl"]


@pytest.mark.slow
def test_declared_table_first_invoke_succeeds(tmp_path):
    """The same app through `unumctl invoke`: exit 0 and both branches' results."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    root = order_app(tmp_path / "app", extra={"integrations": {"resources": {"dynamodb_tables": [TABLE]}}})
    code, out, err = invoke(root)
    assert code == 0, err
    assert json.loads(out)[0] == {"shipped": "o-1"}


@pytest.mark.parametrize("table, message", [
    ({"TableName": "t", "KeySchema": [{"AttributeName": "sk", "KeyType": "RANGE"}],
      "AttributeDefinitions": [{"AttributeName": "sk", "AttributeType": "S"}]}, "exactly one KeyType HASH"),
    ({"TableName": "t", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
      "AttributeDefinitions": [{"AttributeName": "other", "AttributeType": "S"}]}, "'pk' has no entry"),
    ({"TableName": "t", "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
      "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "STRING"}]}, "AttributeType"),
])
def test_a_bad_declared_table_is_one_line_naming_the_field(tmp_path, table, message):
    """CreateTable's rules checked when the manifest loads: one line naming the field."""
    from unumctl.manifest import AppError
    from unumctl.pipeline import load as load_app
    root = order_app(tmp_path / "app", extra={"integrations": {"resources": {"dynamodb_tables": [table]}}})
    with pytest.raises(AppError) as exc:
        load_app(root)
    text = str(exc.value)
    assert "integrations.resources.dynamodb_tables" in text and message in text, text
    assert "\n" not in text


@pytest.mark.slow
def test_no_wait_background_resume_keeps_the_region_flag(own_moto, tmp_path):
    """`unumctl --region R invoke --no-wait`: the background `unumctl resume` that finishes
    the session signs for R too (its putItem lands in R's table)."""
    import time
    url, ddb = own_moto
    root = order_app(tmp_path / "app")
    code, out, err = invoke(root, "--aws-endpoint", url, "--no-wait", pre=("--region", "eu-west-1"))
    assert code == 0, err
    session = out.strip()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        proc = subprocess.run([sys.executable, "-m", "unumctl.cli", "result", str(root), session],
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 3:
            break
        time.sleep(1)
    assert proc.returncode == 0, proc.stderr
    assert "Item" in ddb.get_item(TableName="orders", Key={"pk": {"S": "o-1"}})


@pytest.mark.parametrize("flag, environ, manifest, want", [
    ("eu-west-1", {"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "us-west-2"}, "sa-east-1", "eu-west-1"),
    (None, {"AWS_REGION": "ap-south-1", "AWS_DEFAULT_REGION": "us-west-2"}, "sa-east-1", "ap-south-1"),
    (None, {"AWS_DEFAULT_REGION": "us-west-2"}, "sa-east-1", "us-west-2"),
    (None, {}, "sa-east-1", "sa-east-1"),
    (None, {}, None, "us-east-1"),
])
def test_named_endpoint_region_precedence_and_placeholder_keys(flag, environ, manifest, want):
    """integrations_env for a named endpoint: --region > AWS_REGION > AWS_DEFAULT_REGION >
    clouds.aws.region > us-east-1, and the placeholder keys, never the environment's."""
    from unumctl.local import integrations_env
    env = integrations_env("http://127.0.0.1:1", True, lambda: "unused",
                           {**environ, "AWS_ACCESS_KEY_ID": "AKIAREAL", "AWS_SECRET_ACCESS_KEY": "real"},
                           region=flag, manifest_region=manifest)
    assert env["AWS_REGION"] == env["AWS_DEFAULT_REGION"] == want
    assert env["AWS_ACCESS_KEY_ID"] == "testing" and env["AWS_SECRET_ACCESS_KEY"] == "testing"
    assert env["UNUM_AWS_ENDPOINT"] == "http://127.0.0.1:1"


@pytest.mark.slow
def test_declared_resources_are_not_created_on_the_users_boto3_endpoint(own_moto, tmp_path, monkeypatch):
    """With boto3's AWS_ENDPOINT_URL naming the user's own emulator, local uses it and creates
    nothing there: integrations.resources are for the embedded emulator only."""
    from unumctl.local import LocalRunner
    from unumctl.pipeline import load as load_app
    url, ddb = own_moto
    for k in [k for k in os.environ if k.startswith("AWS_") or k.startswith("UNUM_")]:
        monkeypatch.delenv(k)
    monkeypatch.setenv("AWS_ENDPOINT_URL", url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    root = order_app(tmp_path / "app", extra={"integrations": {"resources": {
        "dynamodb_tables": [{**TABLE, "TableName": "declared-only"}]}}})
    with LocalRunner(load_app(root), state=tmp_path / "state", quiet=True) as r:
        r.run({"id": "o-2"}, timeout=120)
        assert r.aws_endpoint is None  # boto3 reads AWS_ENDPOINT_URL itself; no embedded emulator
    assert "declared-only" not in ddb.list_tables()["TableNames"]


VALIDATE = """import os
MARKER = {marker!r}


class Flaky(Exception):
    pass


def handler(event, context):
    if not os.path.exists(MARKER):  # the first attempt fails, as a timed-out dependency would
        open(MARKER, 'w').close()
        raise Flaky('the order service timed out')
    return {{**event, 'total': sum(event['items'])}}
"""


def shop_app(root: Path, marker: Path) -> Path:
    """The new user's app: Lambda Tasks (Validate with a Retry, fails once), a Choice, a Map
    of a Lambda Task, a Parallel of a Lambda Task and a DynamoDB putItem, the table declared."""
    lam = "arn:aws:lambda:us-east-1:123456789012:function:"
    machine = {"StartAt": "Validate", "States": {
        "Validate": {"Type": "Task", "Resource": lam + "Validate", "Next": "Route",
                     "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 2}]},
        "Route": {"Type": "Choice", "Default": "Reject",
                  "Choices": [{"Variable": "$.total", "NumericGreaterThan": 0, "Next": "PriceEach"}]},
        "Reject": {"Type": "Fail", "Error": "EmptyOrder"},
        "PriceEach": {"Type": "Map", "ItemsPath": "$.items", "ResultPath": "$.priced", "Next": "ShipAndRecord",
                      "ItemProcessor": {"StartAt": "Price", "States": {
                          "Price": {"Type": "Task", "Resource": lam + "Price", "End": True}}}},
        "ShipAndRecord": {"Type": "Parallel", "End": True, "Branches": [
            {"StartAt": "Ship", "States": {"Ship": {"Type": "Task", "Resource": lam + "Ship", "End": True}}},
            {"StartAt": "Record", "States": {"Record": {
                "Type": "Task", "Resource": "arn:aws:states:::dynamodb:putItem", "End": True,
                "ResultSelector": {"status.$": "$.SdkHttpMetadata.HttpStatusCode"},
                "Parameters": {"TableName": "orders", "Item": {
                    "pk": {"S.$": "$.id"}, "total": {"N.$": "States.Format('{}', $.total)"}}}}}}]}}}
    make_sfn_app(root, machine, {"Validate": VALIDATE.format(marker=str(marker)),
                                 "Price": "def handler(e, c):\n    return e * 2\n", "Ship": SHIP}, "shop")
    manifest = yaml.safe_load((root / "unumctl.yaml").read_text())
    manifest["integrations"] = {"resources": {"dynamodb_tables": [TABLE]}}
    (root / "unumctl.yaml").write_text(yaml.safe_dump(manifest))
    (root / "in.json").write_text(json.dumps({"id": "o-1", "items": [1, 2]}))
    return root


@pytest.mark.slow
def test_new_users_app_runs_on_the_first_try_and_its_history_shows_the_retry(tmp_path):
    """`unumctl invoke` of the shop app on local, no endpoint and no credentials: exit 0
    with both branches' results; `history` shows Validate's failed first attempt (its error,
    message and the user's line; a cause whose stack trace holds the user's frames only)
    before its succeeding one, and `describe` counts 1 Task retry."""
    if find_moto_server() is None:
        pytest.skip("moto_server not installed (pip install 'moto[server]')")
    root = shop_app(tmp_path / "app", tmp_path / "validated-once")
    code, out, err = invoke(root)
    assert code == 0, err
    assert json.loads(out) == [{"shipped": "o-1"}, {"status": 200}]
    session = err.splitlines()[0].removeprefix("session ").strip()

    def cli(*args: str) -> str:
        proc = subprocess.run([sys.executable, "-m", "unumctl.cli", *args, str(root), session],
                              capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    text = [ln for ln in cli("history").splitlines() if " Validate " in ln and "Task" in ln]
    assert len(text) == 2, text
    assert "attempt 1 failed" in text[0] and "retried: Flaky: the order service timed out (at " in text[0]
    assert "functions/validate/app.py:" in text[0] and "-> Route" in text[1]
    steps = [s for e in json.loads(cli("history", "--json")) for s in e.get("states") or []
             if s.get("state") == "Validate"]
    assert [r["error"] for r in steps[0]["retries"]] == ["Flaky"]
    retry = steps[0]["retries"][0]
    frames = json.loads(retry["cause"])["stackTrace"]  # the user's frames only, as Lambda reports them
    assert frames and all("/runtime/" not in f for f in frames) and "validate" in frames[-1], frames
    assert steps[0]["at"] - retry["end"] >= 1.0  # IntervalSeconds waited before the second attempt
    assert json.loads(cli("describe", "--json"))["counts"]["task_retries"] == 1
