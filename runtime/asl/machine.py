"""The ASL state interpreter used by compiled functions.

Source: ASL spec (https://states-language.net/spec.html) sections "States", "Input and
Output Processing", "Errors", "Task", "Pass", "Choice", "Wait", "Succeed", "Fail",
"Parallel", "Map", and the AWS developer guide for Lambda task results and the context
object. The compiler (unumctl.asl) cuts a state machine into functions; at run time each
function uses a `Machine` to:

* `walk` from a state through Pass/Choice/Wait/Succeed/Fail states and integration Tasks
  (runtime.asl.integrations: DynamoDB, SNS, SQS, EventBridge, aws-sdk; no invocation) until
  it reaches a Lambda Task, Map or Parallel state (a `Stop`) or the end of its scope;
* `run_task` one Task state (InputPath, Parameters, the call, ResultSelector, ResultPath,
  OutputPath, Retry and Catch);
* `map_items` / `finish` the fan-out and the join of a Map or Parallel state;
* `run_inline` a whole scope in-process (used for a Map/Parallel state whose branches hold
  only Pass/Choice/Succeed/Fail states, or no Task under a Retry/Catch, and by unit tests).

A scope is addressed by a string: "" is the top level, "<scope>/<MapState>" a Map's
iterator, "<scope>/<ParallelState>#<k>" branch k of a Parallel state.

Both query languages are interpreted per state (`QueryLanguage` of the state, else of the
machine): JSONPath (InputPath/Parameters/ResultSelector/ResultPath/OutputPath) and JSONata
(Arguments/Output/Items/Condition and `{% %}` fields, via runtime.asl.jsonata). Workflow
variables (AWS developer guide "Passing data between states with variables") are a plain
dict the caller passes as `variables` and that `Assign` updates in place; the caller (the
wrapper) carries it between functions inside committed values. JSONPath paths read them
through the context object's `variables` attribute (`$name` references, runtime.asl.paths).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from . import choice, distributed, intrinsics, jsonata, mocks, paths
from .arns import DEFAULT_STATES_ARN, role_arn
from .attempts import call_with_timeout, replay as _replay_outcome
from .errors import AslError, matches, next_retry
from .integrations import lambda_, registry
from .limits import PAYLOAD_LIMIT, limited as _limit  # noqa: F401  (PAYLOAD_LIMIT re-exported)
from .steps import StepLog, small

__all__ = ["LAMBDA_INVOKE", "Machine", "WAIT_FOR_TOKEN", "iso", "lambda_cause", "scope_start", "scope_states"]

LAMBDA_INVOKE = lambda_.LAMBDA_INVOKE
WAIT_FOR_TOKEN = ".waitForTaskToken"  # Resource suffix of a callback Task
MAX_TIMESTAMP_AHEAD = 2 ** 31  # seconds; AWS rejects waits further in the future


@dataclass
class Stop:
    """Where a walk stopped: kind is 'Task', 'Map', 'Parallel' or 'End'. For 'End', `value`
    is the scope's output; otherwise it is the raw input of state `name` in `scope`."""

    kind: str
    scope: str
    name: str | None
    value: Any


