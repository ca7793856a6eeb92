"""Task TimeoutSeconds / HeartbeatSeconds and callbacks (.waitForTaskToken) on the local
target, with real worker processes: a timed-out attempt is killed by the platform and its
States.Timeout reaches the Task's Retry/Catch; a callback Task waits with no compute held and
is resumed by `unumctl send-task-*` or the Python API; a token is used once
(docs/stepfunctions.md "Timeouts, heartbeats and callbacks")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from runtime.asl.callback import CallbackClient, CallbackError, Token
from runtime.local.datastore import SqliteDatastore
from runtime.local.entry import QueueInvoker
from runtime.local.queue import DurableQueue
from unumctl.local import LocalRunner
from unumctl.pipeline import load as load_app

from unumctl_testing.apps import ROOT
from unumctl_testing.callback_apps import (ARN, SELF_COMPLETE, SLEEPY, TOKEN_WRITER, callback_machine,  # noqa: F401
                                          sfn_app, timeout_machine, wait_file)

def run(app_dir: Path, state: Path, value, session: str, timeout: float = 120):
    with LocalRunner(load_app(app_dir), state=state, quiet=True) as r:
        item = r.run(value, session, timeout)
        r.platform.wait_idle(60)
        return item, dict(r.platform.stats)


def test_task_timeout_is_killed_and_caught(tmp_path):
    app = sfn_app(tmp_path / "app", timeout_machine(), {"Sleepy": SLEEPY})
    log = tmp_path / "attempts.log"
    t0 = time.monotonic()
    item, stats = run(app, tmp_path / "state", {"log": str(log), "slow_attempts": [0]}, "to-1")
    elapsed = time.monotonic() - t0
    assert item["status"] == "SUCCEEDED", item
    out = item["v"]
    assert out["err"]["Error"] == "States.Timeout"
    assert "TimeoutSeconds" in out["err"]["Cause"]
    assert stats["task_timeouts"] == 1          # the platform killed the instance once
    pid = int(log.read_text().splitlines()[0])
    assert not Path(f"/proc/{pid}").exists()     # ... really: the sleeping process is gone
    assert len(log.read_text().splitlines()) == 1  # the redelivery did not run user code again
    assert elapsed < 25                          # not the 30 s the function sleeps


def test_task_timeout_retried_then_succeeds(tmp_path):
    retry = [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 1, "MaxAttempts": 2, "BackoffRate": 1}]
    app = sfn_app(tmp_path / "app", timeout_machine(retry), {"Sleepy": SLEEPY})
    log = tmp_path / "attempts.log"
    item, stats = run(app, tmp_path / "state", {"log": str(log), "slow_attempts": [0, 1]}, "to-2")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["attempt"] == 2             # attempts 0 and 1 timed out, 2 returned
    assert stats["task_timeouts"] == 2
    assert len(log.read_text().splitlines()) == 3


def test_task_timeout_retries_exhausted_fail_the_session(tmp_path):
    retry = [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    app = sfn_app(tmp_path / "app", timeout_machine(retry, catch=False), {"Sleepy": SLEEPY})
    log = tmp_path / "attempts.log"
    item, stats = run(app, tmp_path / "state", {"log": str(log), "slow_attempts": [0, 1]}, "to-3")
    assert item["status"] == "FAILED" and item["error"] == "States.Timeout", item
    assert stats["task_timeouts"] == 2


def test_function_timeout_follows_timeout_seconds(tmp_path):
    d = timeout_machine()
    d["States"]["Work"]["TimeoutSeconds"] = 100
    app = load_app(sfn_app(tmp_path / "app", d, {"Sleepy": SLEEPY}))
    assert app.manifest.functions["Work"].timeout == 110  # TimeoutSeconds + margin (was 60)


# ---------------------------------------------------------------- callbacks

def cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "unumctl.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=timeout)


def test_heartbeat_timeout_is_caught(tmp_path):
    app = sfn_app(tmp_path / "app", callback_machine(heartbeat=1), {"Waiter": TOKEN_WRITER})
    tf = tmp_path / "token"
    item, _ = run(app, tmp_path / "state", {"token_file": str(tf), "x": 1}, "hb-1")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"nobeat": "States.HeartbeatTimeout"}
    token = tf.read_text()
    client = local_client(tmp_path / "state")
    with pytest.raises(CallbackError) as e:  # the token timed out: refused
        client.send_task_success(token, {"late": True})
    assert e.value.code == "TaskTimedOut"


def local_client(state: Path) -> CallbackClient:
    ds = SqliteDatastore(state / "unum.db")
    return CallbackClient(ds, QueueInvoker(lambda m: None, DurableQueue(ds), None))


def test_callback_completed_from_inside_a_function(tmp_path):
    app = sfn_app(tmp_path / "app", callback_machine(resource_fn="SelfComplete"),
                  {"SelfComplete": SELF_COMPLETE})
    item, _ = run(app, tmp_path / "state", {"token_file": "unused", "x": 21}, "self-1")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"got": {"self": 42}, "x": 21}


def test_send_task_success_after_the_invoking_process_exited(tmp_path):
    app = sfn_app(tmp_path / "app", callback_machine(), {"Waiter": TOKEN_WRITER})
    tf = tmp_path / "token"
    data = tmp_path / "in.json"
    data.write_text(json.dumps({"token_file": str(tf), "x": 5}))
    # invoke and give up waiting after 5 s: the process exits while the Task waits
    p = cli("invoke", str(app), "--data", str(data), "--session", "cb-1", "--timeout", "5")
    assert p.returncode == 2 and "no result" in p.stderr, p.stderr
    token = wait_file(tf)
    r = cli("result", str(app), "cb-1")
    assert r.returncode == 3  # still waiting
    out = tmp_path / "out.json"
    out.write_text(json.dumps({"paid": 12.5}))
    s = cli("send-task-success", str(app), "--token", token, "--output", str(out))
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == {"got": {"paid": 12.5}, "x": 5}
    r = cli("result", str(app), "cb-1")
    assert r.returncode == 0 and json.loads(r.stdout) == {"got": {"paid": 12.5}, "x": 5}
    # the token was used: a second send is refused in one line, exit 2
    again = cli("send-task-success", str(app), "--token", token, "--output", str(out))
    assert again.returncode == 2
    lines = [ln for ln in again.stderr.splitlines() if ln.strip()]
    assert lines == ["unumctl: TaskTimedOut: Task Timed Out: 'Provided task does not exist anymore'"]


def test_send_task_failure_is_routed_to_the_catch(tmp_path):
    app = sfn_app(tmp_path / "app", callback_machine(timeout=300), {"Waiter": TOKEN_WRITER})
    tf = tmp_path / "token"
    data = tmp_path / "in.json"
    data.write_text(json.dumps({"token_file": str(tf), "x": 7}))
    p = cli("invoke", str(app), "--data", str(data), "--session", "cb-2", "--no-wait")
    assert p.returncode == 0, p.stderr
    token = wait_file(tf)
    s = cli("send-task-failure", str(app), "--token", token, "--error", "Payment.Declined",
            "--cause", "card expired")
    assert s.returncode == 0, s.stderr
    assert json.loads(s.stdout) == {"declined": {"Error": "Payment.Declined", "Cause": "card expired"}}
    out = tmp_path / "out.json"
    out.write_text("{}")
    twice = cli("send-task-success", str(app), "--token", token, "--output", str(out))
    assert twice.returncode == 2 and "TaskTimedOut" in twice.stderr


def test_bad_tokens_are_refused_before_use(tmp_path):
    app = sfn_app(tmp_path / "app", callback_machine(), {"Waiter": TOKEN_WRITER})
    for bad in ["", "../../etc", "a" * 2000, "eyJ9", Token("cb-app", "s1", "../x", 0, "0" * 32).encode()]:
        with pytest.raises(CallbackError) as e:
            Token.decode(bad)
        assert e.value.code == "InvalidToken"
    r = cli("send-task-heartbeat", str(app), "--token", "not a token")
    assert r.returncode == 2 and r.stderr.strip() == "unumctl: InvalidToken: Invalid token"


def test_heartbeats_keep_a_callback_alive_and_a_failure_is_retried(tmp_path):
    """HeartbeatSeconds 2, the service beats every 0.5 s for 3 s (longer than 2 s), then fails
    the task: the Retry runs attempt 1 (a new token, the Lambda called again), whose success
    completes the Task; the first token is refused afterwards."""
    d = callback_machine(heartbeat=2)
    d["States"]["Wait4"]["Retry"] = [{"ErrorEquals": ["Payment.Retry"], "IntervalSeconds": 1, "MaxAttempts": 1}]
    app = sfn_app(tmp_path / "app", d, {"Waiter": TOKEN_WRITER})
    tf = tmp_path / "token"
    state = tmp_path / "state"
    with LocalRunner(load_app(app), state=state, quiet=True) as r:
        session = r.start({"token_file": str(tf), "x": 3}, "hb-2")
        first = wait_file(tf)
        client = local_client(state)
        t0 = time.monotonic()
        while time.monotonic() - t0 < 3:
            client.send_task_heartbeat(first)
            time.sleep(0.5)
        assert r.platform.result(session) is None   # still waiting: no heartbeat timeout
        tf.unlink()
        client.send_task_failure(first, "Payment.Retry", "try again")
        second = wait_file(tf)
        assert second != first
        assert Token.decode(second).n == 1 and Token.decode(first).n == 0
        client.send_task_success(second, {"ok": 2})
        item = r.platform.wait_result(session, 60)
        with pytest.raises(CallbackError) as e:
            client.send_task_success(first, {"ok": 1})
        assert e.value.code == "TaskTimedOut"
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == {"got": {"ok": 2}, "x": 3}


def test_callbacks_inside_a_map(tmp_path):
    """Each Map item waits on its own token, completed from inside its function."""
    inner = callback_machine(resource_fn="SelfComplete")
    inner["States"]["Wait4"]["Parameters"]["Payload"] = {"token.$": "$$.Task.Token", "x.$": "$.x"}
    d = {"StartAt": "M", "States": {"M": {"Type": "Map", "ItemsPath": "$.items",
                                          "Iterator": {"StartAt": "Wait4", "States": inner["States"]},
                                          "End": True}}}
    app = sfn_app(tmp_path / "app", d, {"SelfComplete": SELF_COMPLETE})
    item, _ = run(app, tmp_path / "state", {"items": [{"x": 1}, {"x": 2}, {"x": 3}]}, "map-cb")
    assert item["status"] == "SUCCEEDED", item
    assert item["v"] == [{"got": {"self": 2 * x}, "x": x} for x in (1, 2, 3)]


# ---------------------------------------------------------------- the in-function timer (aws, gcp)

def _machine(definition):
    from runtime.asl.machine import Machine
    return Machine(definition, {"Id": "x", "Name": "s1", "StartTime": "t", "Input": {}},
                   time.time, time.sleep)


def test_in_function_timer_raises_states_timeout_and_journals_it(tmp_path):
    """Without a platform watchdog (aws, gcp) the runtime's timer raises States.Timeout when
    the call overruns; the outcome is journaled, so a re-run (the function killed later by its
    own timeout and retried) replays it instead of calling the Lambda again."""
    from types import SimpleNamespace

    from runtime.asl.attempts import TaskAttempts, try_key
    d = {"StartAt": "W", "States": {"W": {
        "Type": "Task", "Resource": ARN + "f", "TimeoutSeconds": 1, "End": True,
        "Retry": [{"ErrorEquals": ["States.Timeout"], "IntervalSeconds": 1, "MaxAttempts": 1}],
        "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]},
        "C": {"Type": "Pass", "End": True}}}
    ds = SqliteDatastore(tmp_path / "db.sqlite")
    engine = SimpleNamespace(ds=ds, clock=time.time, watchdog=None, invoker=None)
    ctx = SimpleNamespace(session="s1", instance="W", function="W", extra={}, wire_of=dict, created=[])
    calls = []

    def slow(resource, event):
        calls.append(time.monotonic())
        time.sleep(3)
        return "late"

    t0 = time.monotonic()
    nxt, out = _machine(d).run_task("", "W", {"a": 1}, slow, attempts=TaskAttempts(engine, ctx, "app", time.time() + 60))
    assert nxt == "C" and out == {"Error": "States.Timeout",
                                  "Cause": "The task timed out after 1 seconds (TimeoutSeconds)."}
    assert len(calls) == 2 and time.monotonic() - t0 < 3.5  # two 1 s attempts + 1 s interval
    assert ds.get("s1", try_key("W", 0))["Error"] == "States.Timeout"
    assert ds.get("s1", try_key("W", 1))["Error"] == "States.Timeout"
    calls.clear()
    nxt2, out2 = _machine(d).run_task("", "W", {"a": 1}, slow, attempts=TaskAttempts(engine, ctx, "app", time.time() + 60))
    assert (nxt2, out2) == (nxt, out) and calls == []  # replayed from the journal


def test_timeout_seconds_path_must_be_a_positive_integer():
    from runtime.asl.errors import AslError
    d = {"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": ARN + "f",
                                          "TimeoutSecondsPath": "$.t", "End": True,
                                          "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]},
                                    "C": {"Type": "Pass", "End": True}}}
    m = _machine(d)
    assert m.run_task("", "W", {"t": 5}, lambda r, e: {"ok": 1}) == (None, {"ok": 1})
    with pytest.raises(AslError) as e:  # States.Runtime: never caught
        m.run_task("", "W", {"t": "5"}, lambda r, e: {"ok": 1})
    assert e.value.error == "States.Runtime" and "TimeoutSecondsPath '$.t'" in e.value.cause


@pytest.mark.parametrize("seed", [int(s) for s in os.environ.get("CB_SEEDS", "1,2").split(",")])
def test_callbacks_and_timeouts_under_faults(tmp_path, seed):
    """Duplicated, delayed and crashed deliveries (crashes at the engine's fault points): each
    Map item's callback is claimed once and its Task times out or completes exactly as without
    faults."""
    from runtime.faults import FaultSpec
    inner = callback_machine(resource_fn="SelfComplete")
    inner["States"]["Wait4"]["Parameters"]["Payload"] = {"token.$": "$$.Task.Token", "x.$": "$.x"}
    d = {"StartAt": "M", "States": {"M": {"Type": "Map", "ItemsPath": "$.items",
                                          "Iterator": {"StartAt": "Wait4", "States": inner["States"]},
                                          "ResultPath": "$.items", "Next": "Work"},
                                    "Work": timeout_machine()["States"]["Work"] | {"ResultPath": "$.work"},
                                    "WrongCatch": timeout_machine()["States"]["WrongCatch"],
                                    "Caught": timeout_machine()["States"]["Caught"]}}
    # every execution of Work overruns (duplicates too): the Catch must see States.Timeout
    d["States"]["Work"]["Parameters"] = {"log": str(tmp_path / "attempts.log"), "slow_attempts": list(range(50))}
    app = sfn_app(tmp_path / "app", d, {"SelfComplete": SELF_COMPLETE, "Sleepy": SLEEPY})
    spec = FaultSpec.parse(f"seed={seed},crash=0.15,duplicate=0.3,delay=0.2")
    with LocalRunner(load_app(app), faults=spec, state=tmp_path / "state", quiet=True) as r:
        item = r.run({"items": [{"x": i} for i in range(4)]}, f"faults-{seed}", 120)
        stats = dict(r.platform.stats)
    assert item["status"] == "SUCCEEDED", item
    assert item["v"]["err"]["Error"] == "States.Timeout", item
    assert item["v"]["items"] == [{"got": {"self": 2 * i}, "x": i} for i in range(4)]
    assert stats.get("duplicated", 0) + stats.get("crashes", 0) > 0, stats


def test_concurrent_sends_claim_a_token_once(tmp_path):
    """Eight senders race on one token (successes, failures and a late heartbeat past the
    deadline that claims the timeout): exactly one claim wins, every other send is refused with
    TaskTimedOut, and the recorded outcome is the winner's."""
    import threading

    from runtime.asl.attempts import token_key, try_key
    ds = SqliteDatastore(tmp_path / "db.sqlite")
    invoked: list = []

    from runtime.ports import Invoker

    class Recorder(Invoker):  # the invoker port, recording (the claim is what is tested)
        def invoke_many(self, calls, delay=0.0):
            invoked.extend(calls)

    now = time.time()
    ds.create_if_absent("s1", token_key("W", 0), {"k": "ab" * 16, "fn": "W", "p": {"Session": "s1"},
                                                   "t0": now, "to": 60, "hb": None, "x": now + 600}, now + 600)
    token = Token("cb-app", "s1", "W", 0, "ab" * 16).encode()
    results: list = []

    def send(i: int) -> None:
        c = CallbackClient(SqliteDatastore(tmp_path / "db.sqlite"), Recorder(), app="cb-app")
        try:
            if i % 2:
                c.send_task_failure(token, f"E{i}", "c")
            else:
                c.send_task_success(token, {"i": i})
            results.append(("ok", i))
        except CallbackError as e:
            results.append((e.code, i))

    threads = [threading.Thread(target=send, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    winners = [i for code, i in results if code == "ok"]
    assert len(winners) == 1 and sorted(code for code, _ in results).count("TaskTimedOut") == 7
    stored = ds.get("s1", try_key("W", 0))
    w = winners[0]
    assert stored == ({"Error": f"E{w}", "Cause": "c"} if w % 2 else {"Output": {"i": w}})
    assert len(invoked) == 8 and all(fn == "W" for fn, _ in invoked)  # every send re-invokes (harmless)
    bad = Token("cb-app", "s1", "W", 0, "cd" * 16).encode()  # a forged nonce
    with pytest.raises(CallbackError) as e:
        CallbackClient(ds, Recorder()).send_task_success(bad, 1)
    assert e.value.code == "InvalidToken"
    with pytest.raises(CallbackError) as e:  # another app's client
        CallbackClient(ds, Recorder(), app="other").send_task_success(token, 1)
    assert e.value.code == "InvalidToken"
