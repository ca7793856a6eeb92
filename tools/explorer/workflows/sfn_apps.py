"""Step Functions state machines compiled to IR by unumctl.asl (docs/stepfunctions.md).

A nondeterministic Task runs before each Map/Parallel, and the machines read `$$`
(`$$.Execution.StartTime`, `$$.Map.Item.Index`/`Value`), so state kept by the compiled
wrapper outside the checkpoint shows up as a result inconsistent with committed values."""

from __future__ import annotations

from typing import Any

from unumctl.asl import compile_definition, resolver
from unumctl.asl.compiler import to_workflow

from ..model import WorkflowSpec
from .nd import nd, tok

ARN = "arn:aws:lambda:us-east-1:000000000000:function:"


def _task(fn: str, nxt: str | None = None, **kw) -> dict:
    st = {"Type": "Task", "Resource": ARN + fn, **kw}
    st.update({"Next": nxt} if nxt else {"End": True})
    return st


def _synth(e, c):
    raise RuntimeError("synthesized ASL function: no user code")


def compiled(name: str, machine: dict, handlers: dict, value: Any, **kw) -> WorkflowSpec:
    """Compile `machine` and bind every compiled function to its user handler."""
    comp = compile_definition(machine, resolver({k: {} for k in handlers}), sorted(handlers),
                              source=name, machine=name)
    wf = to_workflow(comp, name)
    hs = {fn: (handlers[lam] if lam is not None else _synth) for fn, lam in comp.code.items()}
    lambdas = {fn: lam for fn, lam in comp.code.items() if lam is not None}
    return WorkflowSpec(name, dict(wf.functions), hs, value, lambdas=lambdas, **kw)


def _work(e, c):
    return {"in": e, "w": tok()}


def sfn_map() -> WorkflowSpec:
    def pick(e, c):
        return {"items": [f"i{nd()}", "k"], "tag": tok()}

    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Fan", ResultPath="$.picked"),
        "Fan": {"Type": "Map", "ItemsPath": "$.picked.items",
                "ItemSelector": {"v.$": "$$.Map.Item.Value", "i.$": "$$.Map.Item.Index",
                                 "t.$": "$$.Execution.StartTime"},
                "ItemProcessor": {"StartAt": "Work", "States": {"Work": _task("Work")}},
                "ResultPath": "$.results", "Next": "Stamp"},
        "Stamp": {"Type": "Pass", "Parameters": {"picked.$": "$.picked", "results.$": "$.results",
                                                 "t.$": "$$.Execution.StartTime"}, "End": True}}}

    def check(value, view) -> str | None:
        committed = view.committed_user_output("Pick")
        if not isinstance(value, dict) or [value.get("picked")] != committed[:1]:
            return f"picked {value.get('picked') if isinstance(value, dict) else value} != committed Pick {committed[:1]}"
        items = value["picked"]["items"]
        res = value.get("results") or []
        if [r["in"]["v"] for r in res] != items or [r["in"]["i"] for r in res] != list(range(len(items))):
            return f"Map results {res} do not match committed items {items}"
        times = {r["in"]["t"] for r in res} | {value.get("t")}
        if len(times) != 1:
            return f"$$.Execution.StartTime differs within one execution: {sorted(times)}"
        return None
    return compiled("sfn-map", machine, {"Pick": pick, "Work": _work}, {"job": 1}, check_result=check,
                    about="Task (nondeterministic) -> Map with ItemSelector on $$ -> Pass reading $$")


