"""The ASL state interpreter used by compiled functions.

Source: ASL spec (https://states-language.net/spec.html) sections "States", "Input and
Output Processing", "Errors", "Task", "Pass", "Choice", "Wait", "Succeed", "Fail",
"Parallel", "Map", and the AWS developer guide for Lambda task results and the context
object. The compiler (unumctl.asl) cuts a state machine into functions; at run time each
function uses a `Machine` to:

* `walk` from a state through Pass/Choice/Wait/Succeed/Fail states (no invocation) until it
  reaches a Task, Map or Parallel state (a `Stop`) or the end of its scope;
* `run_task` one Task state (InputPath, Parameters, the call, ResultSelector, ResultPath,
  OutputPath, Retry and Catch);
* `map_items` / `finish` the fan-out and the join of a Map or Parallel state;
* `run_inline` a whole scope in-process (used for a Map/Parallel state with Retry or Catch
  whose branches contain no Task, and by unit tests).

A scope is addressed by a string: "" is the top level, "<scope>/<MapState>" a Map's
iterator, "<scope>/<ParallelState>#<k>" branch k of a Parallel state.
"""

from __future__ import annotations

import datetime as _dt
import json
import random
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from . import choice, intrinsics, paths
from .attempts import call_with_timeout, replay as _replay_outcome
from .errors import AslError, matches

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
WAIT_FOR_TOKEN = ".waitForTaskToken"  # Resource suffix of a callback Task
PAYLOAD_LIMIT = 256 * 1024
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


def lambda_cause(error_type: str, message: str, trace: list[str] | None = None) -> str:
    """The Cause string of a Lambda function error, as Lambda reports a Python exception."""
    lines = [ln.rstrip("\n") for ln in (trace or []) if ln.startswith("  File")]
    return json.dumps({"errorMessage": message, "errorType": error_type,
                       "requestId": str(uuid.uuid4()), "stackTrace": lines})


