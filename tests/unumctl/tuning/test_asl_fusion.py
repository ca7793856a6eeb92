"""Issue 25: fused compiled Step Functions Task chains (unumctl/tuning/asl_fusion.py, the
Wrapper's `CoLocated`, runtime/asl/wrapper.py; docs/fusion.md "Compiled Step Functions").
The corpora run with every chain fused by `make conformance-plans` (not in CI)."""

import json

import pytest

from runtime.asl.wrapper import ENV_VIRTUAL_CLOCK

from unumctl.pipeline import load as load_app
from unumctl.tuning import colocate
from unumctl.tuning.colocate import FusionError

from unumctl_testing.apps import ROOT, copy_example, expected_of, matches_expected

LAMBDA = "arn:aws:lambda:us-east-1:123456789012:function:"

# Prep -> Flaky (Retry on FlakyError, Catch of everything else, TimeoutSeconds: unfused the
# local platform's timer kills the instance, fused the in-function timer fires) -> Choice ->
# Finish | Recover (a Task reached by the Catch)
MACHINE = {
    "StartAt": "Prep",
    "States": {
        "Prep": {"Type": "Task", "Resource": LAMBDA + "prep", "Next": "Flaky"},
        "Flaky": {"Type": "Task", "Resource": LAMBDA + "flaky", "TimeoutSeconds": 1,
                  "Parameters": {"in.$": "$", "retry.$": "$$.State.RetryCount"},
                  "Retry": [{"ErrorEquals": ["FlakyError"], "IntervalSeconds": 1, "MaxAttempts": 3}],
                  "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Recover"}],
                  "Next": "Route"},
        "Route": {"Type": "Choice", "Choices": [{"Variable": "$.done", "BooleanEquals": True, "Next": "Finish"}],
                  "Default": "Recover"},
        "Finish": {"Type": "Task", "Resource": LAMBDA + "finish", "End": True},
        "Recover": {"Type": "Task", "Resource": LAMBDA + "finish", "End": True},
    },
}

CODE = {
    "prep": "def handler(event, context):\n"
            "    return dict(event, prep=[context.function, context.instance])\n",
    "flaky": "class FlakyError(Exception):\n    pass\n\n"
             "def handler(event, context):\n"
             "    import time\n"
             "    mode = event['in']['mode']\n"
             "    if mode == 'slow':\n"
             "        time.sleep(3)\n"
             "    if mode == 'fatal':\n"
             "        raise ValueError('fatal input')\n"
             "    if event['retry'] < 2:\n"
             "        raise FlakyError(f\"attempt {event['retry']}\")\n"
             "    return dict(event['in'], done=mode == 'flaky', retries=event['retry'],\n"
             "                flaky=[context.function, context.instance])\n",
    "finish": "def handler(event, context):\n"
              "    return dict(event, finish=[context.function, context.instance])\n",
}

INPUTS = [{"mode": "flaky"}, {"mode": "fatal"}, {"mode": "other"}, {"mode": "slow"}]


def _app(root):
    root.mkdir()
    (root / "statemachine.json").write_text(json.dumps(MACHINE))
    fns = []
    for name, code in CODE.items():
        (root / name).mkdir()
        (root / name / "app.py").write_text(code)
        fns.append(f"  {name}:\n    code: {name}\n    handler: app.handler\n    timeout: 30\n")
    (root / "unumctl.yaml").write_text(
        "version: 1\napp: sfn-fused\nworkflow:\n  stepfunctions: statemachine.json\n"
        "runtime:\n  checkpoint: true\n  max_delivery_attempts: 2\nfunctions:\n" + "".join(fns))
    return load_app(root)


def _comparable(v):
    """`v` with a caught error's Cause reduced to what does not vary between runs: its
    errorMessage, errorType and the user code's frames (not the request id, nor the bundle's
    path or the runtime's frames, which a fused bundle has one more of)."""
    if isinstance(v, dict) and isinstance(v.get("error"), dict) and v["error"]["Cause"].startswith("{"):
        cause = json.loads(v["error"]["Cause"])
        user = [f.split("/")[-1] for f in cause["stackTrace"] if "/runtime/" not in f]
        v = dict(v, error=dict(v["error"], Cause=[cause["errorMessage"], cause["errorType"], user]))
    return v


