"""GetExecutionHistory: a session's observability events (unumctl/observe/reader.py,
docs/observability.md) as Step Functions history events.

Source: the Step Functions API reference, HistoryEvent (type, id, previousEventId,
timestamp and one `<type>EventDetails` member). The mapping, as far as the two models meet:

| unumctl event / state                     | Step Functions events                                   |
|-------------------------------------------|---------------------------------------------------------|
| session start (input)                     | ExecutionStarted {input, roleArn}                        |
| first `ran` or `adopted` of an invocation | TaskStateEntered {name, input}, LambdaFunctionScheduled {resource, input}, LambdaFunctionStarted, LambdaFunctionSucceeded {output}, TaskStateExited {name, output} |
| `failed` (the committed outcome is an error) | TaskStateEntered, LambdaFunctionScheduled, LambdaFunctionStarted, LambdaFunctionFailed {error, cause} |
| first `suspended` (waits for a task token)  | TaskStateEntered, TaskSubmitted {resource, resourceType "lambda"} |
| `gave_up` (platform retries exhausted)    | LambdaFunctionFailed {error, cause}, or LambdaFunctionTimedOut for Unum.Timeout |
| session end                               | ExecutionSucceeded {output} / ExecutionFailed / ExecutionAborted / ExecutionTimedOut {error, cause} |

`name` is the invocation's function (for a Step Functions app: the Task state's function,
named after the state, docs/stepfunctions.md); Unum's own events that AWS does not show
(dropped duplicates, redeliveries, injected faults) are left out: `unumctl history` shows
them. Timestamps are Unix seconds, as the JSON protocol carries them.
"""

from __future__ import annotations

from typing import Any

from .shapes import json_text


def _text(value: Any) -> str | None:
    return None if value is None else json_text(value)


def aws_events(desc: dict[str, Any], events: list[dict[str, Any]], role_arn: str,
               include_data: bool = True) -> list[dict[str, Any]]:
    """The HistoryEvent list of one execution, oldest first.

    `desc`: HistoryReader.describe of the session (status, start, end, input, output or
    error/cause); `events`: HistoryReader.history (runtime.ports.Events fields);
    `include_data`: False drops input/output (GetExecutionHistory includeExecutionData)."""
    out: list[dict[str, Any]] = []

    def add(t: float | None, type_: str, details_key: str | None = None, **details: Any) -> None:
        ev: dict[str, Any] = {"timestamp": t or desc.get("start") or 0, "type": type_, "id": len(out) + 1,
                              "previousEventId": len(out)}
        if details_key is not None:
            if not include_data:
                details = {k: v for k, v in details.items() if k not in ("input", "output")}
            ev[details_key] = {k: v for k, v in details.items() if v is not None}
        out.append(ev)

    add(desc.get("start"), "ExecutionStarted", "executionStartedEventDetails",
        input=_text(desc.get("input")), roleArn=role_arn)
    seen: set[tuple[str, str]] = set()
    for e in events:
        kind, fn, inst = e.get("kind"), e.get("function") or "?", e.get("instance") or "?"
        t0, t1 = e.get("t0"), e.get("t1") or e.get("t0")
        inp, outp = _text(e.get("input")), _text(e.get("output"))
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
        type_ = {"FAILED": "ExecutionFailed", "ABORTED": "ExecutionAborted", "TIMED_OUT": "ExecutionTimedOut"}[status]
        key = {"FAILED": "executionFailedEventDetails", "ABORTED": "executionAbortedEventDetails",
               "TIMED_OUT": "executionTimedOutEventDetails"}[status]
        add(end, type_, key, error=desc.get("error"), cause=desc.get("cause"))
    return out