def sfn_parallel_choice() -> WorkflowSpec:
    def pick(e, c):
        return {"x": 70 if nd() % 2 == 0 else 10, "tag": tok()}

    branch = {"StartAt": "W", "States": {"W": _task("Work", Parameters={
        "x.$": "$.picked.x", "t.$": "$$.Execution.StartTime"})}}
    machine = {"StartAt": "Pick", "States": {
        "Pick": _task("Pick", "Par", ResultPath="$.picked"),
        "Par": {"Type": "Parallel", "Branches": [branch, branch], "ResultPath": "$.branches", "Next": "Route"},
        "Route": {"Type": "Choice", "Choices": [{"Variable": "$.picked.x", "NumericGreaterThan": 50,
                                                 "Next": "Hot"}], "Default": "Cold"},
        "Hot": {"Type": "Pass", "Result": "hot", "ResultPath": "$.route", "Next": "Final"},
        "Cold": {"Type": "Pass", "Result": "cold", "ResultPath": "$.route", "Next": "Final"},
        "Final": {"Type": "Pass", "Parameters": {"picked.$": "$.picked", "branches.$": "$.branches",
                                                 "route.$": "$.route", "t.$": "$$.Execution.StartTime"},
                  "End": True}}}

    def check(value, view) -> str | None:
        committed = view.committed_user_output("Pick")
        if not isinstance(value, dict) or [value.get("picked")] != committed[:1]:
            return f"picked {value.get('picked') if isinstance(value, dict) else value} != committed Pick {committed[:1]}"
        x = value["picked"]["x"]
        if value.get("route") != ("hot" if x > 50 else "cold"):
            return f"route {value.get('route')} for x={x}"
        if any(b["in"]["x"] != x for b in value.get("branches", [])):
            return f"branches saw x {[b['in']['x'] for b in value['branches']]}, committed {x}"
        times = {b["in"]["t"] for b in value.get("branches", [])} | {value.get("t")}
        if len(times) != 1:
            return f"$$.Execution.StartTime differs within one execution: {sorted(times)}"
        return None
    return compiled("sfn-parallel", machine, {"Pick": pick, "Work": _work}, {"job": 2}, check_result=check,
                    about="Task (nondeterministic) -> Parallel reading $$ -> Choice -> Pass reading $$")


def sfn_catch() -> WorkflowSpec:
    def risky(e, c):
        if nd() % 2 == 1:
            raise ValueError(f"risky failed in {tok()}")
        return {"ok": tok()}

    machine = {"StartAt": "Risky", "States": {
        "Risky": _task("Risky", "Done", Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Fix",
                                                "ResultPath": "$.error"}]),
        "Fix": _task("Fix", "Done"),
        "Done": {"Type": "Pass", "End": True}}}
    return compiled("sfn-catch", machine, {"Risky": risky, "Fix": lambda e, c: {"fixed": tok(), "from": e}},
                    {"job": 3}, about="a Task that fails in some executions, with Catch to a fallback Task")


def sfn_map_loop() -> WorkflowSpec:
    """A loop through a Task inside a Map branch: items leave it after different passes."""
    def step(e, c):
        return {"n": e["n"] + 1, "t": tok()}

    machine = {"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items",
        "ItemProcessor": {"StartAt": "Step", "States": {
            "Step": _task("Step", "More?"),
            "More?": {"Type": "Choice", "Choices": [{"Variable": "$.n", "NumericLessThan": 2, "Next": "Step"}],
                      "Default": "Out"},
            "Out": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "End": True}}},
        "End": True}}}

    def check(value, view) -> str | None:
        return None if value == [{"n": 2}, {"n": 2}] else f"loop results {value} != [{{n: 2}}, {{n: 2}}]"
    return compiled("sfn-map-loop", machine, {"Step": step}, {"items": [{"n": 0}, {"n": 1}]},
                    check_result=check, about="Map whose branches loop Task -> Choice -> Task (0 to 2 passes)")