class Machine:
    """Interprets states of `definition` (a parsed state machine).

    `exec_info` is {"Id", "Name", "StartTime" (ISO), "Input" (callable or value),
    "StateMachine": {"Id", "Name"}}; `clock()` returns Unix seconds; `sleep(s)` waits
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
        self._tlock = threading.Lock()

    def _enter(self) -> None:
        with self._tlock:
            self.transitions += 1

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
                          "RoleArn": "arn:aws:iam::000000000000:role/unum", "RedriveCount": 0,
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

    def _lazy_ctx(self, name, retry_count=None, item=None, token=None):
        return _LazyContext(lambda: self.context(name, retry_count, item, token))

    def _template(self, template, data, ctx):
        return paths.render(template, data, ctx, intrinsics.evaluate)

    def _input(self, st, value, ctx, params_key="Parameters"):
        """InputPath then Parameters (ASL "Input and Output Processing")."""
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        if params_key in st:
            eff = self._template(st[params_key], eff, ctx)
        return eff

    def _output(self, st, raw, result, ctx, selector=True):
        """ResultSelector, ResultPath, OutputPath."""
        if selector and "ResultSelector" in st:
            result = self._template(st["ResultSelector"], result, ctx)
        rp = st.get("ResultPath", "$")
        out = raw if rp is None else paths.write(rp, raw, result)
        op = st.get("OutputPath", "$")
        return {} if op is None else paths.read(op, out, ctx)

    # ------------------------------------------------------------------ walking
    def walk(self, scope: str, name: str, value: Any, stop_at_wait: bool = False,
             waited: bool = False) -> Stop:
        """Run non-invoking states from `name` until a Task/Map/Parallel or the scope's end.

        With `stop_at_wait`, a Wait state whose delay is positive is a stop too (kind
        'Wait', so that the caller can defer the continuation with a timer); `waited` says
        the wait of state `name` has already elapsed (the timer fired).
        Raises AslError for a Fail state or a runtime error (uncaught by construction: only
        Task, Map and Parallel have Catch)."""
        states = scope_states(self.definition, scope)
        first = True
        while True:
            st = states[name]
            t = st["Type"]
            if t in ("Task", "Map", "Parallel"):
                return Stop(t, scope, name, value)
            skip_wait = first and waited
            first = False
            if t == "Wait" and stop_at_wait and not skip_wait and \
                    self.wait_delay(st, value, self._lazy_ctx(name)) > 0:
                return Stop("Wait", scope, name, value)
            if not skip_wait:
                self._enter()
            ctx = self._lazy_ctx(name)
            if t == "Pass":
                eff = self._input(st, value, ctx)
                result = st["Result"] if "Result" in st else eff
                value = _limit(self._output(st, value, result, ctx, selector=False))
            elif t == "Wait":
                if not skip_wait:
                    delay = self.wait_delay(st, value, ctx)
                    if delay > 0:
                        self.sleep(delay)
                op = st.get("OutputPath", "$")
                ip = st.get("InputPath", "$")
                eff = {} if ip is None else paths.read(ip, value, ctx)
                value = {} if op is None else paths.read(op, eff, ctx)
            elif t == "Choice":
                ip = st.get("InputPath", "$")
                eff = {} if ip is None else paths.read(ip, value, ctx)
                nxt = None
                for rule in st.get("Choices", []):
                    if choice.evaluate(rule, eff, ctx):
                        nxt = rule["Next"]
                        break
                if nxt is None:
                    nxt = st.get("Default")
                if nxt is None:
                    raise AslError("States.NoChoiceMatched",
                                   f"No Matches! in state '{name}'")
                op = st.get("OutputPath", "$")
                value = {} if op is None else paths.read(op, eff, ctx)
                name = nxt
                continue
            elif t == "Succeed":
                ip = st.get("InputPath", "$")
                eff = {} if ip is None else paths.read(ip, value, ctx)
                op = st.get("OutputPath", "$")
                return Stop("End", scope, None, {} if op is None else paths.read(op, eff, ctx))
            elif t == "Fail":
                error = st.get("Error")
                cause = st.get("Cause")
                if "ErrorPath" in st:
                    error = self._path_or_intrinsic(st["ErrorPath"], value, ctx)
                if "CausePath" in st:
                    cause = self._path_or_intrinsic(st["CausePath"], value, ctx)
                raise AslError(error, cause)
            else:
                raise AslError("States.Runtime", f"state {name!r}: unsupported Type {t!r}")
            if st.get("End"):
                return Stop("End", scope, None, value)
            name = st["Next"]

    def _path_or_intrinsic(self, expr, value, ctx):
        if paths.is_path(expr):
            return paths.read(expr, value, ctx)
        return intrinsics.evaluate(expr, value, ctx)

    def wait_delay(self, st, value, ctx) -> float:
        """Seconds Wait state `st` waits from now (Seconds, SecondsPath, Timestamp,
        TimestampPath); raises AslError('States.Runtime') for bad values."""
        now = self.clock()
        if "Seconds" in st:
            delay = float(st["Seconds"])
        elif "SecondsPath" in st:
            v = paths.read(st["SecondsPath"], value, ctx)
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0:
                raise AslError("States.Runtime", f"SecondsPath {st['SecondsPath']!r} must select a "
                               f"non-negative number, got {v!r}")
            delay = float(v)
        else:
            ts = st.get("Timestamp") if "Timestamp" in st else paths.read(st["TimestampPath"], value, ctx)
            when = choice.parse_timestamp(ts)
            if when is None:
                raise AslError("States.Runtime", f"The TimestampPath parameter does not reference a "
                               f"valid ISO-8601 extended offset date-time format string: {ts!r}")
            target = when.timestamp()
            if target - self.start_time > MAX_TIMESTAMP_AHEAD:
                raise AslError("States.Runtime", f"Wait Timestamp {ts!r} is more than 2^31 seconds "
                               "after the execution start")
            delay = max(0.0, target - now)
        return delay

    # ------------------------------------------------------------------ Task
    def task_input(self, scope: str, name: str, value: Any) -> Any:
        """The effective input (after InputPath and Parameters) of Task `name`."""
        st = scope_states(self.definition, scope)[name]
        return self._input(st, value, self._lazy_ctx(name, 0))

    def run_task(self, scope: str, name: str, value: Any,
                 invoke: Callable[[str, Any], Any], attempts: Any = None) -> tuple[str | None, Any]:
        """Run Task `name` on raw input `value`; `invoke(resource_or_function, event)` calls
        the Lambda function and raises AslError for its errors. Returns (next state or None
        at End, output). Uncaught errors propagate as AslError.

        `attempts` (runtime.asl.attempts.TaskAttempts, or None) journals the attempts of a
        Task with TimeoutSeconds or a callback and enforces the timeout (the platform's
        watchdog or the in-function timer); without it a timeout uses the in-function timer
        and a callback Task fails with States.Runtime. A callback attempt that must wait
        raises runtime.errors.Suspended (not an AslError: nothing is caught or committed)."""
        st = scope_states(self.definition, scope)[name]
        resource = st.get("Resource", "")
        callback = resource.endswith(WAIT_FOR_TOKEN)

        def attempt(retry_count: int):
            self._enter()
            timeout, heartbeat = self.task_limits(st, name, value)
            journaled = attempts is not None and (callback or timeout is not None)
            if journaled:
                done = attempts.outcome(retry_count)
                if done is not None:
                    return _replay_outcome(done)
            token = None
            if callback:
                if attempts is None:
                    raise AslError("States.Runtime", f"state {name!r}: {resource} needs a platform "
                                   "that can wait for callbacks")
                token = attempts.token(retry_count, timeout, heartbeat)
            ctx = self._lazy_ctx(name, retry_count, token=token)
            eff = self._input(st, value, ctx)

            def call():
                if resource.startswith(LAMBDA_INVOKE):
                    if not isinstance(eff, dict) or "FunctionName" not in eff:
                        raise AslError("States.Runtime", f"state {name!r}: Parameters.FunctionName is "
                                       "required for arn:aws:states:::lambda:invoke")
                    payload = eff.get("Payload")
                    if isinstance(payload, str):
                        try:
                            payload = json.loads(payload)
                        except ValueError:
                            pass
                    elif payload is None:
                        payload = {}
                    res = _limit(invoke(eff["FunctionName"], payload), "lambda")
                    return {"ExecutedVersion": "$LATEST", "Payload": res,
                            "SdkHttpMetadata": {"HttpStatusCode": 200},
                            "SdkResponseMetadata": {"RequestId": str(uuid.uuid4())},
                            "StatusCode": 200}
                return _limit(invoke(resource, eff), "lambda")

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
        nxt, result, caught = self._with_retry_catch(st, name, value, attempt, skip)
        if caught:
            return nxt, result
        return nxt, _limit(self._output(st, value, result, self._lazy_ctx(name, 0)))

    def task_limits(self, st: dict[str, Any], name: str, value: Any) -> tuple[float | None, float | None]:
        """(TimeoutSeconds, HeartbeatSeconds) of Task `st` on raw input `value`, from the
        static fields or the `*Path` ones (reference paths into the state input); None when
        absent (AWS's default of 99999999 s: only the function's own timeout applies).
        Raises AslError('States.Runtime') for a value that is not a positive integer."""
        out: list[float | None] = []
        for f in ("TimeoutSeconds", "HeartbeatSeconds"):
            if f + "Path" in st:
                v = paths.read(st[f + "Path"], value, self._lazy_ctx(name))
                where = f"{f}Path {st[f + 'Path']!r}"
            elif f in st:
                v, where = st[f], f
            else:
                out.append(None)
                continue
            if isinstance(v, str) and v.strip().startswith("{%"):
                out.append(None)  # a JSONata expression: evaluated by the JSONata data flow
                continue
            if not isinstance(v, int) or isinstance(v, bool) or v < 1 or v > 99999999:
                raise AslError("States.Runtime", f"state {name!r}: {where} must be a positive integer "
                               f"of at most 99999999 seconds, got {v!r}")
            out.append(float(v))
        return out[0], out[1]

    def _with_retry_catch(self, st, name, value, attempt, skip_sleep=None):
        """Run `attempt(retry_count)` under the state's Retry (first matching retrier, own
        attempt counter, IntervalSeconds * BackoffRate**n capped by MaxDelaySeconds, FULL
        jitter) and Catch (first matching catcher; ResultPath of {Error, Cause}).
        `skip_sleep(n)`: True when attempt n+1 is already journaled (a replay: no wait)."""
        retriers = st.get("Retry", [])
        counts = [0] * len(retriers)
        retry_count = 0
        while True:
            try:
                out = attempt(retry_count)
                return (None if st.get("End") else st.get("Next")), out, False
            except AslError as err:
                terminal = err.error == "States.Runtime"
                idx = next((i for i, r in enumerate(retriers)
                            if _matches_error(r.get("ErrorEquals", []), err.error, terminal)), None)
                if idx is not None and counts[idx] < int(retriers[idx].get("MaxAttempts", 3)):
                    r = retriers[idx]
                    delay = float(r.get("IntervalSeconds", 1)) * float(r.get("BackoffRate", 2.0)) ** counts[idx]
                    if "MaxDelaySeconds" in r:
                        delay = min(delay, float(r["MaxDelaySeconds"]))
                    if r.get("JitterStrategy") == "FULL":
                        delay = random.uniform(0, delay)
                    counts[idx] += 1
                    retry_count += 1
                    if skip_sleep is None or not skip_sleep(retry_count - 1):
                        self.sleep(delay)
                    continue
                return self._catch(st, name, value, err, terminal)

    def _catch(self, st, name, value, err: AslError, terminal: bool):
        for c in st.get("Catch", []):
            if _matches_error(c.get("ErrorEquals", []), err.error, terminal):
                info = {"Error": err.error, "Cause": err.cause}
                rp = c.get("ResultPath", "$")
                out = value if rp is None else paths.write(rp, value, info)
                return c["Next"], out, True
        raise err

    # ------------------------------------------------------------------ Map / Parallel
    def map_items(self, scope: str, name: str, value: Any) -> list[Any]:
        """The branch inputs of Map `name`: InputPath, ItemsPath, then ItemSelector (or the
        legacy Parameters) per item with `$$.Map.Item.Index/Value`."""
        st = scope_states(self.definition, scope)[name]
        ctx = self._lazy_ctx(name)
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        items = paths.read(st.get("ItemsPath", "$"), eff, ctx)
        if not isinstance(items, list):
            raise AslError("States.Runtime", f"Map state {name!r}: ItemsPath "
                           f"{st.get('ItemsPath', '$')!r} must select an array, got {_kind(items)}")
        if "MaxConcurrencyPath" in st:
            mc = paths.read(st["MaxConcurrencyPath"], eff, ctx)
            if not isinstance(mc, int) or isinstance(mc, bool) or mc < 0:
                raise AslError("States.Runtime", f"MaxConcurrencyPath {st['MaxConcurrencyPath']!r} "
                               f"must select a non-negative integer, got {mc!r}")
        selector = st.get("ItemSelector", st.get("Parameters"))
        if selector is None:
            return list(items)
        return [self._template(selector, eff, self._lazy_ctx(name, None, (i, it)))
                for i, it in enumerate(items)]

    def parallel_input(self, scope: str, name: str, value: Any) -> Any:
        """The input every branch of Parallel `name` receives (InputPath, Parameters)."""
        st = scope_states(self.definition, scope)[name]
        return self._input(st, value, self._lazy_ctx(name))

    def finish(self, scope: str, name: str, value: Any, results: list[Any]) -> tuple[str | None, Any]:
        """Join of Map/Parallel `name`: ResultSelector, ResultPath (on the state's raw input
        `value`), OutputPath. Returns (next state or None at End, output)."""
        st = scope_states(self.definition, scope)[name]
        out = self._output(st, value, results, self._lazy_ctx(name))
        return (None if st.get("End") else st.get("Next")), out

    # ------------------------------------------------------------------ in-process
    def run_inline(self, scope: str, name: str, value: Any,
                   invoke: Callable[[str, Any], Any]) -> Any:
        """Run `scope` from `name` to its end in this process (Map/Parallel branches on
        threads); returns the scope's output or raises AslError."""
        while True:
            stop = self.walk(scope, name, value)
            if stop.kind == "End":
                return stop.value
            if stop.kind == "Task":
                nxt, value = self.run_task(scope, stop.name, stop.value, invoke)
            else:
                nxt, value = self.run_fanout_inline(scope, stop.name, stop.value, invoke)
            if nxt is None:
                return value
            name = nxt

    def run_fanout_inline(self, scope, name, value, invoke):
        """Run Map/Parallel `name` in-process, including its Retry and Catch."""
        st = scope_states(self.definition, scope)[name]

        def attempt(retry_count: int):
            self._enter()
            if st["Type"] == "Map":
                items = self.map_items(scope, name, value)
                sub = f"{scope}/{name}"
                start = scope_start(self.definition, sub)
                jobs = [(sub, start, it) for it in items]
            else:
                inp = self.parallel_input(scope, name, value)
                jobs = []
                for k in range(len(st["Branches"])):
                    sub = f"{scope}/{name}#{k}"
                    jobs.append((sub, scope_start(self.definition, sub), inp))
            with ThreadPoolExecutor(max_workers=min(8, max(1, len(jobs)))) as pool:
                futs = [pool.submit(self.run_inline, s, n, v, invoke) for s, n, v in jobs]
                return [f.result() for f in futs]

        nxt, result, caught = self._with_retry_catch(st, name, value, attempt)
        if caught:
            return nxt, result
        return nxt, self._output(st, value, result, self._lazy_ctx(name))


class _LazyContext(dict):
    """A `$$` context object built on first use (most states never read it)."""

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


def _matches_error(error_equals, error, terminal: bool) -> bool:
    """States.Runtime errors are terminal: never retried or caught (AWS behaviour)."""
    if terminal:
        return False
    return matches(error_equals, error)


def _limit(result: Any, label: str | None = None) -> Any:
    """Decode a bytes result (sent verbatim as JSON text by Lambda) and enforce the 256 KiB
    payload limit (States.DataLimitExceeded)."""
    what = f"The state/task '{label}'" if label else "The state/task"
    if isinstance(result, (bytes, bytearray)):
        if len(result) > PAYLOAD_LIMIT:
            raise AslError("States.DataLimitExceeded", f"{what} returned a result with a size "
                           "exceeding the maximum number of bytes service limit.")
        try:
            return json.loads(result)
        except ValueError:
            return result.decode("utf-8", "replace")
    if len(json.dumps(result, separators=(",", ":"))) > PAYLOAD_LIMIT:
        raise AslError("States.DataLimitExceeded", f"{what} returned a result with a size "
                       "exceeding the maximum number of bytes service limit.")
    return result


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")