def iso(t: float) -> str:
    """Unix seconds -> ISO 8601 UTC with milliseconds, as the context object shows times."""
    return _dt.datetime.fromtimestamp(t, _dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def scope_states(definition: dict[str, Any], scope: str) -> dict[str, Any]:
    """The `States` mapping of `scope` (see module docstring); KeyError when absent."""
    states = definition["States"]
    if not scope:
        return states
    for part in scope.strip("/").split("/"):
        name, _, branch = part.partition("#")
        st = states[name]
        if st["Type"] == "Map":
            states = (st.get("ItemProcessor") or st.get("Iterator"))["States"]
        else:
            states = st["Branches"][int(branch)]["States"]
    return states


def scope_start(definition: dict[str, Any], scope: str) -> str:
    """The StartAt of `scope`."""
    if not scope:
        return definition["StartAt"]
    parent, _, last = scope.rpartition("/")
    name, _, branch = last.partition("#")
    st = scope_states(definition, parent)[name]
    if st["Type"] == "Map":
        return (st.get("ItemProcessor") or st.get("Iterator"))["StartAt"]
    return st["Branches"][int(branch)]["StartAt"]


_RUNTIME_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # runtime/ (or a bundle's copy)


def lambda_cause(error_type: str, message: str, trace: list[str] | None = None) -> str:
    """The Cause string of a Lambda function error, as Lambda reports a Python exception:
    {errorMessage, errorType, requestId, stackTrace}, the stack trace holding the user's
    frames only (as Lambda's leaves its runtime's out): the frames of this runtime package
    are dropped, unless every frame is one (an error the runtime raised itself)."""
    lines = [ln.rstrip("\n") for ln in (trace or []) if ln.startswith("  File")]
    user = [ln for ln in lines if not ln.startswith(f'  File "{_RUNTIME_DIR}')]
    lines = user or lines
    return json.dumps({"errorMessage": message, "errorType": error_type,
                       "requestId": str(uuid.uuid4()), "stackTrace": lines})


class Machine:
    """Interprets states of `definition` (a parsed state machine).

    `exec_info` is {"Id", "Name", "StartTime" (ISO), "Input" (callable or value),
    "StateMachine": {"Id", "Name"}[, "Invocation" (the compiled function's instance name,
    which names nested executions idempotently)]}; `clock()` returns Unix seconds; `sleep(s)` waits
    (a virtual clock passes a sleep that only advances `clock`)."""

    def __init__(self, definition: dict[str, Any], exec_info: dict[str, Any],
                 clock: Callable[[], float], sleep: Callable[[float], None],
                 start_time: float | None = None):
        self.definition = definition
        self.exec_info = exec_info
        self.clock = clock
        self.sleep = sleep
        self.start_time = start_time if start_time is not None else clock()
        self.transitions = 0  # states entered, retries included (what Step Functions bills)
        self.assign_log: list[tuple[str | None, dict[str, Any]]] | None = None
        # the states walked and run (runtime.asl.steps), or None: not recorded
        self.steps: StepLog | None = None
        self._tlock = threading.Lock()
        self._task_runs: dict[tuple[str, str], int] = {}  # (state, input digest) -> runs so far
        # (scope, state) of the lambda:invoke Tasks of functions outside the app (the
        # compiler's `External`): run in place through Lambda's Invoke API
        self.external: frozenset[tuple[str, str]] = frozenset()
        # (scope, Map state) -> the Map Run `conclude` ended, recorded with the state's end step
        self.map_runs: dict[tuple[str, str], dict[str, Any]] = {}

    def _enter(self) -> None:
        with self._tlock:
            self.transitions += 1

    def _step(self, scope: str, name: str, type_: str, **fields: Any) -> dict[str, Any] | None:
        """Record that state `name` of `scope` was entered (runtime.asl.steps), when
        recording; returns the step to complete, or None."""
        if self.steps is None:
            return None
        return self.steps.add(name, type_, scope, self.clock(), **fields)

    # ------------------------------------------------------------------ helpers
    def context(self, name: str | None, retry_count: int | None = None,
                item: tuple[int, Any] | None = None, token: str | None = None) -> dict[str, Any]:
        """The context object `$$` for state `name` (ASL spec "Context Object"); `token` is
        the `$$.Task.Token` of a callback Task's attempt."""
        info = self.exec_info
        inp = info.get("Input")
        ctx: dict[str, Any] = {
            "Execution": {"Id": info.get("Id"), "Name": info.get("Name"),
                          "StartTime": info.get("StartTime"),
                          "RoleArn": info.get("RoleArn", role_arn(DEFAULT_STATES_ARN)), "RedriveCount": 0,
                          "Input": inp() if callable(inp) else inp},
            "StateMachine": info.get("StateMachine", {}),
            "State": {"Name": name, "EnteredTime": iso(self.clock())},
        }
        if retry_count is not None:
            ctx["State"]["RetryCount"] = retry_count
        if item is not None:
            ctx["Map"] = {"Item": {"Index": item[0], "Value": item[1]}}
        if token is not None:
            ctx["Task"] = {"Token": token}
        return ctx

    def _lazy_ctx(self, name, retry_count=None, item=None, variables=None, token=None):
        ctx = _LazyContext(lambda: self.context(name, retry_count, item, token))
        ctx.variables = variables if variables is not None else {}  # read by paths.read
        return ctx

    # ------------------------------------------------------------------ query language
    def is_jsonata(self, st: dict[str, Any]) -> bool:
        """True when state `st` uses JSONata: its own `QueryLanguage`, else the machine's
        (ASL spec "QueryLanguage"; the default is JSONPath)."""
        return (st.get("QueryLanguage") or self.definition.get("QueryLanguage")) == "JSONata"

    def _where(self, name: str | None, field: str) -> jsonata.Where:
        return jsonata.Where(name, field, 2 * max(1, self.transitions))

    def _jx(self, template: Any, name: str | None, field: str, states: dict[str, Any],
            variables: dict[str, Any] | None) -> Any:
        """Evaluate the JSONata template of field `field` (every `{% %}` string in it)."""
        return jsonata.render(template, states, variables, self._where(name, field))

    @staticmethod
    def _states(value: Any, ctx: Any, **more: Any) -> dict[str, Any]:
        """The `$states` binding: input, context (built on use), plus result/errorOutput."""
        out = {"input": value, "context": (lambda: ctx.materialize())}
        out.update(more)
        return out

    def _assignments(self, holder: dict[str, Any], name: str | None, jsonata_state: bool,
                     variables: dict[str, Any] | None, data: Any = None, ctx: Any = None,
                     states: dict[str, Any] | None = None) -> dict[str, Any]:
        """The values of `holder`'s `Assign` (a state, Choice rule or catcher), all evaluated
        against the current variables before any takes effect (AWS developer guide
        "Passing data between states with variables"). JSONPath: `.$` keys read `data`
        (the state's result), `$$` and `$name`; JSONata: `{% %}` strings with `$states`."""
        spec = holder.get("Assign")
        if not spec:
            return {}
        if jsonata_state:
            out = self._jx(spec, name, "Assign", states or {}, variables)
        else:
            out = self._template(spec, data, ctx)
        return out

    def _commit(self, variables: dict[str, Any] | None, new: dict[str, Any],
                name: str | None = None) -> None:
        """Make the evaluated assignments `new` of state `name` take effect; with
        `assign_log` set (a list), also record (name, new) there (the conformance runner's
        `assigned_variables` check)."""
        if new:
            if variables is not None:
                variables.update(new)
            if self.assign_log is not None:
                self.assign_log.append((name, new))

    def _template(self, template, data, ctx):
        return paths.render(template, data, ctx, intrinsics.evaluate)

    def _input(self, st, value, ctx, params_key="Parameters"):
        """InputPath then Parameters (ASL "Input and Output Processing")."""
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        if params_key in st:
            eff = self._template(st[params_key], eff, ctx)
        return eff

    def _select(self, st, result, ctx):
        """ResultSelector."""
        if "ResultSelector" in st:
            result = self._template(st["ResultSelector"], result, ctx)
        return result

    def _place(self, st, raw, result, ctx):
        """ResultPath, OutputPath."""
        rp = st.get("ResultPath", "$")
        out = raw if rp is None else paths.write(rp, raw, result)
        op = st.get("OutputPath", "$")
        return {} if op is None else paths.read(op, out, ctx)

    def _finish_state(self, st, name, value, result, ctx, variables, jsonata_state):
        """A state's output from its raw input `value` and its `result` (after Parameters or
        the call): JSONata `Output` (default `$states.result`) or JSONPath ResultSelector,
        ResultPath, OutputPath; `Assign` is evaluated first and committed last."""
        if jsonata_state:
            states = self._states(value, ctx, result=result)
            new = self._assignments(st, name, True, variables, states=states)
            out = self._jx(st["Output"], name, "Output", states, variables) if "Output" in st else result
        else:
            result = self._select(st, result, ctx)
            new = self._assignments(st, name, False, variables, result, ctx)
            out = self._place(st, value, result, ctx)
        self._commit(variables, new, name)
        return out

    # ------------------------------------------------------------------ walking
    def walk(self, scope: str, name: str, value: Any, stop_at_wait: bool = False,
             waited: bool = False, variables: dict[str, Any] | None = None,
             stop_at_callback: bool = False) -> Stop:
        """Run non-invoking states from `name` until a Task/Map/Parallel or the scope's end;
        an integration Task (not Lambda) runs here with its Retry/Catch, as Pass does.

        With `stop_at_wait`, a Wait state whose delay is positive is a stop too (kind
        'Wait', so that the caller can defer the continuation with a timer); `waited` says
        the wait of state `name` has already elapsed (the timer fired). `variables` (the
        workflow variables visible in this scope) is updated in place by `Assign`.
        With `stop_at_callback`, an integration Task with `.waitForTaskToken` is a stop
        (kind 'Task': its own compiled function runs it with the journal a callback needs,
        unumctl/asl/compiler.py); without it such a Task fails with States.Runtime unless
        mocked.
        Raises AslError for a Fail state or a runtime error (uncaught by construction: only
        Task, Map and Parallel have Catch), naming the state that failed (AslError.at)."""
        at = [name]
        try:
            return self._walk(scope, name, value, stop_at_wait, waited, variables, stop_at_callback, at)
        except AslError as err:
            err.at(at[0])
            raise

    def _walk(self, scope: str, name: str, value: Any, stop_at_wait: bool, waited: bool,
              variables: dict[str, Any] | None, stop_at_callback: bool, at: list[str]) -> Stop:
        """walk(), with `at`[0] the state being run."""
        if variables is None:
            variables = {}
        states = scope_states(self.definition, scope)
        first = True
        while True:
            at[0] = name
            st = states[name]
            t = st["Type"]
            in_place = registry.inline(st.get("Resource")) or (scope, name) in self.external
            if t == "Task" and in_place and not (
                    stop_at_callback and (st["Resource"].endswith(WAIT_FOR_TOKEN)
                                          or registry.suspends(registry.find(st["Resource"])))):
                # an integration Task runs here, as Pass and Choice do (no invocation)
                first = False
                nxt, value = self.run_task(scope, name, value, _no_function, variables)
                if nxt is None:
                    return Stop("End", scope, None, value)
                name = nxt
                continue
            if t in ("Task", "Map", "Parallel"):
                return Stop(t, scope, name, value)
            skip_wait = first and waited
            first = False
            if t == "Wait" and stop_at_wait and not skip_wait and \
                    self.wait_delay(st, value, self._lazy_ctx(name, variables=variables),
                                    variables=variables, name=name) > 0:
                return Stop("Wait", scope, name, value)
            if not skip_wait:
                self._enter()
            step = self._step(scope, name, t, **{"in": value})
            ctx = self._lazy_ctx(name, variables=variables)
            ja = self.is_jsonata(st)
            if t == "Pass":
                if ja:
                    result = st["Result"] if "Result" in st else value
                    value = _limit(self._finish_state(st, name, value, result, ctx, variables, True))
                else:
                    eff = self._input(st, value, ctx)
                    result = st["Result"] if "Result" in st else eff
                    new = self._assignments(st, name, False, variables, result, ctx)
                    value = _limit(self._place(st, value, result, ctx))
                    self._commit(variables, new, name)
            elif t == "Wait":
                if not skip_wait:
                    delay = self.wait_delay(st, value, ctx, variables=variables, name=name)
                    if delay > 0:
                        self.sleep(delay)
                value = self._passthrough(st, name, value, ctx, variables, ja)
            elif t == "Choice":
                value, nxt_, rule = self._choice(st, name, value, ctx, variables, ja)
                if step is not None:
                    StepLog.finish(step, out=value, next=nxt_, rule=rule)
                name = nxt_
                continue
            elif t == "Succeed":
                if ja:
                    states_ = self._states(value, ctx)
                    out = self._jx(st["Output"], name, "Output", states_, variables) \
                        if "Output" in st else value
                else:
                    ip = st.get("InputPath", "$")
                    eff = {} if ip is None else paths.read(ip, value, ctx)
                    op = st.get("OutputPath", "$")
                    out = {} if op is None else paths.read(op, eff, ctx)
                if step is not None:
                    StepLog.finish(step, out=out)
                return Stop("End", scope, None, out)
            elif t == "Fail":
                error = st.get("Error")
                cause = st.get("Cause")
                if ja:
                    states_ = self._states(value, ctx)
                    if jsonata.is_expr(error):
                        error = self._typed(st["Error"], name, "Error", states_, variables, str)
                    if jsonata.is_expr(cause):
                        cause = self._typed(st["Cause"], name, "Cause", states_, variables, str)
                if "ErrorPath" in st:
                    error = self._path_or_intrinsic(st["ErrorPath"], value, ctx)
                if "CausePath" in st:
                    cause = self._path_or_intrinsic(st["CausePath"], value, ctx)
                for field, v in (("ErrorPath", error), ("CausePath", cause)):
                    if field in st and not isinstance(v, str):
                        raise AslError("States.Runtime", f"The {field} {st[field]!r} of state "
                                       f"{name!r} must select a string, got {_kind(v)}")
                if step is not None:
                    StepLog.finish(step, error=error, cause=cause)
                raise AslError(error, cause)
            else:
                raise AslError("States.Runtime", f"state {name!r}: unsupported Type {t!r}")
            if step is not None:
                StepLog.finish(step, out=value, next=None if st.get("End") else st["Next"])
            if st.get("End"):
                return Stop("End", scope, None, value)
            name = st["Next"]

    def _typed(self, expr, name, field, states, variables, kind):
        """Evaluate `{% %}` `expr` of `field`; the result must be of Python type `kind`
        (str, list, bool, ...) else States.QueryEvaluationError worded like AWS."""
        out = self._jx(expr, name, field, states, variables)
        if not isinstance(out, kind) or (kind is not bool and isinstance(out, bool)):
            want = {str: "string", list: "array", bool: "boolean"}.get(kind, kind.__name__)
            raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, field).prefix()} The JSONata "
                           f"expression '{jsonata.body(expr)}' specified for the field '{field}' "
                           f"returned an unexpected result type. Expected '{want}', but was "
                           f"'{jsonata.type_name(out)}' for value: {jsonata.short_json(out)}")
        return out

    def _passthrough(self, st, name, value, ctx, variables, ja):
        """Output of a Wait state (and of a Choice without a matching rule's Output):
        JSONata `Output` (default: the input) or InputPath then OutputPath; `Assign`
        (JSONPath: on the effective input)."""
        if ja:
            states_ = self._states(value, ctx)
            new = self._assignments(st, name, True, variables, states=states_)
            out = self._jx(st["Output"], name, "Output", states_, variables) if "Output" in st else value
        else:
            ip = st.get("InputPath", "$")
            eff = {} if ip is None else paths.read(ip, value, ctx)
            new = self._assignments(st, name, False, variables, eff, ctx)
            op = st.get("OutputPath", "$")
            out = {} if op is None else paths.read(op, eff, ctx)
        self._commit(variables, new, name)
        return out

    def _choice(self, st, name, value, ctx, variables, ja):
        """Choice: the first matching rule (JSONPath rules or JSONata `Condition`) gives Next,
        and its own Assign/Output; no match takes Default with the state's Assign/Output.
        Returns (output, next state, the matching rule's index or "Default")."""
        index: int | str
        if ja:
            states_ = self._states(value, ctx)
            chosen, index = None, "Default"
            for i, rule in enumerate(st.get("Choices", [])):
                cond = rule.get("Condition")
                if jsonata.is_expr(cond):
                    cond = self._jx(cond, name, "Condition", states_, variables)
                if not isinstance(cond, bool):
                    src = jsonata.body(rule["Condition"]) if jsonata.is_expr(rule.get("Condition")) \
                        else jsonata.short_json(rule.get("Condition"))
                    raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'Condition').prefix()} "
                                   f"The JSONata expression '{src}' specified for the field "
                                   "'Condition' returned an unexpected result type. Expected "
                                   f"'boolean', but was '{jsonata.type_name(cond)}' for value: "
                                   f"{jsonata.short_json(cond)}")
                if cond:
                    chosen, index = rule, i
                    break
            holder = chosen if chosen is not None else st
            nxt = chosen["Next"] if chosen is not None else st.get("Default")
            if nxt is None:
                raise AslError("States.NoChoiceMatched", f"No Matches! in state '{name}'")
            new = self._assignments(holder, name, True, variables, states=states_)
            out = self._jx(holder["Output"], name, "Output", states_, variables) \
                if "Output" in holder else value
            self._commit(variables, new, name)
            return out, nxt, index
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        chosen, index = None, "Default"
        for i, rule in enumerate(st.get("Choices", [])):
            if choice.evaluate(rule, eff, ctx):
                chosen, index = rule, i
                break
        nxt = chosen["Next"] if chosen is not None else st.get("Default")
        if nxt is None:
            raise AslError("States.NoChoiceMatched", f"No Matches! in state '{name}'")
        new = self._assignments(chosen if chosen is not None else st, name, False, variables, eff, ctx)
        op = st.get("OutputPath", "$")
        out = {} if op is None else paths.read(op, eff, ctx)
        self._commit(variables, new, name)
        return out, nxt, index

    def _path_or_intrinsic(self, expr, value, ctx):
        if paths.is_path(expr):
            return paths.read(expr, value, ctx)
        return intrinsics.evaluate(expr, value, ctx)

    def wait_delay(self, st, value, ctx, variables: dict[str, Any] | None = None,
                   name: str | None = None) -> float:
        """Seconds Wait state `st` waits from now (Seconds, SecondsPath, Timestamp,
        TimestampPath; JSONata `{% %}` Seconds/Timestamp); raises AslError('States.Runtime')
        for bad values (States.QueryEvaluationError for JSONata ones)."""
        now = self.clock()
        if variables is None:
            variables = getattr(ctx, "variables", None)
        ja = self.is_jsonata(st)
        if ja and "Seconds" in st and jsonata.is_expr(st["Seconds"]):
            v = self._jx(st["Seconds"], name, "Seconds", self._states(value, ctx), variables)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'Seconds').prefix()} The "
                               f"JSONata expression '{jsonata.body(st['Seconds'])}' specified for "
                               "the field 'Seconds' returned an unexpected result type. Expected "
                               f"'integer', but was '{jsonata.type_name(v)}' for value: "
                               f"{jsonata.short_json(v)}")
            return float(v)
        if "Seconds" in st:
            delay = float(st["Seconds"])
        elif "SecondsPath" in st:
            v = paths.read(st["SecondsPath"], value, ctx)
            # AWS reads SecondsPath as a long: a float, string, boolean... is States.Runtime
            if not isinstance(v, int) or isinstance(v, bool):
                raise AslError("States.Runtime", "The SecondsPath parameter cannot be parsed as a "
                               f"long value: {st['SecondsPath']} == {json.dumps(v)}")
            if v < 0:
                raise AslError("States.Runtime", "The SecondsPath parameter references a negative "
                               f"value: {st['SecondsPath']} == {v}")
            delay = float(v)
        else:
            if ja and jsonata.is_expr(st.get("Timestamp")):
                ts = self._jx(st["Timestamp"], name, "Timestamp", self._states(value, ctx), variables)
            else:
                ts = st.get("Timestamp") if "Timestamp" in st else paths.read(st["TimestampPath"], value, ctx)
            when = choice.parse_timestamp(ts)
            if when is None:
                if ja:
                    raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'Timestamp').prefix()} "
                                   "The Timestamp field cannot be parsed as an ISO-8601 extended "
                                   f"offset date-time format string: {ts}")
                raise AslError("States.Runtime", f"The TimestampPath parameter does not reference a "
                               f"valid ISO-8601 extended offset date-time format string: {ts!r}")
            target = when.timestamp()
            if target - self.start_time > MAX_TIMESTAMP_AHEAD:
                raise AslError("States.Runtime", f"Wait Timestamp {ts!r} is more than 2^31 seconds "
                               "after the execution start")
            delay = max(0.0, target - now)
        return delay

    # ------------------------------------------------------------------ Task
    def task_input(self, scope: str, name: str, value: Any,
                   variables: dict[str, Any] | None = None, retry_count: int = 0,
                   token: str | None = None) -> Any:
        """The effective input of Task `name`: JSONata `Arguments` (default: the input), or
        InputPath and Parameters (`$$.State.RetryCount` = `retry_count`, `$$.Task.Token` =
        `token` for a callback Task)."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, retry_count, variables=variables, token=token)
        if self.is_jsonata(st):
            if "Arguments" not in st:
                return value
            return self._jx(st["Arguments"], name, "Arguments", self._states(value, ctx), variables)
        return self._input(st, value, ctx)

    def run_task(self, scope: str, name: str, value: Any,
                 invoke: Callable[[str, Any], Any],
                 variables: dict[str, Any] | None = None,
                 attempts: Any = None) -> tuple[str | None, Any]:
        """Run Task `name` on raw input `value`: the call goes to the integration the Resource
        names (runtime.asl.integrations; `invoke(resource_or_function, event)` calls the
        app's Lambda function and raises AslError for its errors), or, when the selected
        Step Functions Local test case mocks this state, to its mocked response
        (runtime.asl.mocks). Returns (next state or None
        at End, output); `variables` is updated in place by the Task's (or the matching
        catcher's) `Assign`. Uncaught errors propagate as AslError.

        `attempts` (runtime.asl.attempts.TaskAttempts, or None) journals the attempts of a
        Task with TimeoutSeconds or a callback and enforces the timeout (the platform's
        watchdog or the in-function timer); without it a timeout uses the in-function timer
        and a callback Task fails with States.Runtime. A callback attempt that must wait
        raises runtime.errors.Suspended (not an AslError: nothing is caught or committed).
        An integration Task that suspends (`states:startExecution.sync`) is hosted by a
        function of its own and gets `attempts`, as a `.waitForTaskToken` one does."""
        st = scope_states(self.definition, scope)[name]
        ja = self.is_jsonata(st)
        resource = st.get("Resource", "")
        target = registry.find(resource)
        callback = resource.endswith(WAIT_FOR_TOKEN) or registry.suspends(target)
        mocked = mocks.response(self.exec_info.get("StateMachine", {}).get("Name", ""), name)
        # only a family that names what it starts (states) pays for the input's digest
        keyed = target is not None and getattr(target.family, "KEYED", False)
        occurrence = self._occurrence(scope, name, value) if keyed else 0
        step = self._step(scope, name, "Task", **{"in": value})

        def attempt(retry_count: int):
            if step is not None:  # when this attempt began (the history's *Scheduled)
                step["at"] = round(self.clock(), 3)
            self._enter()
            timeout, heartbeat = self.task_limits(st, name, value, variables)
            journaled = attempts is not None and (callback or timeout is not None)
            if journaled:
                done = attempts.outcome(retry_count)
                if done is not None:
                    return _replay_outcome(done)
            token = None
            if callback and mocked is None:
                if attempts is None:
                    raise AslError("States.Runtime", f"state {name!r}: {resource} needs a platform "
                                   "that can wait for callbacks")
                token = attempts.token(retry_count, timeout, heartbeat)
            eff = self.task_input(scope, name, value, variables, retry_count, token)
            if step is not None:  # the resolved Parameters / Arguments (the history's parameters)
                step.pop("params", None)
                if eff != value:
                    StepLog.finish(step, params=small(eff))

            def call():
                if step is not None:  # the Lambda function or the integration the step called
                    lambda_fn = (resource.startswith(LAMBDA_INVOKE) and isinstance(eff, dict)
                                 and "FunctionName" in eff)
                    step["resource"] = str(eff["FunctionName"]) if lambda_fn else resource
                if target is None:  # refused by the validator; kept as the Lambda path was
                    return _limit(invoke(resource, eff), "lambda")
                cctx = registry.CallContext(invoke, name, "Arguments" if ja else "Parameters",
                                                resource, str(self.exec_info.get("Id") or ""),
                                                self._invocation(scope, name, eff, occurrence, retry_count)
                                                if keyed else "",
                                                token or "", (scope, name) in self.external,
                                                self.sleep, timeout)
                res = registry.call(target, eff, cctx)
                return res if target.name == "lambda" else _limit(res, target.name)

            if mocked is not None:  # a mocked Task neither calls nor waits for a callback
                if step is not None:  # the resource it stands in for
                    step["resource"] = resource
                return _limit(mocks.answer(mocked, retry_count, name), "mock")

            try:
                if callback:
                    if not attempts.called(retry_count):
                        call()  # its result is not the Task's: the callback's output is
                    return _limit(attempts.wait(retry_count), "callback")
                if attempts is not None and timeout is not None:
                    return attempts.call(retry_count, timeout, call)
                if timeout is not None:
                    return call_with_timeout(call, timeout)
                return call()
            except AslError as err:
                if not journaled or err.error == "States.Runtime":
                    raise
                return _replay_outcome(attempts.settle(retry_count, {"Error": err.error,
                                                                     "Cause": err.cause}))

        skip = None
        if attempts is not None and (callback or "TimeoutSeconds" in st or "TimeoutSecondsPath" in st):
            def skip(n: int) -> bool:  # the next attempt already happened: no need to wait
                return attempts.outcome(n + 1) is not None or (callback and attempts.called(n + 1))
        try:
            nxt, result, caught = self._with_retry_catch(
                st, name, value, attempt, variables, skip,
                on_catch=None if step is None else (lambda err: step.__setitem__("error", err.error)),
                on_retry=None if step is None else (lambda err: StepLog.retried(step, err.error, err.cause,
                                                                                self.clock())))
            raw = result  # the resource's response (the history's *Succeeded output)
            if not caught:
                ctx = self._lazy_ctx(name, 0, variables=variables)
                result = _limit(self._finish_state(st, name, value, result, ctx, variables, ja))
        except AslError as err:
            if step is not None:
                StepLog.finish(step, error=err.error, cause=err.cause)
            err.at(name)
            raise
        if step is not None:
            StepLog.finish(step, out=result, next=nxt, caught=True if caught else None,
                           result=raw if not caught and raw != result else None)
        return nxt, result

    def _occurrence(self, scope: str, name: str, value: Any) -> int:
        """How many times Task `name` of `scope` ran before on the same raw input in this
        invocation (a Choice loop walked in place repeats it): with the input's digest, it
        tells the runs apart the same way on every replay, whatever the order of an inline
        Map's concurrent iterations."""
        key = (f"{scope}/{name}", _digest(value))
        with self._tlock:
            n = self._task_runs.get(key, 0)
            self._task_runs[key] = n + 1
        return n

    def _invocation(self, scope: str, name: str, eff: Any, occurrence: int, retry_count: int) -> str:
        """What identifies one attempt of a Task within the execution, equal on a duplicate
        delivery or a re-execution: the compiled function's invocation (exec_info
        "Invocation", its instance name), the state, the digest of its effective input, the
        occurrence and the retry count; "" when the invocation is unknown."""
        inst = self.exec_info.get("Invocation")
        if not inst:
            return ""
        return f"{inst}|{scope}/{name}|{_digest(eff)}|{occurrence}|{retry_count}"

    def task_limits(self, st: dict[str, Any], name: str, value: Any,
                    variables: dict[str, Any] | None = None) -> tuple[float | None, float | None]:
        """(TimeoutSeconds, HeartbeatSeconds) of Task `st` on raw input `value`, from the
        static fields, the `*Path` ones (reference paths into the state input) or JSONata
        `{% %}` expressions; None when absent (AWS's default of 99999999 s: only the
        function's own timeout applies). Raises AslError('States.Runtime') for a value that
        is not a positive integer."""
        out: list[float | None] = []
        for f in ("TimeoutSeconds", "HeartbeatSeconds"):
            if f + "Path" in st:
                v = paths.read(st[f + "Path"], value, self._lazy_ctx(name, variables=variables))
                where = f"{f}Path {st[f + 'Path']!r}"
            elif f in st and jsonata.is_expr(st[f]):
                ctx = self._lazy_ctx(name, variables=variables)
                v = self._jx(st[f], name, f, self._states(value, ctx), variables)
                where = f
            elif f in st:
                v, where = st[f], f
            else:
                out.append(None)
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > 99999999:
                raise AslError("States.Runtime", f"state {name!r}: {where} must be a positive integer "
                               f"of at most 99999999 seconds, got {v!r}")
            out.append(float(v))
        return out[0], out[1]

    def _with_retry_catch(self, st, name, value, attempt, variables=None, skip_sleep=None,
                          on_catch=None, on_retry=None):
        """Run `attempt(retry_count)` under the state's Retry (first matching retrier, own
        attempt counter, IntervalSeconds * BackoffRate**n capped by MaxDelaySeconds, FULL
        jitter) and Catch (first matching catcher; ResultPath of {Error, Cause}).
        `skip_sleep(n)`: True when attempt n+1 is already journaled (a replay: no wait);
        `on_catch(err)`: told of the error the Catch is tried on, `on_retry(err)` of each
        error a retrier retries (history, runtime.asl.steps)."""
        retriers = st.get("Retry", [])
        counts = [0] * len(retriers)
        retry_count = 0
        while True:
            try:
                out = attempt(retry_count)
                return (None if st.get("End") else st.get("Next")), out, False
            except AslError as err:
                terminal = err.error == "States.Runtime"
                decision = next_retry(retriers, counts, err.error, terminal)
                if decision is not None:
                    idx, delay = decision
                    if on_retry is not None:
                        on_retry(err)
                    counts[idx] += 1
                    retry_count += 1
                    if skip_sleep is None or not skip_sleep(retry_count - 1):
                        self.sleep(delay)
                    continue
                out = self._catch(st, name, value, err, terminal, variables)
                if on_catch is not None:
                    on_catch(err)
                return out

    def _catch(self, st, name, value, err: AslError, terminal: bool,
               variables: dict[str, Any] | None = None):
        """Apply the first catcher matching `err`: JSONPath ResultPath of {Error, Cause} on
        the raw input `value`, or JSONata `Output` (default `$states.errorOutput`); the
        catcher's `Assign` updates `variables`. Returns (Next, output, True); re-raises
        `err` when no catcher matches."""
        for c in st.get("Catch", []):
            if _matches_error(c.get("ErrorEquals", []), err.error, terminal):
                info = {"Error": err.error, "Cause": err.cause}
                ctx = self._lazy_ctx(name, variables=variables)
                if self.is_jsonata(st):
                    states_ = self._states(value, ctx, errorOutput=info)
                    new = self._assignments(c, name, True, variables, states=states_)
                    out = self._jx(c["Output"], name, "Output", states_, variables) \
                        if "Output" in c else info
                else:
                    new = self._assignments(c, name, False, variables, info, ctx)
                    rp = c.get("ResultPath", "$")
                    out = value if rp is None else paths.write(rp, value, info)
                self._commit(variables, new, name)
                return c["Next"], out, True
        raise err

    # ------------------------------------------------------------------ Map / Parallel
    def map_items(self, scope: str, name: str, value: Any,
                  variables: dict[str, Any] | None = None) -> list[Any]:
        """The branch inputs of Map `name`: InputPath, ItemsPath, then ItemSelector (or the
        legacy Parameters) per item with `$$.Map.Item.Index/Value`; for JSONata `Items`
        (default: the input, which must be an array) and ItemSelector with
        `$states.context.Map.Item`."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, variables=variables)
        if self.is_jsonata(st):
            return self._map_items_jsonata(st, name, value, ctx, variables)
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        if "ItemReader" in st:
            items = self._read_items(st, name, lambda t: self._template(t, eff, ctx),
                                     lambda p: paths.read(p, eff, ctx))
        else:
            items = paths.read(st.get("ItemsPath", "$"), eff, ctx)
        if not isinstance(items, list):
            raise AslError("States.Runtime", f"Map state {name!r}: ItemsPath "
                           f"{st.get('ItemsPath', '$')!r} must select an array, got {_kind(items)}")
        if "MaxConcurrencyPath" in st:
            self.map_concurrency(scope, name, value, variables)
        for f, top in (("ToleratedFailureCountPath", None), ("ToleratedFailurePercentagePath", 100)):
            if f in st:  # inline Map: evaluated and checked, no other effect (as on AWS)
                v = paths.read(st[f], eff, ctx)
                if not jsonata.is_number(v) or v < 0 or (top is not None and v > top):
                    raise AslError("States.Runtime", f"{f} {st[f]!r} must select a number "
                                   f"{'between 0 and 100' if top else '>= 0'}, got {v!r}")
        selector = st.get("ItemSelector", st.get("Parameters"))
        if selector is not None:
            items = [self._template(selector, eff, self._lazy_ctx(name, None, (i, it), variables))
                     for i, it in enumerate(items)]
        if "ItemBatcher" in st:
            return self._batch(st, name, list(items), lambda t: self._template(t, eff, ctx),
                               lambda p: paths.read(p, eff, ctx))
        return list(items)

    # ------------------------------------------------------------------ Distributed Map
    def _read_items(self, st: dict[str, Any], name: str, render: Callable[[Any], Any],
                    read: Callable[[str], Any] | None) -> list[Any]:
        """The items of Distributed Map `name`'s ItemReader (runtime.asl.distributed):
        its Parameters (JSONPath) or Arguments (JSONata) evaluated with `render`, MaxItems
        or MaxItemsPath (`read` reads a path from the effective input; None in JSONata),
        then one S3 call through the integration (AslError with S3's error names)."""
        reader = st["ItemReader"]
        res = reader["Resource"]
        spec = reader.get("Arguments", reader.get("Parameters", {}))
        params = render(spec)
        if not isinstance(params, dict):
            raise AslError("States.Runtime", f"Map state {name!r}: ItemReader parameters must be an "
                           f"object, got {_kind(params)}")
        config = dict(reader.get("ReaderConfig") or {})
        limit = config.get("MaxItems", 0)
        if "MaxItemsPath" in config and read is not None:
            limit = read(config["MaxItemsPath"])
        elif jsonata.is_expr(limit):
            limit = render(limit)
        if not jsonata.is_number(limit) or limit < 0 or limit != int(limit) or limit > distributed.MAX_ITEMS:
            raise AslError("States.Runtime", f"Map state {name!r}: ReaderConfig MaxItems must be an "
                           f"integer between 0 and {distributed.MAX_ITEMS}, got {limit!r}")

        target0 = registry.find(res)
        assert target0 is not None  # checked by the validator
        prefix = res[:-len(target0.action)]

        def call(resource: str, action: str, req: dict[str, Any]) -> Any:
            target = registry.find(prefix + action)
            assert target is not None  # checked by the validator
            cctx = registry.CallContext(_no_function, name, "ItemReader", resource)
            try:
                return registry.call(target, req, cctx)
            except AslError as err:  # AWS: any failure to read the items is this error
                raise AslError(distributed.READER_FAILED, f"{err.error}: {err.cause}") from None
        return distributed.read_items(res, params, config, int(limit), call)

    def _batch(self, st: dict[str, Any], name: str, items: list[Any], render: Callable[[Any], Any],
               read: Callable[[str], Any] | None) -> list[Any]:
        """Distributed Map `name`'s ItemBatcher applied to `items`: MaxItemsPerBatch[Path],
        MaxInputBytesPerBatch[Path] (paths read with `read`, JSONata `{% %}` values with
        `render`) and BatchInput (rendered); runtime.asl.distributed.batch."""
        cfg = st["ItemBatcher"]
        limits = []
        for f, top in (("MaxItemsPerBatch", None), ("MaxInputBytesPerBatch", distributed.MAX_BATCH_BYTES)):
            v = cfg.get(f, 0)
            if f + "Path" in cfg and read is not None:
                v = read(cfg[f + "Path"])
            elif jsonata.is_expr(v):
                v = render(v)
            if not jsonata.is_number(v) or v < 0 or v != int(v) or (top and v > top):
                raise AslError("States.Runtime", f"Map state {name!r}: ItemBatcher {f} must be an "
                               f"integer >= 1{f' and <= {top}' if top else ''}, got {v!r}")
            limits.append(int(v))
        with_input = "BatchInput" in cfg
        batch_input = render(cfg["BatchInput"]) if with_input else None
        return distributed.batch(items, limits[0], limits[1], batch_input, with_input)

    def tolerance(self, scope: str, name: str, value: Any,
                  variables: dict[str, Any] | None = None) -> tuple[float | None, float | None]:
        """(ToleratedFailureCount, ToleratedFailurePercentage) of Map `name` on its raw
        input `value` (literal, `*Path` from the effective input, or a JSONata expression);
        None for one not given. Raises AslError(States.Runtime) for a path that selects no
        number in range."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, variables=variables)
        ja = self.is_jsonata(st)
        ip = st.get("InputPath", "$")
        eff = value if ja else ({} if ip is None else paths.read(ip, value, ctx))
        out: list[float | None] = []
        for f, top in (("ToleratedFailureCount", None), ("ToleratedFailurePercentage", 100)):
            if f + "Path" in st and not ja:
                v = paths.read(st[f + "Path"], eff, ctx)
            elif f in st and ja and jsonata.is_expr(st[f]):
                v = self._jx(st[f], name, f, self._states(value, ctx), variables)
            else:
                v = st.get(f)
            if v is not None and (not jsonata.is_number(v) or v < 0 or (top is not None and v > top)):
                raise AslError("States.Runtime", f"Map state {name!r}: {f} must be a number "
                               f"{'between 0 and 100' if top else '>= 0'}, got {v!r}")
            out.append(v)
        return out[0], out[1]

    def map_run_arn(self, scope: str, name: str, run_key: str) -> str:
        """The Map Run ARN of Distributed Map `name` for the attempt `run_key` names (the
        join invocation): `<states prefix>:mapRun:<machine>/<Label or state name>:<id>`."""
        st = scope_states(self.definition, scope)[name]
        info = self.exec_info
        machine = (info.get("StateMachine") or {}).get("Name", "statemachine")
        machine_arn = (info.get("StateMachine") or {}).get("Id", "")
        prefix = machine_arn.rsplit(":stateMachine:", 1)[0] if ":stateMachine:" in machine_arn \
            else DEFAULT_STATES_ARN
        return distributed.map_run_arn(prefix, machine, st.get("Label", name),
                                       distributed.map_run_id(str(info.get("Id")), run_key))

    def conclude(self, scope: str, name: str, value: Any, results: list[Any], inputs: list[Any],
                 run_key: str, variables: dict[str, Any] | None = None) -> Any:
        """The result of Distributed Map `name` from its branch `results` (failed ones are
        runtime.asl.distributed FAILED markers) and the child `inputs`: raises
        States.ExceedToleratedFailureThreshold past the threshold; with a ResultWriter,
        writes the results to S3 through the integration and returns the ResultWriterDetails
        shape; else the outputs, a failed item's execution record in its place. `run_key`
        names the Map Run (the join invocation of this attempt)."""
        st = scope_states(self.definition, scope)[name]
        count, pct = self.tolerance(scope, name, value, variables)
        distributed.check_threshold(results, count, pct)
        run_arn = self.map_run_arn(scope, name, run_key)
        machine_arn = (self.exec_info.get("StateMachine") or {}).get("Id", "")
        child = run_arn.replace(":mapRun:", ":execution:").rsplit(":", 1)[0]
        ok, bad = distributed.records(results, inputs, run_arn, child, machine_arn, iso(self.clock()))
        self.map_runs[(scope, name)] = {"arn": run_arn, "items": len(results), "succeeded": len(ok),
                                        "failed": len(bad), "count": count, "percentage": pct,
                                        "concurrency": self.map_concurrency(scope, name, value, variables)}
        writer = st.get("ResultWriter")
        if not writer or "Resource" not in writer:
            return distributed.outputs(results, bad)
        ja = self.is_jsonata(st)
        ctx = self._lazy_ctx(name, variables=variables)
        spec = writer.get("Arguments", writer.get("Parameters", {}))
        if ja:
            params = self._jx(spec, name, "ResultWriter", self._states(value, ctx), variables)
        else:
            ip = st.get("InputPath", "$")
            params = self._template(spec, {} if ip is None else paths.read(ip, value, ctx), ctx)
        res = writer["Resource"]
        target = registry.find(res)
        assert target is not None  # checked by the validator

        def put(req: dict[str, Any]) -> Any:
            try:
                return registry.call(target, req, registry.CallContext(_no_function, name, "ResultWriter", res))
            except AslError as err:  # AWS: any failure to write the results is this error
                raise AslError(distributed.WRITER_FAILED, f"{err.error}: {err.cause}") from None
        return distributed.write_results(params["Bucket"], params.get("Prefix", ""), run_arn, ok, bad, put)

    def _map_items_jsonata(self, st, name, value, ctx, variables):
        states_ = self._states(value, ctx)
        if "ItemReader" in st:
            items = self._read_items(st, name, lambda t: self._jx(t, name, "ItemReader", states_, variables),
                                     None)
        elif "Items" in st:
            spec = st["Items"]
            items = self._jx(spec, name, "Items", states_, variables)
            if not isinstance(items, list):
                src = jsonata.body(spec) if jsonata.is_expr(spec) else jsonata.short_json(spec)
                raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'Items').prefix()} The "
                               f"JSONata expression '{src}' specified for the field 'Items' "
                               "returned an unexpected result type. Expected 'array', but was "
                               f"'{jsonata.type_name(items)}' for value: {jsonata.short_json(items)}")
        else:
            items = value
            if not isinstance(items, list):
                raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'Items').prefix()} Map "
                               f"state input must be an array but was: {jsonata.short_json(items)}")
        for f in ("MaxConcurrency", "ToleratedFailureCount", "ToleratedFailurePercentage"):
            if jsonata.is_expr(st.get(f)):
                out = self._jx(st[f], name, f, states_, variables)
                if not jsonata.is_number(out) or out < 0 or (f == "ToleratedFailurePercentage" and out > 100):
                    raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, f).prefix()} The "
                                   f"JSONata expression '{jsonata.body(st[f])}' specified for the "
                                   f"field '{f}' returned an unexpected result type. Expected "
                                   f"'number', but was '{jsonata.type_name(out)}' for value: "
                                   f"{jsonata.short_json(out)}")
        selector = st.get("ItemSelector")
        out = list(items)
        if selector is not None:
            out = []
            for i, it in enumerate(items):
                ictx = self._lazy_ctx(name, None, (i, it), variables)
                out.append(self._jx(selector, name, "ItemSelector", self._states(value, ictx), variables))
        if "ItemBatcher" in st:
            return self._batch(st, name, out, lambda t: self._jx(t, name, "ItemBatcher", states_, variables),
                               None)
        return out

    def map_concurrency(self, scope: str, name: str, value: Any,
                        variables: dict[str, Any] | None = None) -> int:
        """Map `name`'s MaxConcurrency on raw input `value`: the literal `MaxConcurrency`, a
        JSONata `{% %}` MaxConcurrency, or `MaxConcurrencyPath` read from the effective input
        (after InputPath); 0 (the default) means unlimited. Raises AslError('States.Runtime')
        when the path does not select a non-negative integer, States.QueryEvaluationError
        when the expression gives no non-negative number (ASL spec "Map State", AWS "Map
        state" page)."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, variables=variables)
        if self.is_jsonata(st) and jsonata.is_expr(st.get("MaxConcurrency")):
            mc = self._jx(st["MaxConcurrency"], name, "MaxConcurrency", self._states(value, ctx), variables)
            if not jsonata.is_number(mc) or mc < 0:
                raise AslError(jsonata.QUERY_ERROR, f"{self._where(name, 'MaxConcurrency').prefix()} "
                               f"The JSONata expression '{jsonata.body(st['MaxConcurrency'])}' specified "
                               "for the field 'MaxConcurrency' returned an unexpected result type. "
                               f"Expected 'number', but was '{jsonata.type_name(mc)}' for value: "
                               f"{jsonata.short_json(mc)}")
            return int(mc)
        if "MaxConcurrencyPath" not in st:
            return int(st.get("MaxConcurrency", 0))
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        mc = paths.read(st["MaxConcurrencyPath"], eff, ctx)
        if not isinstance(mc, int) or isinstance(mc, bool) or mc < 0:
            raise AslError("States.Runtime", f"MaxConcurrencyPath {st['MaxConcurrencyPath']!r} "
                           f"must select a non-negative integer, got {mc!r}")
        return mc

    def parallel_input(self, scope: str, name: str, value: Any,
                       variables: dict[str, Any] | None = None) -> Any:
        """The input every branch of Parallel `name` receives (InputPath, Parameters; for
        JSONata `Arguments`, default the input)."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, variables=variables)
        if self.is_jsonata(st):
            if "Arguments" not in st:
                return value
            return self._jx(st["Arguments"], name, "Arguments", self._states(value, ctx), variables)
        return self._input(st, value, ctx)

    def finish(self, scope: str, name: str, value: Any, results: list[Any],
               variables: dict[str, Any] | None = None) -> tuple[str | None, Any]:
        """Join of Map/Parallel `name`: ResultSelector, Assign, ResultPath (on the state's raw
        input `value`), OutputPath; for JSONata Assign and Output (default the results).
        Returns (next state or None at End, output); `variables` updated in place."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name, variables=variables)
        step = self._step(scope, name, st["Type"], phase="end", maprun=self.map_runs.pop((scope, name), None))
        out = self._finish_state(st, name, value, results, ctx, variables, self.is_jsonata(st))
        nxt = None if st.get("End") else st.get("Next")
        if step is not None:
            StepLog.finish(step, out=out, next=nxt)
        return nxt, out

    def fan_started(self, scope: str, name: str, value: Any, branches: int,
                    map_run: str | None = None) -> None:
        """Record (runtime.asl.steps) that Map/Parallel `name` started `branches` branches
        on raw input `value` (`map_run`: a Distributed Map's Map Run ARN)."""
        st = scope_states(self.definition, scope)[name]
        self._step(scope, name, st["Type"], phase="start", items=branches,
                   maprun={"arn": map_run} if map_run else None, **{"in": value})

    # ------------------------------------------------------------------ in-process
    def run_inline(self, scope: str, name: str, value: Any,
                   invoke: Callable[[str, Any], Any],
                   variables: dict[str, Any] | None = None) -> Any:
        """Run `scope` from `name` to its end in this process (Map/Parallel branches one
        after the other, on threads when they hold Wait states); returns the scope's output
        or raises AslError. `variables` are the workflow variables visible at `name`
        (updated in place)."""
        if variables is None:
            variables = {}
        while True:
            stop = self.walk(scope, name, value, variables=variables)
            if stop.kind == "End":
                return stop.value
            assert stop.name is not None  # a Task, Map or Parallel stop names its state
            if stop.kind == "Task":
                nxt, value = self.run_task(scope, stop.name, stop.value, invoke, variables)
            else:
                nxt, value = self.run_fanout_inline(scope, stop.name, stop.value, invoke, variables)
            if nxt is None:
                return value
            name = nxt

    def run_fanout_inline(self, scope, name, value, invoke, variables=None):
        """Run Map/Parallel `name` in-process, including its Retry and Catch. Each branch
        gets its own copy of the outer `variables` (outer variables are read-only inside
        a branch; what a branch assigns is not visible after the state)."""
        st = scope_states(self.definition, scope)[name]

        def attempt(retry_count: int):
            self._enter()
            if st["Type"] == "Map":
                items = self.map_items(scope, name, value, variables)
                sub = f"{scope}/{name}"
                start = scope_start(self.definition, sub)
                jobs = [(sub, start, it) for it in items]
            else:
                inp = self.parallel_input(scope, name, value, variables)
                jobs = []
                for k in range(len(st["Branches"])):
                    sub = f"{scope}/{name}#{k}"
                    jobs.append((sub, scope_start(self.definition, sub), inp))
            key = f"{self.exec_info.get('Invocation')}|{scope}/{name}|{retry_count}"
            self.fan_started(scope, name, value, len(jobs),
                             self.map_run_arn(scope, name, key) if distributed.is_distributed(st) else None)
            tolerant = distributed.tolerant(st)

            def run(s, n, v, inv, vs):
                try:
                    return self.run_inline(s, n, v, inv, vs)
                except AslError as err:
                    if not tolerant:
                        raise
                    # a tolerant Distributed Map counts a failed item (conclude), not raises it
                    return {distributed.FAILED: {"Error": err.error, "Cause": err.cause}}
            if len(jobs) <= 1 or not any(_has_wait(scope_states(self.definition, s))
                                         for s in {job[0] for job in jobs}):
                # Pass/Choice/Succeed/Fail (and Tasks) only: sequential, no thread start-up
                results = [run(s, n, v, invoke, dict(variables or {})) for s, n, v in jobs]
            else:
                with ThreadPoolExecutor(max_workers=min(8, max(1, len(jobs)))) as pool:  # Waits overlap
                    futs = [pool.submit(run, s, n, v, invoke, dict(variables or {})) for s, n, v in jobs]
                    results = [f.result() for f in futs]
            if distributed.is_distributed(st):
                return self.conclude(scope, name, value, results, [j[2] for j in jobs], key, variables)
            return results

        nxt, result, caught = self._with_retry_catch(st, name, value, attempt, variables)
        step = self._step(scope, name, st["Type"], phase="end", maprun=self.map_runs.pop((scope, name), None))
        if not caught:
            ctx = self._lazy_ctx(name, variables=variables)
            result = self._finish_state(st, name, value, result, ctx, variables, self.is_jsonata(st))
        if step is not None:
            StepLog.finish(step, out=result, next=nxt, caught=True if caught else None)
        return nxt, result


class _LazyContext(dict):
    """A `$$` context object built on first use (most states never read it)."""

    variables: dict[str, Any]  # the workflow variables in scope (read by paths.read)

    def __init__(self, make):
        super().__init__()
        self._make = make
        self._ready = False

    def materialize(self) -> dict:
        """The context object as a plain dict."""
        self._fill()
        return dict(super().items())

    def _fill(self):
        if not self._ready:
            self._ready = True
            self.update(self._make())

    def __getitem__(self, k):
        self._fill()
        return super().__getitem__(k)

    def get(self, k, default=None):
        self._fill()
        return super().get(k, default)

    def keys(self):
        self._fill()
        return super().keys()

    def items(self):
        self._fill()
        return super().items()

    def values(self):
        self._fill()
        return super().values()

    def __iter__(self):
        self._fill()
        return super().__iter__()

    def __len__(self):
        self._fill()
        return super().__len__()

    def __contains__(self, k):
        self._fill()
        return super().__contains__(k)


def _no_function(resource: str, event: Any) -> Any:
    """The `invoke` of an inline integration Task: it calls no function of the app."""
    raise AslError("States.Runtime", f"internal: {resource} does not invoke an app function")


def _has_wait(states: dict[str, Any]) -> bool:
    """True when `states` (a scope's States) holds a Wait state, nested branches included."""
    for st in states.values():
        if st["Type"] == "Wait":
            return True
        if st["Type"] == "Map" and _has_wait((st.get("ItemProcessor") or st.get("Iterator"))["States"]):
            return True
        if st["Type"] == "Parallel" and any(_has_wait(b["States"]) for b in st["Branches"]):
            return True
    return False


def _matches_error(error_equals, error, terminal: bool) -> bool:
    """States.Runtime errors are terminal: never retried or caught (AWS behaviour)."""
    if terminal:
        return False
    return matches(error_equals, error)


def _digest(value: Any) -> str:
    """16 hex digits of the SHA-256 of `value`'s canonical JSON (sorted keys)."""
    import hashlib
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")
