"""Execution history on the AWS target (docs/observability.md "AWS"): the built aws archives
run through their Lambda handler in the local Lambda emulator, which sends every function's
output to moto's CloudWatch Logs as Lambda does; the session index lives in the moto
DynamoDB table. The commands run through the CLI (`--cloud aws --json`), reading real
CloudWatch Logs and DynamoDB API responses from moto. Only the deployment's Terraform
outputs (names of the table, bucket and functions) are given to the CLI without Terraform.

- a succeeding and a failing session are listed, described, and their events and the
  functions' output lines are there;
- under injected faults (duplicated deliveries, SIGKILLed executions) the history shows one
  execution per delivery, each retry and each crash the emulator counted, and the
  duplicates as their own executions;
- an unknown session id is one line, exit 2.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import boto3
import pytest
from typer.testing import CliRunner

from runtime.aws.datastore import DynamoDBDatastore
from runtime.engine import Engine, Options
from runtime.faults import FaultSpec
from unumctl.pipeline import deployment
from unumctl.aws.target import AwsTarget
from unumctl.pipeline import load as load_app
from unumctl_testing.aws.deployment import create_datastore_for_tests, local_specs
from unumctl.aws.emulate.local_lambda import LocalLambda

from unumctl.observe.reader import STARTS

from tests.unumctl.observe.test_history import EXECUTED, hist_app
from .conftest import aws_env
from .test_examples_aws import wait_result


def cli(*args: str) -> tuple[int, str, str]:
    from unumctl.cli import app

    res = CliRunner().invoke(app, list(args))
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout, res.stderr


def _json(res):
    code, out, err = res
    assert code == 0, err
    return json.loads(out)


@pytest.fixture
def deployed(moto_env, tmp_path, monkeypatch):
    """hist-app built for aws, its table and bucket on moto, and `unumctl ... --cloud aws`
    pointed at them (AwsTarget.outputs answers what `terraform output` would)."""
    app_dir = hist_app(tmp_path / "app")
    dep = deployment(load_app(app_dir), "aws")
    table = bucket = f"unum-{uuid.uuid4().hex[:10]}"
    create_datastore_for_tests(table, bucket)
    out = {"entry_function": dep.entry, "table": table, "bucket": bucket, "blob_prefix": "s/",
           "error_handler": dep.error_handler.name,
           "functions": {f.unum_name: {"name": f.name} for f in dep.functions}}
    monkeypatch.setattr(AwsTarget, "outputs", lambda self: out)
    specs = local_specs(dep, table, bucket, tmp_path / "bundles")
    return app_dir, dep, table, specs, aws_env(moto_env)


def test_sessions_describe_history_logs_on_aws(deployed, tmp_path, monkeypatch):
    app_dir, _, _, specs, env = deployed
    app = str(app_dir)
    (tmp_path / "ok.json").write_text('["a", "b", "c"]')
    (tmp_path / "bad.json").write_text('["a", "boom"]')
    with LocalLambda(specs, env) as emu:
        monkeypatch.setenv("AWS_ENDPOINT_URL_LAMBDA", emu.url)
        code, out, err = cli("invoke", app, "--cloud", "aws", "--data", str(tmp_path / "ok.json"),
                             "--session", "ok-1", "--timeout", "90")
        assert code == 0 and json.loads(out) == "ABC", err
        code, _, err = cli("invoke", app, "--cloud", "aws", "--data", str(tmp_path / "bad.json"),
                           "--session", "bad-1", "--timeout", "90")
        assert code == 1, err
        emu.wait_idle(60)
        stats = dict(emu.stats)
    assert stats["log_events:unum"] > 0 and stats.get("log_errors", 0) == 0, stats

    rows = _json(cli("sessions", app, "--cloud", "aws", "--json"))
    assert {r["session"]: r["status"] for r in rows} == {"ok-1": "SUCCEEDED", "bad-1": "FAILED"}
    assert rows[0]["session"] == "bad-1"  # newest first
    assert {r["session"]: r["invocations"] for r in rows}["ok-1"] == 5  # Start, 3 x Work, Join
    assert all(r["duration"] is not None and r["duration"] >= 0 for r in rows)
    assert [r["session"] for r in _json(cli("sessions", app, "--cloud", "aws", "--status", "FAILED",
                                            "--json"))] == ["bad-1"]
    assert len(_json(cli("sessions", app, "--cloud", "aws", "--limit", "1", "--json"))) == 1

    ok = _json(cli("describe", app, "ok-1", "--cloud", "aws", "--json"))
    assert ok["status"] == "SUCCEEDED" and ok["output"] == "ABC" and ok["input"] == ["a", "b", "c"]
    assert ok["function"] == "Start" and ok["end"] >= ok["start"] and ok["history"] == "full"
    assert ok["counts"]["invocations"] == 5
    bad = _json(cli("describe", app, "bad-1", "--cloud", "aws", "--json"))
    assert bad["status"] == "FAILED" and bad["error"] == "ValueError"
    assert bad["failed_in"] == "Work-UnumIndex-1" and "cannot work on boom" in bad["cause"]
    code, out, _ = cli("describe", app, "bad-1", "--cloud", "aws")
    assert code == 0 and "FAILED" in out and "ValueError" in out

    events = _json(cli("history", app, "ok-1", "--cloud", "aws", "--json"))
    ran = [e for e in events if e["kind"] == "ran"]
    assert {e["instance"] for e in ran} == {"Join", "Start", "Work-UnumIndex-0", "Work-UnumIndex-1",
                                            "Work-UnumIndex-2"}
    assert [e["t0"] for e in events] == sorted(e["t0"] for e in events)
    # no faults injected: every delivery ran first time, unless the machine was so loaded
    # that an AWS call failed and Lambda retried (then the history says so)
    kinds = Counter(e["kind"] for e in events)
    assert len(ran) == 5 or kinds["retried"] >= len(ran) - 5, events
    assert ok["counts"]["retries"] == kinds["retried"] and ok["counts"]["executions"] >= 5
    for e in ran:  # Lambda's request id of the delivery, its attempt, measured times
        assert e["attempt"] >= 1 and len(e["request_id"]) == 36 and e["t1"] >= e["t0"]
        for k in ("user_ms", "runtime_ms", "datastore_ms", "invoke_ms", "payload_bytes", "checkpoint_bytes"):
            assert e[k] >= 0, (k, e)
    assert next(e for e in ran if e["instance"] == "Work-UnumIndex-1")["output"] == "B"
    failed = [e for e in _json(cli("history", app, "bad-1", "--cloud", "aws", "--json")) if e["kind"] == "failed"]
    assert [e["instance"] for e in failed] == ["Work-UnumIndex-1"] and "ValueError" in failed[0]["detail"]

    code, out, _ = cli("logs", app, "--cloud", "aws", "--session", "ok-1", "--function", "Work")
    assert code == 0
    lines = out.splitlines()
    assert "[Work Work-UnumIndex-0] work a" in lines
    assert any(ln.startswith("[Work Work-UnumIndex-2] [WARNING]") or
               ln == "[Work Work-UnumIndex-2] WARNING:root:warned about c" for ln in lines), lines
    assert all(ln.startswith("[Work Work-UnumIndex-") for ln in lines)
    assert not any('"unum":' in ln for ln in lines)  # event lines are not output
    code, out, _ = cli("logs", app, "--cloud", "aws", "--session", "ok-1", "--follow")  # ends: session ended
    assert code == 0 and "[Join Join] join 3" in out.splitlines()
    recs = [json.loads(ln) for ln in cli("logs", app, "--cloud", "aws", "--json")[1].splitlines()]
    assert {"ok-1", "bad-1"} <= {r["session"] for r in recs}
    # Lambda's own START / END / REPORT lines delimit the requests; they are not output
    assert not any(r["line"].split(" RequestId: ")[0] in ("START", "END", "REPORT") for r in recs)

    code, _, err = cli("trace", app, "ok-1", "--cloud", "aws", "-o", str(tmp_path / "t.html"))
    assert code == 0, err
    page = (tmp_path / "t.html").read_text()
    assert "Work-UnumIndex-2" in page and "<script src=" not in page

    for cmd in ("describe", "history"):
        code, out, err = cli(cmd, app, "never-was", "--cloud", "aws")
        assert code == 2 and out == ""
        errs = [ln for ln in err.splitlines() if ln.startswith("unumctl: ")]
        assert len(errs) == 1 and "no session never-was" in errs[0], err
    code, _, err = cli("logs", app, "--cloud", "aws", "--session", "never-was")
    assert code == 2 and "no session never-was" in err


@pytest.mark.parametrize("seed", [5, 21])
def test_history_under_faults_on_aws(deployed, seed):
    app_dir, dep, table, specs, env = deployed
    faults = FaultSpec.parse(f"seed={seed},duplicate=0.3,kill=0.2,max_kill_ms=60")
    for _ in range(5):  # the draws are keyed by the session id: run until one gets both faults
        sid = f"faulty-{seed}-{uuid.uuid4().hex[:6]}"  # log groups outlive a test on the shared moto
        with LocalLambda(specs, env, faults=faults) as emu:
            lam = boto3.client("lambda", endpoint_url=emu.url)
            lam.invoke(FunctionName=dep.entry, InvocationType="Event",
                       Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": list("abcdefgh")}}))
            item = wait_result(DynamoDBDatastore(table), sid, 120)
            emu.wait_idle(90)
            stats = dict(emu.stats)
        assert item["status"] == "SUCCEEDED" and item["v"] == "ABCDEFGH"
        if stats.get("crashes", 0) > 0 and stats.get("duplicated", 0) > 0:
            break
    assert stats.get("crashes", 0) > 0 and stats.get("duplicated", 0) > 0, stats  # both were injected
    assert stats.get("log_errors", 0) == 0, stats  # every log line reached CloudWatch Logs (moto)

    events = _json(cli("history", str(app_dir), sid, "--cloud", "aws", "--json"))
    kinds = Counter(e["kind"] for e in events)
    # one execution event per delivery the emulator ran (a killed one is `crashed`)
    deliveries = {(e["request_id"], e["attempt"]) for e in events if e["kind"] in EXECUTED}
    runs = sum(v for k, v in stats.items() if k.startswith("runs:"))
    assert len(deliveries) == runs, (kinds, stats)
    assert kinds["retried"] == stats["retries"] and kinds["crashed"] == stats["crashes"], (kinds, stats)
    # every request the emulator received (Invoke calls, and the copies it duplicated) has
    # its executions in the history, and the Invoke calls are the continuations the
    # executions recorded (an adopted duplicate re-sends its continuations) plus the entry
    invokes = sum(v for k, v in stats.items() if k.startswith("invoke:"))
    rids = {e["request_id"] for e in events if e["kind"] in EXECUTED}
    assert len(rids) == invokes + stats["duplicated"], (kinds, stats)
    # (<=: an execution killed after its Invoke calls records no event)
    assert sum(e.get("invoked") or 0 for e in events if e["kind"] in ("ran", "adopted")) + 1 <= invokes
    assert kinds["adopted"] + kinds["dropped"] >= 1  # the duplicates were recognised
    for e in events:
        if e["kind"] == "retried":
            assert e["attempt"] >= 2 and "Runtime.ExitError" in e["detail"], e

    d = _json(cli("describe", str(app_dir), sid, "--cloud", "aws", "--json"))
    assert d["status"] == "SUCCEEDED" and d["output"] == "ABCDEFGH"
    # `invocations` counts the invocations the history shows executing; one killed after its
    # commit and before its event line whose retries found the session ended shows only its
    # crash and "session already finished" drops (whether the killed attempt committed is
    # not in the log: docs/observability.md), so it is not counted, and is exactly that
    counted = {e["instance"] for e in events if e["kind"] in STARTS}
    unshown = {e["instance"] for e in events if e["kind"] in EXECUTED} - counted
    for inst in unshown:
        mine = [e for e in events if e["instance"] == inst and e["kind"] in EXECUTED]
        assert any(e["kind"] == "crashed" for e in mine) and all(
            e["kind"] == "crashed" or (e["kind"] == "dropped" and "session already finished" in e["detail"])
            for e in mine), mine
    assert d["counts"]["invocations"] == len(counted) and len(counted | unshown) == 10, (d["counts"], unshown)
    assert d["counts"]["retries"] == stats["retries"] and d["counts"]["crashes"] == stats["crashes"]
    assert d["counts"]["duplicates_dropped"] == kinds["dropped"]
    lines = [json.loads(ln) for ln in cli("logs", str(app_dir), "--cloud", "aws", "--session", sid,
                                         "--json")[1].splitlines()]
    works = {r["instance"] for r in lines if r["function"] == "Work" and r["line"].startswith("work ")}
    assert works == {f"Work-UnumIndex-{i}" for i in range(8)}


KILLED_AFTER = """
import importlib, os, signal
_inner = getattr(importlib.import_module({module!r}), {name!r})
def handler(event, context):
    out = _inner(event, context)
    if not os.path.exists({marker!r}):  # the first execution only
        open({marker!r}, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # after it recorded its event, before it answered
    return out
"""


def test_a_kill_after_the_execution_recorded_is_a_crash_on_aws(deployed, tmp_path):
    """The environment of the execution that ends the session is killed after the engine
    wrote its `ran` event line and before Lambda got the handler's answer (the window the
    emulator's seeded kill sometimes lands in: after the session-end record, during the
    final sweep, or on the way out). Lambda counts the attempt as failed and retries it; the
    history shows the attempt's `ran` and then its `crashed`, and the retry. Fails without
    the fix: the reader made a `crashed` event only for an attempt that wrote no event."""
    app_dir, dep, table, specs, env = deployed
    join = next(f.name for f in dep.functions if f.unum_name == "Join")
    spec = specs[join]
    module, _, name = spec.handler.rpartition(".")
    (spec.bundle_dir / "unum_killed_after.py").write_text(
        KILLED_AFTER.format(module=module, name=name, marker=str(tmp_path / "killed")))
    spec.handler = "unum_killed_after.handler"
    sid = f"killed-after-{uuid.uuid4().hex[:6]}"
    with LocalLambda(specs, env) as emu:
        lam = boto3.client("lambda", endpoint_url=emu.url)
        lam.invoke(FunctionName=dep.entry, InvocationType="Event",
                   Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": list("ab")}}))
        item = wait_result(DynamoDBDatastore(table), sid, 120, emu)
        emu.wait_idle(90)
        stats = dict(emu.stats)
    assert item["status"] == "SUCCEEDED" and item["v"] == "AB"
    assert stats["crashes"] == 1 and stats[f"runs:{join}"] >= 2, stats

    events = _json(cli("history", str(app_dir), sid, "--cloud", "aws", "--json"))
    mine = [e for e in events if e["instance"] == "Join"]
    first = [e["kind"] for e in mine if e["attempt"] == 1]
    assert first == ["ran", "crashed"], mine
    ran, crashed = mine[0], mine[1]
    assert crashed["request_id"] == ran["request_id"] and crashed["error"] == "Runtime.ExitError", crashed
    assert "signal: killed" in crashed["detail"]
    retried = next(e for e in mine if e["kind"] == "retried")
    assert retried["attempt"] == 2 and "Runtime.ExitError" in retried["detail"], retried
    assert mine.index(crashed) < mine.index(retried)
    kinds = Counter(e["kind"] for e in events)
    assert kinds["crashed"] == stats["crashes"], (kinds, stats)
    d = _json(cli("describe", str(app_dir), sid, "--cloud", "aws", "--json"))
    runs = sum(v for k, v in stats.items() if k.startswith("runs:"))
    # the killed attempt is one execution, not two (its `ran` and its `crashed`)
    assert d["counts"]["crashes"] == 1 and d["counts"]["executions"] == runs, (d["counts"], stats)


KILLED_AFTER_INVOKING = """
import importlib, os, signal
from runtime.aws.invoker import LambdaInvoker
_inner = getattr(importlib.import_module({module!r}), {name!r})
_invoke = LambdaInvoker.invoke_many
def _invoke_then_die(self, calls, delay=0.0):
    _invoke(self, calls, delay)
    if not os.path.exists({marker!r}):  # the first execution only
        open({marker!r}, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)  # it invoked its continuations and recorded nothing