def _run(app, inputs=INPUTS):
    from unumctl.local import LocalRunner
    from unumctl.observe import reader
    out, ran = [], []
    with LocalRunner(app, quiet=True) as runner:
        for i, value in enumerate(inputs):
            item = runner.run(value, session=f"s{i}", timeout=60)
            out.append((item["status"], _comparable(item.get("v")), item.get("error")))
    for i in range(len(inputs)):
        ran += [e["function"] for e in reader("local", app).history(f"s{i}") if e.get("kind") == "ran"]
    return out, ran


def test_a_fused_compiled_chain_computes_what_the_unfused_one_does(tmp_path, monkeypatch):
    """[Prep, Flaky, Finish, Recover] on local: the same results (each member's handler sees
    its own function and invocation name; the co-located Flaky's Retry runs three attempts and
    its Catch routes to Recover, run in place too), and only Prep's function ever runs."""
    monkeypatch.setenv(ENV_VIRTUAL_CLOCK, "1")  # the Retry's IntervalSeconds pass at once
    app = _app(tmp_path / "app")
    assert colocate.fusible_chains(app.workflow, {n: s.handler for n, s in app.manifest.functions.items()}) \
        == [["Prep", "Flaky", "Recover", "Finish"]]
    fused = colocate.apply(_app(tmp_path / "fused"), [["Prep", "Flaky", "Finish", "Recover"]])
    w = fused.workflow.functions["Prep"].wrapper
    assert sorted(v["Function"] for v in w["CoLocated"].values()) == ["Finish", "Flaky", "Recover"]
    assert fused.workflow.functions["Prep"].next == ()  # the group ends the execution
    # Prep's invocation runs Prep, Flaky and one of Finish / Recover: 3 x 30 s
    assert fused.manifest.functions["Prep"].timeout == 90 and app.manifest.functions["Prep"].timeout == 30
    before, ran0 = _run(app)
    after, ran1 = _run(fused)
    assert after == before
    assert before[0][0] == "SUCCEEDED" and before[0][1]["retries"] == 2 and before[0][1]["finish"][0] == "Finish"
    assert before[1][0] == "SUCCEEDED" and before[1][1]["error"]["Error"] == "ValueError" \
        and before[1][1]["finish"][0] == "Recover" and "app.py" in str(before[1][1]["error"]["Cause"][2])
    assert before[2][1]["finish"][0] == "Recover" and before[2][1]["flaky"][0] == "Flaky"
    assert before[3][1]["error"]["Error"] == "States.Timeout" and before[3][1]["finish"][0] == "Recover"
    assert set(ran0) == {"Prep", "Flaky", "Finish", "Recover"} and set(ran1) == {"Prep"}
    assert len(ran1) == len(INPUTS)


def test_a_partly_fused_chain_routes_on_with_the_edges_rewritten(tmp_path, monkeypatch):
    """[Prep, Flaky, Recover]: Prep keeps Flaky's route to Finish, without the `Pop` that
    Flaky's two routes carried (one Scalar edge is no fan-out frame), and computes the same."""
    monkeypatch.setenv(ENV_VIRTUAL_CLOCK, "1")
    fused = colocate.apply(_app(tmp_path / "fused"), [["Prep", "Flaky", "Recover"]])
    [edge] = fused.workflow.functions["Prep"].next
    assert edge.target == "Finish" and edge.modifiers == ()
    two = colocate.apply(_app(tmp_path / "two"), [["Prep", "Flaky"]]).workflow.functions["Prep"].next
    assert sorted(e.target for e in two) == ["Finish", "Recover"] and all(
        [m.source for m in e.modifiers] == ["Pop"] for e in two)
    before, _ = _run(_app(tmp_path / "plain"), INPUTS[:2])
    after, ran = _run(fused, INPUTS[:2])
    assert after == before and set(ran) == {"Prep", "Finish"}


@pytest.mark.parametrize("group,msg", [
    (["Prep", "Finish"], "Finish's Task 'Finish' is not reached from Prep by a route"),
    (["Flaky", "Prep"], "Prep is the Start function"),
    (["Prep", "Flaky", "Flaky"], "Flaky is already in"),
])
def test_an_unfusible_compiled_group_is_refused_in_one_line(tmp_path, group, msg):
    app = _app(tmp_path / "app")
    with pytest.raises(FusionError) as e:
        colocate.apply(app, [group])
    assert msg in str(e.value) and "\n" not in str(e.value)


