"""GetExecutionHistory: a session's observability events (unumctl/observe/reader.py,
docs/observability.md) as Step Functions history events.

Source: the Step Functions API reference, HistoryEvent (type, id, previousEventId,
timestamp and one `<type>EventDetails` member). The mapping, as far as the two models meet:

| unumctl event / state                     | Step Functions events                                   |
|-------------------------------------------|---------------------------------------------------------|
| session start (input)                     | ExecutionStarted {input, roleArn}                        |
| a Step Functions app's execution with `states` (runtime/asl/steps.py): each step, in order | Task: TaskStateEntered {name, input}, then per attempt a retrier retried LambdaFunctionScheduled, LambdaFunctionStarted, LambdaFunctionFailed {error, cause}, then for the last attempt LambdaFunctionScheduled {resource: the Lambda ARN, input: the resolved Parameters}, LambdaFunctionStarted, LambdaFunctionSucceeded {output: the function's result, before ResultSelector / ResultPath} (LambdaFunctionFailed {error, cause} when it failed), TaskStateExited {name, output}; a Task of a service integration likewise with TaskScheduled {resourceType, resource, region, parameters: the resolved Parameters}, TaskStarted, TaskSucceeded / TaskFailed; Pass, Choice, Wait, Succeed: <Type>StateEntered {name, input}, <Type>StateExited {name, output}; Fail: FailStateEntered; Map/Parallel fan-out: <Type>StateEntered, <Type>StateStarted (Map: {length}); its join: <Type>StateSucceeded, <Type>StateExited {name, output} |
| the first step of a Map iteration (an invocation `-UnumIndex-i` in the Map's iterator) and its end | MapIterationStarted {name, index}, MapIterationSucceeded / MapIterationFailed {name, index} |
| first `ran` or `adopted` of an invocation without `states` | TaskStateEntered {name, input}, LambdaFunctionScheduled {resource, input}, LambdaFunctionStarted, LambdaFunctionSucceeded {output}, TaskStateExited {name, output} |
| `failed` (the committed outcome is an error) | TaskStateEntered, LambdaFunctionScheduled, LambdaFunctionStarted, LambdaFunctionFailed {error, cause} |
| first `suspended` (waits for a task token)  | TaskStateEntered, TaskSubmitted {resource, resourceType "lambda"} |
| `gave_up` (platform retries exhausted)    | LambdaFunctionFailed {error, cause}, or LambdaFunctionTimedOut for Unum.Timeout |
| an execution that FAILED with Map/Parallel states started and not joined | MapStateFailed / ParallelStateFailed for each, innermost first, before ExecutionFailed |
| session end                               | ExecutionSucceeded {output} / ExecutionFailed / ExecutionAborted / ExecutionTimedOut {error, cause}; a cause's paths into the local bundle copies name the user's source files (unumctl.failure.source_path) |

Without `states` (history recorded before them, or an app that is not a state machine),
`name` is the invocation's function (named after the Task state, docs/stepfunctions.md).
Unum's own events that AWS does not show (dropped duplicates, redeliveries, injected faults)
are left out: `unumctl history` shows them. Every details member with `input` or `output`
has `inputDetails` / `outputDetails` {truncated: false} (HistoryEventExecutionDataDetails:
"Always false for API calls"). Timestamps are Unix seconds, as the JSON
protocol carries them.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from runtime.asl.arns import states_arn_prefix
from runtime.asl.steps import expand

from ..failure import source_path
from .shapes import json_text

__all__ = ["sfn_history_events"]

_INDEX = re.compile(r"-UnumIndex-([0-9@.]+)")
_INTEGRATION = re.compile(r"arn:[a-z-]+:states:::(?!lambda:invoke)")


def _text(value: Any) -> str | None:
    return None if value is None else json_text(value)


def lambda_arn(resource: str) -> str:
    """The Lambda ARN of a Task's function: `resource` when it is one, else
    `arn:<partition>:lambda:<region>:<account>:function:<name>` in serve's region and account
    (runtime.asl.arns.states_arn_prefix)."""
    if resource.startswith("arn:"):
        return resource
    _, partition, _, region, account = states_arn_prefix().split(":")
    return f"arn:{partition}:lambda:{region}:{account}:function:{resource}"


def _iteration(instance: str, scope: str) -> tuple[str, int] | None:
    """(Map state name, index) when `scope` is a Map's iterator and `instance` is one of
    its branches (`-UnumIndex-i.j`, the innermost index last), else None."""
    last = scope.rpartition("/")[2]
    m = _INDEX.search(instance)
    if not last or "#" in last or m is None:
        return None
    try:
        return last, int(m.group(1).split(".")[-1].split("@")[0])
    except ValueError:
        return None


def sfn_history_events(desc: dict[str, Any], events: list[dict[str, Any]], role_arn: str,
               include_data: bool = True) -> list[dict[str, Any]]:
    """The HistoryEvent list of one execution, oldest first.

    `desc`: HistoryReader.describe of the session (status, start, end, input, output or
    error/cause); `events`: HistoryReader.history (runtime.ports.Events fields, with
    `states` from runtime.asl.steps for a Step Functions app); `include_data`: False drops
    input/output (GetExecutionHistory includeExecutionData)."""
    out: list[dict[str, Any]] = []

    def add(t: float | None, type_: str, details_key: str | None = None, **details: Any) -> None:
        ev: dict[str, Any] = {"timestamp": t or desc.get("start") or 0, "type": type_, "id": len(out) + 1,
                              "previousEventId": len(out)}
        given = {k for k, v in details.items() if v is not None}
        if details_key is not None:
            if not include_data:
                details = {k: v for k, v in details.items() if k not in ("input", "output")}
            ev[details_key] = {k: v for k, v in details.items() if v is not None}
            for field in ("input", "output"):  # HistoryEventExecutionDataDetails: false for API calls
                if field in ev[details_key] or (not include_data and field in given):
                    ev[details_key][f"{field}Details"] = {"truncated": False}
        out.append(ev)

    # the states of each invocation, from its first execution that ran its user code
    states_of: dict[str, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("kind") in ("ran", "failed") and e.get("states") and e.get("instance") not in states_of:
            states_of[e["instance"]] = expand(e["states"], t0=e.get("t0"), **{k: e[k] for k in ("input", "output") if k in e})
    iterations: set[tuple[str, str, int]] = set()
    opened: list[tuple[str, str, str]] = []  # the Map/Parallel states started and not joined

    def states(e: dict[str, Any], steps: list[dict[str, Any]]) -> None:
        inst = e.get("instance") or "?"
        for k, s in enumerate(steps):
            name, type_, t = s.get("state"), s.get("type"), s.get("t") or e.get("t0")
            t_out = steps[k + 1].get("t") if k + 1 < len(steps) else (e.get("t1") or t)
            scope = s.get("scope", "")
            inp, outp = _text(s.get("in")), _text(s.get("out"))
            it = _iteration(inst, scope) if scope else None
            if it is not None and (scope, *it) not in iterations:
                iterations.add((scope, *it))
                add(t, "MapIterationStarted", "mapIterationStartedEventDetails", name=it[0], index=it[1])
            failed = "error" in s and not s.get("caught")
            if type_ == "Task":
                add(t, "TaskStateEntered", "stateEnteredEventDetails", name=name, input=inp)
                res = str(s.get("resource") or "")
                params = _text(s["params"]) if "params" in s else inp  # the resolved Parameters
                # an attempt's *Scheduled and *Started: (type, details key, details) given its parameters
                sched: Callable[[str | None], list[tuple[str, str | None, dict[str, Any]]]]
                if _INTEGRATION.match(res):  # arn:aws:states:::<service>:<action>[.<pattern>]
                    service, _, action = res.split(":::", 1)[1].partition(":")
                    what = {"resourceType": service, "resource": action}
                    region = states_arn_prefix().split(":")[3]

                    def sched(p: str | None, what: dict[str, Any] = what, region: str = region) -> list:
                        return [("TaskScheduled", "taskScheduledEventDetails",
                                 {**what, "region": region, "parameters": p or "{}"}),
                                ("TaskStarted", "taskStartedEventDetails", what)]
                    failed_, ok = ("TaskFailed", "taskFailedEventDetails", what), \
                        ("TaskSucceeded", "taskSucceededEventDetails", what)
                else:
                    arn = lambda_arn(res or str(e.get("function") or "?"))

                    def sched(p: str | None, arn: str = arn) -> list:
                        return [("LambdaFunctionScheduled", "lambdaFunctionScheduledEventDetails",
                                 {"resource": arn, "input": p}), ("LambdaFunctionStarted", None, {})]
                    failed_, ok = ("LambdaFunctionFailed", "lambdaFunctionFailedEventDetails", {}), \
                        ("LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails", {})
                for r in s.get("retries") or []:  # each retried attempt: scheduled, started, failed
                    if isinstance(r, dict):
                        for type_k, key_k, det in sched(_text(r["params"]) if "params" in r else inp):
                            add(r.get("at") or t, type_k, key_k, **det)
                        add(r.get("end") or t, failed_[0], failed_[1], **failed_[2], error=r.get("error"),
                            cause=source_path(r["cause"]) if isinstance(r.get("cause"), str) else None)
                for type_k, key_k, det in sched(params):
                    add(s.get("at") or t, type_k, key_k, **det)
                if "error" in s:
                    add(t_out, failed_[0], failed_[1], **failed_[2], error=s.get("error"),
                        cause=source_path(s["cause"]) if isinstance(s.get("cause"), str) else None)
                else:  # the resource's full response (TaskSucceededEventDetails `output`)
                    add(t_out, ok[0], ok[1], **ok[2], output=_text(s["result"]) if "result" in s else outp)
                if not failed:
                    add(t_out, "TaskStateExited", "stateExitedEventDetails", name=name, output=outp)
            elif type_ in ("Map", "Parallel"):
                key = (type_, scope, str(name))
                if s.get("phase") == "start":
                    opened.append(key)
                elif key in opened:
                    opened.reverse()
                    opened.remove(key)  # the latest start of this state
                    opened.reverse()
                if s.get("phase") == "start":
                    add(t, f"{type_}StateEntered", "stateEnteredEventDetails", name=name, input=inp)
                    if type_ == "Map":
                        add(t, "MapStateStarted", "mapStateStartedEventDetails", length=s.get("items"))
                        if isinstance(s.get("maprun"), dict):  # a Distributed Map
                            add(t, "MapRunStarted", "mapRunStartedEventDetails", mapRunArn=s["maprun"].get("arn"))
                    else:
                        add(t, "ParallelStateStarted")
                else:
                    if isinstance(s.get("maprun"), dict):
                        add(t, "MapRunSucceeded")
                    add(t, f"{type_}StateSucceeded")
                    add(t, f"{type_}StateExited", "stateExitedEventDetails", name=name, output=outp)
            elif type_ == "Fail":
                add(t, "FailStateEntered", "stateEnteredEventDetails", name=name, input=inp)
            else:  # Pass, Choice, Wait, Succeed
                add(t, f"{type_}StateEntered", "stateEnteredEventDetails", name=name, input=inp)
                if not failed:
                    add(t_out, f"{type_}StateExited", "stateExitedEventDetails", name=name, output=outp)
            if it is not None and (failed or type_ == "Fail"):
                add(t_out, "MapIterationFailed", "mapIterationFailedEventDetails", name=it[0], index=it[1])
            elif it is not None and "next" not in s and s.get("phase") != "start" and type_ != "Choice":
                add(t_out, "MapIterationSucceeded", "mapIterationSucceededEventDetails", name=it[0], index=it[1])

    add(desc.get("start"), "ExecutionStarted", "executionStartedEventDetails",
        input=_text(desc.get("input")), roleArn=role_arn)
    seen: set[tuple[str, str]] = set()
    for e in events:
        kind, fn, inst = e.get("kind"), e.get("function") or "?", e.get("instance") or "?"
        t0, t1 = e.get("t0"), e.get("t1") or e.get("t0")
        inp, outp = _text(e.get("input")), _text(e.get("output"))
        if kind in ("ran", "adopted", "failed") and inst in states_of:
            if (inst, "run") not in seen:
                seen.add((inst, "run"))
                states(e, states_of[inst])
            continue
        if kind in ("ran", "adopted", "failed"):
            if (inst, "run") in seen:
                continue
            seen.add((inst, "run"))
            if (inst, "suspended") not in seen:
                add(t0, "TaskStateEntered", "stateEnteredEventDetails", name=fn, input=inp)
            add(t0, "LambdaFunctionScheduled", "lambdaFunctionScheduledEventDetails", resource=fn, input=inp)
            add(t0, "LambdaFunctionStarted")
            if kind == "failed":
                add(t1, "LambdaFunctionFailed", "lambdaFunctionFailedEventDetails",
                    error=e.get("error"), cause=e.get("detail"))
            else:
                add(t1, "LambdaFunctionSucceeded", "lambdaFunctionSucceededEventDetails", output=outp)
                add(t1, "TaskStateExited", "stateExitedEventDetails", name=fn, output=outp)
        elif kind == "redriven":  # runtime/redrive.py: the first delivery of a redrive
            add(t0, "ExecutionRedriven", "executionRedrivenEventDetails", redriveCount=e.get("redrive_count"))
        elif kind == "suspended" and (inst, "suspended") not in seen:
            seen.add((inst, "suspended"))
            add(t0, "TaskStateEntered", "stateEnteredEventDetails", name=fn, input=inp)
            add(t1, "TaskSubmitted", "taskSubmittedEventDetails", resource=fn, resourceType="lambda")
        elif kind == "gave_up":
            if e.get("error") == "Unum.Timeout":
                add(t0, "LambdaFunctionTimedOut", "lambdaFunctionTimedOutEventDetails",
                    error=e.get("error"), cause=e.get("detail"))
            else:
                add(t0, "LambdaFunctionFailed", "lambdaFunctionFailedEventDetails",
                    error=e.get("error"), cause=e.get("detail"))
    status, end = desc.get("status"), desc.get("end")
    if status == "SUCCEEDED":
        add(end, "ExecutionSucceeded", "executionSucceededEventDetails", output=_text(desc.get("output")))
    elif status in ("FAILED", "ABORTED", "TIMED_OUT"):
        if status == "FAILED":  # an uncaught error fails every Map/Parallel around it, innermost first
            for k in dict.fromkeys(reversed(opened)):
                add(end, f"{k[0]}StateFailed")
        type_ = {"FAILED": "ExecutionFailed", "ABORTED": "ExecutionAborted", "TIMED_OUT": "ExecutionTimedOut"}[status]
        key = {"FAILED": "executionFailedEventDetails", "ABORTED": "executionAbortedEventDetails",
               "TIMED_OUT": "executionTimedOutEventDetails"}[status]
        cause = desc.get("cause")
        add(end, type_, key, error=desc.get("error"),
            cause=source_path(cause) if isinstance(cause, str) else cause)
    return out