LambdaInvoker.invoke_many = _invoke_then_die
def handler(event, context):
    return _inner(event, context)
"""


def test_an_entry_attempt_killed_long_before_its_retry_is_in_the_history_on_aws(deployed, tmp_path):
    """The entry execution is killed after it invoked its continuations and before it
    recorded the session's start; Lambda's retry comes later than the reader's 5 s before
    the start the retry records (Lambda waits a minute before the first retry and two
    before the second; here the emulator waits 6 s), and the continuation ran in between.
    The history still has the killed attempt's crash, the retry, the attempt numbers and
    the continuation's execution: every execution the emulator ran. Fails without the fix:
    the logs were read from 5 s before the recorded start, and the killed attempt and the
    continuation it invoked were not in the history at all."""
    app_dir, dep, table, specs, env = deployed
    entry = specs[dep.entry]
    module, _, name = entry.handler.rpartition(".")
    (entry.bundle_dir / "unum_killed_after_invoking.py").write_text(
        KILLED_AFTER_INVOKING.format(module=module, name=name, marker=str(tmp_path / "killed")))
    entry.handler = "unum_killed_after_invoking.handler"
    sid = f"killed-entry-{uuid.uuid4().hex[:6]}"
    with LocalLambda(specs, env, retry_delay=6.0) as emu:
        lam = boto3.client("lambda", endpoint_url=emu.url)
        lam.invoke(FunctionName=dep.entry, InvocationType="Event",
                   Payload=json.dumps({"Session": sid, "Data": {"Source": "http", "Value": ["a"]}}))
        item = wait_result(DynamoDBDatastore(table), sid, 120, emu)
        emu.wait_idle(90)
        stats = dict(emu.stats)
    assert item["status"] == "SUCCEEDED" and item["v"] == "A"
    assert stats["crashes"] == 1 and stats[f"runs:{dep.entry}"] == 2, stats

    events = _json(cli("history", str(app_dir), sid, "--cloud", "aws", "--json"))
    start = [(e["kind"], e["attempt"]) for e in events if e["instance"] == "Start"]
    # the retry finds the checkpoint (adopted), or the session already ended (dropped)
    assert start[:2] == [("crashed", 1), ("retried", 2)] and start[2:] in (
        [("adopted", 2)], [("dropped", 2)]), events
    assert "ran" in {e["kind"] for e in events if e["instance"] == "Work-UnumIndex-0"}, events
    runs = sum(v for k, v in stats.items() if k.startswith("runs:"))
    assert len({(e["request_id"], e["attempt"]) for e in events if e["kind"] in EXECUTED}) == runs, events
    d = _json(cli("describe", str(app_dir), sid, "--cloud", "aws", "--json"))
    assert d["counts"]["crashes"] == 1 and d["counts"]["retries"] == 1, d["counts"]
    code, out, _ = cli("logs", str(app_dir), "--cloud", "aws", "--session", sid, "--function", "Work", "--json")
    assert code == 0 and "work a" in {json.loads(ln)["line"] for ln in out.splitlines()}, out


def test_session_index_first_write_wins(unum_table):
    """The adapter's session index on moto DynamoDB: the end may come before the start, a
    second start or end changes nothing, a large input is recorded as its size, and event
    lines are compact JSON with the marker, one per line, written once."""
    import io

    from runtime.aws.history import MAX_INPUT_BYTES, CloudWatchEvents
    from unumctl.aws.history import AwsHistoryReader

    ddb = boto3.client("dynamodb")
    out = io.StringIO()
    ev = CloudWatchEvents(ddb, unum_table, out=out)
    ev.session_ended("s1", "FAILED", 20.0, {"error": "ValueError", "cause": "x" * 5000})
    ev.session_started("s1", "Start", 10.0, {"big": "y" * MAX_INPUT_BYTES})
    ev.session_started("s1", "Other", 11.0, 1)
    ev.session_ended("s1", "SUCCEEDED", 30.0, {"v": 1})
    r = AwsHistoryReader(DynamoDBDatastore(unum_table, ddb), None, boto3.client("logs"), {})
    rec = r._index("s1")
    assert rec["function"] == "Start" and rec["started_at"] == 10.0 and rec["ended_at"] == 20.0
    assert rec["status"] == "FAILED" and rec["error"] == "ValueError" and len(rec["cause"]) == 1000
    assert rec["input"] == {"omitted": True, "bytes": MAX_INPUT_BYTES + len('{"big":""}')}
    e = {"session": "s1", "instance": "F", "kind": "ran", "request_id": "r", "attempt": 1, "t0": 1.0,
         "error": None, "detail": "a\nb"}
    ev.record([e])
    ev.record([e])  # the same event again (the engine's early record of a session end)
    lines = out.getvalue().splitlines()
    # an execution's own event leaves out its request id and attempt 1: the reader takes them
    # from the Lambda START line it follows (runtime/aws/history.py)
    assert len(lines) == 1 and json.loads(lines[0]) == {
        "unum": "event", **{k: v for k, v in e.items() if v is not None and k not in ("request_id", "attempt")}}
    assert [x["session"] for x in r._index_rows()] == ["s1"]


@pytest.mark.parametrize("level,checkpoint", [("full", True), ("full", False), ("off", True)],
                         ids=["exactly-once", "at-least-once", "history-off"])
def test_a_session_its_entry_ends_is_one_write(unum_table, tmp_path, level, checkpoint):
    """A one-function session (a whole workflow fused into its entry, docs/fusion.md) on
    moto DynamoDB: the entry execution's create of the result also records the session in
    the index (runtime.ports.Events `result_fields`), so the session costs one write request
    and one item; the reader lists and describes it, a duplicate adopts the result, and a
    two-function session still records its start beside the result it ends with."""
    import io

    from runtime.aws.history import CloudWatchEvents, index_key
    from runtime.local.datastore import FileBlobStore
    from runtime.ir import load_function
    from unumctl.aws.history import AwsHistoryReader

    from unumctl_testing.conformance.meters import WireMeter
    from tests.unumctl.observe.test_history import Recorder

    ddb = boto3.client("dynamodb")
    ds = DynamoDBDatastore(unum_table, ddb)
    ev = CloudWatchEvents(ddb, unum_table, level=level, out=io.StringIO())
    meter = WireMeter(ddb)
    ir = load_function({"Name": "Solo", "Start": True, "Checkpoint": checkpoint})
    eng = Engine(ir, lambda e, c: {"twice": e["n"] * 2}, ds, Recorder(), FileBlobStore(tmp_path / "b"),
                 Options(history=level), events=ev)
    payload = {"Session": "s1", "Data": {"Source": "http", "Value": {"n": 21}}}
    assert eng.handle(payload, {"attempt": 1, "request_id": "r1"}).status == "ran"
    writes = {op: n for op, n in meter.ops.items() if op not in ("BatchGetItem", "GetItem", "Query")}
    assert writes == {"UpdateItem": 1}, meter.ops
    items = ddb.scan(TableName=unum_table)["Items"]
    assert [DynamoDBDatastore.key_of(i) for i in items] == [("s1", "result")]
    assert ds.get("s1", "result") == {"status": "SUCCEEDED", "instance": "Solo", "v": {"twice": 42}}
    assert eng.handle(payload, {"attempt": 1, "request_id": "r2"}).status in ("adopted", "dropped")
    r = AwsHistoryReader(ds, None, boto3.client("logs"), {})
    rec = r._index("s1")
    if level == "off":  # no history: the item holds the result only
        assert rec is None and r._index_rows() == [] and set(items[0]) == {"session", "name", "j", "expires_at"}
        return
    assert rec["function"] == "Solo" and rec["input"] == {"n": 21} and rec["started_at"] > 0
    assert [x["session"] for x in r._index_rows()] == ["s1"]
    # a session whose result another function creates: the start is recorded by its own write
    ev.session_started("s2", "Start", 5.0, [1])
    assert ds.get("s2", "result") is None  # a record without a result reads as none
    assert ds.create_if_absent("s2", "result", {"status": "SUCCEEDED", "v": 2}, 10**10) == (
        True, {"status": "SUCCEEDED", "v": 2})
    assert ds.create_if_absent("s2", "result", {"status": "FAILED"}, 10**10) == (False, {"status": "SUCCEEDED", "v": 2})
    two = ddb.get_item(TableName=unum_table, Key=index_key("s2"))["Item"]
    assert two["function"]["S"] == "Start" and "j" in two and r._index("s2")["input"] == [1]
