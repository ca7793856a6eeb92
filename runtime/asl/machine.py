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
* `run_inline` a whole scope in-process (used for a Map/Parallel state whose branches hold
  only Pass/Choice/Succeed/Fail states, or no Task under a Retry/Catch, and by unit tests).

A scope is addressed by a string: "" is the top level, "<scope>/<MapState>" a Map's
iterator, "<scope>/<ParallelState>#<k>" branch k of a Parallel state.
"""

from __future__ import annotations

import datetime as _dt
import json
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable

from . import choice, intrinsics, paths
from .errors import AslError, matches, next_retry

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
PAYLOAD_LIMIT = 256 * 1024
MAX_TIMESTAMP_AHEAD = 2 ** 31  # seconds; AWS rejects waits further in the future
_COMPACT = json.JSONEncoder(separators=(",", ":"))


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
                item: tuple[int, Any] | None = None) -> dict[str, Any]:
        """The context object `$$` for state `name` (ASL spec "Context Object")."""
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
        return ctx

    def _lazy_ctx(self, name, retry_count=None, item=None):
        return _LazyContext(lambda: self.context(name, retry_count, item))

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
                 invoke: Callable[[str, Any], Any]) -> tuple[str | None, Any]:
        """Run Task `name` on raw input `value`; `invoke(resource_or_function, event)` calls
        the Lambda function and raises AslError for its errors. Returns (next state or None
        at End, output). Uncaught errors propagate as AslError."""
        st = scope_states(self.definition, scope)[name]

        def attempt(retry_count: int):
            self._enter()
            ctx = self._lazy_ctx(name, retry_count)
            eff = self._input(st, value, ctx)
            resource = st.get("Resource", "")
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
                result = {"ExecutedVersion": "$LATEST", "Payload": res,
                          "SdkHttpMetadata": {"HttpStatusCode": 200},
                          "SdkResponseMetadata": {"RequestId": str(uuid.uuid4())},
                          "StatusCode": 200}
            else:
                result = _limit(invoke(resource, eff), "lambda")
            return result

        nxt, result, caught = self._with_retry_catch(st, name, value, attempt)
        if caught:
            return nxt, result
        return nxt, _limit(self._output(st, value, result, self._lazy_ctx(name, 0)))

    def _with_retry_catch(self, st, name, value, attempt):
        """Run `attempt(retry_count)` under the state's Retry (first matching retrier, own
        attempt counter, IntervalSeconds * BackoffRate**n capped by MaxDelaySeconds, FULL
        jitter) and Catch (first matching catcher; ResultPath of {Error, Cause})."""
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
                    counts[idx] += 1
                    retry_count += 1
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
            self.map_concurrency(scope, name, value)
        selector = st.get("ItemSelector", st.get("Parameters"))
        if selector is None:
            return list(items)
        return [self._template(selector, eff, self._lazy_ctx(name, None, (i, it)))
                for i, it in enumerate(items)]

    def map_concurrency(self, scope: str, name: str, value: Any) -> int:
        """Map `name`'s MaxConcurrency on raw input `value`: the literal `MaxConcurrency`, or
        `MaxConcurrencyPath` read from the effective input (after InputPath); 0 (the
        default) means unlimited. Raises AslError('States.Runtime') when the path does not
        select a non-negative integer (ASL spec "Map State", AWS "Map state" page)."""
        st = scope_states(self.definition, scope)[name]
        if "MaxConcurrencyPath" not in st:
            return int(st.get("MaxConcurrency", 0))
        ctx = self._lazy_ctx(name)
        ip = st.get("InputPath", "$")
        eff = {} if ip is None else paths.read(ip, value, ctx)
        mc = paths.read(st["MaxConcurrencyPath"], eff, ctx)
        if not isinstance(mc, int) or isinstance(mc, bool) or mc < 0:
            raise AslError("States.Runtime", f"MaxConcurrencyPath {st['MaxConcurrencyPath']!r} "
                           f"must select a non-negative integer, got {mc!r}")
        return mc

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
        """Run `scope` from `name` to its end in this process (Map/Parallel branches one
        after the other, on threads when they hold Wait states); returns the scope's output
        or raises AslError."""
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
            if len(jobs) <= 1 or not any(_has_wait(scope_states(self.definition, s))
                                         for s in {job[0] for job in jobs}):
                # Pass/Choice/Succeed/Fail (and Tasks) only: sequential, no thread start-up
                return [self.run_inline(s, n, v, invoke) for s, n, v in jobs]
            with ThreadPoolExecutor(max_workers=min(8, max(1, len(jobs)))) as pool:  # Waits overlap
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
    if len(_COMPACT.encode(result)) > PAYLOAD_LIMIT:
        raise AslError("States.DataLimitExceeded", f"{what} returned a result with a size "
                       "exceeding the maximum number of bytes service limit.")
    return result


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number")