def sfn_parallel_retry() -> WorkflowSpec:
    """Retry on a Parallel whose branch Task fails in its first attempt (and in some later
    executions): the join re-runs both branches as a new attempt (iteration 1); once the
    retry is used up, the Catch applies."""
    def risky(e, c):  # the first attempt fails; later ones in some executions
        if c.iteration == 0 or nd() % 3 == 2:
            raise ValueError(f"risky failed in {tok()}")
        return {"ok": tok()}

    branch = {"StartAt": "R", "States": {"R": _task("Risky")}}
    machine = {"StartAt": "Par", "States": {
        "Par": {"Type": "Parallel", "Branches": [branch, {"StartAt": "W", "States": {"W": _task("Work")}}],
                "Retry": [{"ErrorEquals": ["ValueError"], "IntervalSeconds": 1, "MaxAttempts": 1}],
                "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Caught"}],
                "ResultPath": "$.both", "Next": "Done"},
        "Caught": {"Type": "Pass", "Parameters": {"error.$": "$.error.Error"}, "End": True},
        "Done": {"Type": "Pass", "Parameters": {"ok.$": "$.both[0].ok", "w.$": "$.both[1].in"}, "End": True}}}

    def check(value, view) -> str | None:
        if value == {"error": "ValueError"} or (isinstance(value, dict) and value.get("w") == {"job": 4}
                                                and isinstance(value.get("ok"), str)):
            return None
        return f"unexpected result {value}"
    return compiled("sfn-parallel-retry", machine, {"Risky": risky, "Work": _work}, {"job": 4},
                    check_result=check, about="Retry (then Catch) on a Parallel whose branch Task may fail")


def sfn_map_lanes() -> WorkflowSpec:
    """MaxConcurrency 1 over 3 items: each branch's end starts the next item (lanes)."""
    machine = {"StartAt": "Fan", "States": {"Fan": {
        "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 1,
        "ItemProcessor": {"StartAt": "Work", "States": {"Work": _task("Work")}},
        "End": True}}}

    def check(value, view) -> str | None:
        if not isinstance(value, list) or [r["in"] for r in value] != ["a", "b", "c"]:
            return f"lane results {value} do not match the items a, b, c in order"
        return None
    return compiled("sfn-map-lanes", machine, {"Work": _work}, {"items": ["a", "b", "c"]},
                    check_result=check, about="Map with MaxConcurrency 1: items started one after another")


def sfn_timeout() -> WorkflowSpec:
    """A Task with TimeoutSeconds (the platform's timer may fire during any attempt), Retry
    once on States.Timeout, Catch to a fallback Task; the function gets
    `$$.State.RetryCount` (the explorer's attempt check, invariant (f))."""
    machine = {"StartAt": "Work", "States": {
        "Work": _task("Slow", "Done", TimeoutSeconds=30,
                      Parameters={"RetryCount.$": "$$.State.RetryCount", "v.$": "$"},
                      Retry=[{"ErrorEquals": ["States.Timeout"], "MaxAttempts": 1, "IntervalSeconds": 1}],
                      Catch=[{"ErrorEquals": ["States.ALL"], "Next": "Fallback"}]),
        "Done": {"Type": "Pass", "End": True},
        "Fallback": _task("Fb")}}
    return compiled("sfn-timeout", machine, {"Slow": _work, "Fb": _work}, {"job": 1},
                    about="Task with TimeoutSeconds (platform timer), Retry on States.Timeout, Catch")


def sfn_callback() -> WorkflowSpec:
    """A `.waitForTaskToken` Task with HeartbeatSeconds and a Catch; callback actors call
    SendTaskSuccess / SendTaskFailure / SendTaskHeartbeat with its token (bound `sends`),
    racing with each other, with duplicates and with the session's end."""
    machine = {"StartAt": "Ask", "States": {
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": ARN + "Ask", "Payload": {"token.$": "$$.Task.Token"}},
                "HeartbeatSeconds": 600, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Fallback"}],
                "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
        "Fallback": _task("Fb")}}
    return compiled("sfn-callback", machine, {"Ask": lambda e, c: {"asked": tok()}, "Fb": _work}, {"job": 1},
                    bounds={"sends": 2}, failures_possible=False,
                    about="waitForTaskToken Task with HeartbeatSeconds and Catch; send-task actors")