def test_a_callback_task_is_not_fused_after_the_first_member(tmp_path):
    """order-payment-sfn: WaitForPayment is a lambda:invoke.waitForTaskToken Task (its own
    function, resumed by the callback): refused as a later member; as a head it runs Ship in
    place once the callback completed its token (the example's result, 2 executions)."""
    from unumctl.local import LocalRunner
    from unumctl.observe import reader
    example = ROOT / "examples" / "order-payment-sfn"
    app = load_app(copy_example(example, tmp_path / "app"))
    with pytest.raises(FusionError, match="WaitForPayment hosts a callback"):
        colocate.apply(app, [["Reserve", "WaitForPayment"]])
    handlers = {n: s.handler for n, s in app.manifest.functions.items()}
    assert colocate.fusible_chains(app.workflow, handlers) == [["WaitForPayment", "Ship"]]
    fused = colocate.apply(app, [["WaitForPayment", "Ship"]])
    with LocalRunner(fused, quiet=True) as runner:
        item = runner.run(json.loads((example / "input.json").read_text()), session="s1", timeout=60)
    assert item["status"] == "SUCCEEDED" and matches_expected(item["v"], expected_of(example)), item
    ran = [e["function"] for e in reader("local", fused).history("s1") if e.get("kind") == "ran"]
    assert "Ship" not in ran and "WaitForPayment" in ran, ran


def test_a_fused_chain_that_ends_a_parallel_branch_is_named_by_the_fanin(tmp_path):
    """text-processing-sfn: [FindUrl, ShortenUrl] ends a Parallel branch; the join's Fan-in
    `Values` name FindUrl (the group's committed invocation) and the example's result is the
    same, with one execution fewer."""
    from unumctl.local import LocalRunner
    from unumctl.observe import reader
    example = ROOT / "examples" / "text-processing-sfn"
    value = json.loads((example / "input.json").read_text())
    out = {}
    for name, fuse in (("plain", []), ("fused", [["FindUrl", "ShortenUrl"]])):
        app = colocate.apply(load_app(copy_example(example, tmp_path / name)), fuse)
        with LocalRunner(app, quiet=True) as runner:
            item = runner.run(value, session="s1", timeout=60)
        ran = [e["function"] for e in reader("local", app).history("s1") if e.get("kind") == "ran"]
        out[name] = (item["status"], item.get("v"), sorted(ran))
        if fuse:
            fanins = [v.source for n, f in app.workflow.functions.items() if n != "ShortenUrl"  # deployed, unused
                      for e in f.next for v in e.values]
            assert any(s.startswith("FindUrl-UnumIndex-") for s in fanins) and \
                not any(s.startswith("ShortenUrl-") for s in fanins), fanins
    expected = expected_of(example)
    assert out["plain"][0] == out["fused"][0] == "SUCCEEDED"
    assert matches_expected(out["plain"][1], expected) and matches_expected(out["fused"][1], expected)
    varies = set(expected.get("$ignore", ())) if isinstance(expected, dict) else set()
    assert {k: v for k, v in out["fused"][1].items() if k not in varies} == \
        {k: v for k, v in out["plain"][1].items() if k not in varies}
    assert out["fused"][2] == sorted(set(out["plain"][2]) - {"ShortenUrl"})


def test_choose_proposes_a_compiled_chain_with_a_large_intermediate_value():
    """`unumctl tune`'s choose prices a compiled route like a chain link: FindUrl's 200 KB
    output to ShortenUrl (text-processing-sfn) is worth fusing; not when a long FindUrl
    would run at ShortenUrl's far larger memory (the loss beats the saving)."""
    from unumctl.tuning.metrics import FunctionStats as FS
    app = load_app(ROOT / "examples" / "text-processing-sfn")

    def stats(nbytes, ms=10.0):
        return [FS(n, 5, [ms if n == "FindUrl" else 10.0] * 5, output_bytes=[nbytes if n == "FindUrl" else 100] * 5)
                for n in app.workflow.functions]
    fuse, _, reasons = colocate.choose(app, stats(200_000), cloud="aws")
    assert ["FindUrl", "ShortenUrl"] in fuse and "saves $" in reasons["FindUrl+ShortenUrl"], (fuse, reasons)
    colocate.apply(app, fuse)
    fuse, _, reasons = colocate.choose(app, stats(100, 5000.0), cloud="aws", memory={"ShortenUrl": 3008})
    assert ["FindUrl", "ShortenUrl"] not in fuse and "loss" in reasons["FindUrl"], (fuse, reasons)