def sfn_clock() -> WorkflowSpec:
    """sfn-callback's Task with HeartbeatSeconds 3600 under a virtual clock (`clock`, bound
    `ticks`: the clock advances by 2 h, or to the next timer) and runtime
    session_timeout_seconds 10800: the Task's heartbeat timer (a delayed re-invocation)
    fires once the clock passes its deadline and records States.HeartbeatTimeout (Catch to
    Fallback), racing with a callback actor's send and with duplicates; two ticks pass the
    session's deadline, after which a re-invocation fails the session (Unum.SessionTimeout)."""
    machine = {"StartAt": "Ask", "States": {
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": ARN + "Ask", "Payload": {"token.$": "$$.Task.Token"}},
                "HeartbeatSeconds": 3600, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Fallback"}],
                "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
        "Fallback": _task("Fb")}}
    return compiled("sfn-clock", machine, {"Ask": lambda e, c: {"asked": tok()}, "Fb": _work}, {"job": 1},
                    bounds={"sends": 1, "ticks": 2}, clock=True, failures_possible=True,
                    options={"session_timeout_seconds": 10800},
                    about="callback Task with HeartbeatSeconds and session_timeout_seconds under the clock")


WAIT_UNTIL = "2023-11-14T23:13:20Z"  # the scheduler's BASE_TIME + 3600 s


def sfn_wait() -> WorkflowSpec:
    """Timed Wait states under the virtual clock (`clock`): Plan (user code; `secs` is
    1200 in some executions and 9000 in others) -> Until (Wait Timestamp, one hour after the
    session's start) -> Pause (Wait Seconds 600) -> Hold (Wait SecondsPath $.plan.secs) ->
    Ask (a `.waitForTaskToken` Task with HeartbeatSeconds 1800, Catch to Fallback) -> Done,
    with session_timeout_seconds 9000 and the platform's redelivery delays (Lambda: 60 s,
    120 s). Each Wait is a timer (a delayed invocation of the Wait's function); the timers
    race with duplicates, crashes (and the redeliveries they delay), a callback actor's send
    and two ticks. With secs 1200 the heartbeat timer fires before the session's deadline
    (Fallback); a committed secs of 9000 puts Hold's timer past it (Unum.SessionTimeout).
    Invariant (g) checks that Ask's user code never starts before max(start, Until) + 600 +
    secs, and that no redelivery precedes its delay."""
    import datetime

    def plan(e, c):
        return {"secs": 1200 + 7800 * (nd() % 2), "tag": tok()}

    until = datetime.datetime.fromisoformat(WAIT_UNTIL.replace("Z", "+00:00")).timestamp()
    machine = {"StartAt": "Plan", "States": {
        "Plan": _task("Plan", "Until", ResultPath="$.plan"),
        "Until": {"Type": "Wait", "Timestamp": WAIT_UNTIL, "Next": "Pause"},
        "Pause": {"Type": "Wait", "Seconds": 600, "Next": "Hold"},
        "Hold": {"Type": "Wait", "SecondsPath": "$.plan.secs", "Next": "Ask"},
        "Ask": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
                "Parameters": {"FunctionName": ARN + "Ask",
                               "Payload": {"token.$": "$$.Task.Token", "secs.$": "$.plan.secs"}},
                "HeartbeatSeconds": 1800, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Fallback"}],
                "Next": "Done"},
        "Done": {"Type": "Pass", "End": True},
        "Fallback": _task("Fb")}}
    return compiled("sfn-wait", machine, {"Plan": plan, "Ask": lambda e, c: {"asked": tok()}, "Fb": _work},
                    {"job": 1}, bounds={"sends": 1, "ticks": 2}, clock=True, failures_possible=True,
                    options={"session_timeout_seconds": 9000},
                    waits={"Ask": lambda event, start: max(start, until) + 600 + event["secs"]},
                    about="Wait Timestamp/Seconds/SecondsPath timers, a heartbeat and a session timeout")


def sfn_workflows() -> list[WorkflowSpec]:
    return [sfn_map(), sfn_parallel_choice(), sfn_catch(), sfn_map_loop(), sfn_parallel_retry(), sfn_timeout(),
            sfn_callback(), sfn_clock(), sfn_wait(),
            sfn_map_lanes()]
