"""The IR `Wrapper` of Kind "asl": runs a compiled function's share of a state machine.

Source: seed 001 §4 (the front-end compiler turns a Step Functions state machine into
per-function IR whose ingress/egress carry the non-Task states) and the ASL spec. The
compiler (unumctl.asl.compiler) writes the fields below; docs/stepfunctions.md explains
the compilation rule.

Wrapper fields: `Definition` (the whole state machine), `Machine` (its name), `Scope`
(where this function's states live, see runtime.asl.machine), `Task` (the Task state this
function hosts, or null), `Join` (the Map/Parallel state whose fan-in this function
receives, or null), `End` (true for a synthesized scope-end function), `Start` (true for
the entry of the execution), `Labels` (stop key -> `$route` label used by the IR edges),
`Joins` (Map/Parallel stop key -> name of its join function), `Inline` (stop keys of
Map/Parallel states run in-process), `Catching` (stop keys of fan-outs with Catch or
Retry: their branches' errors go to the join), `Laned` (stop keys of Maps whose
MaxConcurrency is enforced by lanes, runtime.asl.fanout), `Tolerant` (stop keys of
Distributed Maps that tolerate failed items: an uncaught error in a function of their item
processor ends the branch with a runtime.asl.distributed FAILED marker), `Terminal` (true for the
function that ends its branch scope and feeds the fan-in), `UsesInput` (the machine reads
`$$.Execution.Input`), `External` ([scope, state] of the lambda:invoke Tasks of functions
outside the app: walked in place, called through Lambda's Invoke API) and `Integrations`
([scope, state] of the integration Tasks this function runs: the aws target's role grants
their IAM actions, runtime/aws/iam.py) and `CoLocated` (issue 25, a fused Task chain: stop
key of a Task state -> {"Function", "Handler"} of the compiled function that hosts it,
whose Task this function runs in place instead of routing to it; written by
unumctl.tuning.asl_fusion, docs/fusion.md "Compiled Step Functions").

Values on the wire between compiled functions are envelopes {"AslState": <state to
start at>, "AslInput": <raw state input>, "AslVars": <workflow variables, only when
non-empty>}; a Map/Parallel fan-out sends a list of them (each branch envelope carries the
outer variables, read-only in the branch), and stores the state's raw input with the
variables as they were at the fan-out (`asl/fan/<join>`, runtime.asl.fanout) for the
join; a scope's end sends the plain branch output (it is what the join's fan-in reads; what
a branch assigned is dropped), and the top-level end is the session result. Variables thus
travel only inside committed values, so duplicates and retries see the same ones.

The wrapper is called as `wrapper(call_user, value, ctx) -> (output, route)` by the engine
(runtime.engine.Engine) and raises UserFunctionError(Error, Cause) for an uncaught ASL
error, which the engine records as the session's failure.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from typing import Any, Callable

from ..errors import StaleExecution, UserFunctionError
from ..payload import instance_name
from . import distributed, fanout
from .arns import parse_function_name, role_arn, states_arn_prefix  # noqa: F401  (re-exported)
from .errors import AslError, next_retry
from .machine import Machine, iso, lambda_cause, scope_start
from .steps import StepLog
from .wrapper_ir import AslWrapperIR

__all__ = ["ENV_VIRTUAL_CLOCK", "colocated_handler", "envelope", "is_envelope", "lambda_name",
           "parse_function_name", "stop_key"]

ENV_VIRTUAL_CLOCK = "UNUM_ASL_VIRTUAL_CLOCK"
ENV_MAX_WAIT = "UNUM_ASL_MAX_WAIT_SECONDS"
DEFAULT_MAX_WAIT = 840.0  # seconds: under Lambda's 900 s and Cloud Functions' 540..3600 s caps


def is_envelope(value: Any) -> bool:
    """True for the inter-function envelope {"AslState", "AslInput"[, "AslVars"][, "AslDelay"]}."""
    return (isinstance(value, dict) and "AslState" in value and "AslInput" in value
            and set(value) <= {"AslState", "AslInput", "AslDelay", "AslVars"})


def envelope(state: str, value: Any, variables: dict[str, Any] | None = None) -> dict[str, Any]:
    """The value sent to the function that continues at `state` with raw input `value` and
    the workflow `variables` visible there (the "AslVars" field only when non-empty)."""
    out: dict[str, Any] = {"AslState": state, "AslInput": value}
    if variables:
        out["AslVars"] = dict(variables)
    return out


def stop_key(kind: str, scope: str, name: str | None = None, cand: str | None = None) -> str:
    """Key of a compile-time stop: kind t (Task), m (Map), p (Parallel), e (scope end)."""
    key = f"{kind}|{scope}"
    if name is not None:
        key += f"|{name}"
    if cand is not None:
        key += f"|{cand}"
    return key


def lambda_name(ref: str) -> str:
    """The Lambda function name of a FunctionName or function ARN, without its qualifier
    (parse_function_name; `MyFn:prod` -> `MyFn`). A reference of another shape: the segment
    after `function:`, else the last segment."""
    parsed = parse_function_name(ref)
    if parsed is not None:
        return parsed[0]
    parts = str(ref).split(":")
    if "function" in parts:
        i = parts.index("function")
        if i + 1 < len(parts):
            return parts[i + 1]
    return parts[-1]


class AslWrapper:
    """Callable wrapper built from the IR `Wrapper` mapping (see module docstring)."""

    def __init__(self, spec: dict[str, Any]):
        self.spec = spec
        ir = self.ir = AslWrapperIR.parse(spec, "Wrapper")  # its schema: runtime/asl/wrapper_ir.py
        self.definition = ir.definition
        self.machine = ir.machine
        self.scope = ir.scope
        self.task = ir.task
        self.join: str | None = ir.join
        self.wait = ir.wait
        self.end = ir.end
        self.start = ir.start
        self.labels: dict[str, str] = ir.labels
        self.joins: dict[str, str] = ir.joins
        self.inline = set(ir.inline)
        self.catching = set(ir.catching)
        self.laned = set(ir.laned)
        self.tolerant = set(ir.tolerant)
        self.terminal = ir.terminal
        self.uses_input = ir.uses_input
        self.colocated: dict[str, dict[str, str]] = ir.colocated
        self.engine: Any = None  # a runtime.engine.Engine once attached
        self._offset: list[float] | None = None

    def attach(self, engine) -> None:
        """Called by runtime.engine.Engine: gives access to the datastore and clock."""
        self.engine = engine

    # ------------------------------------------------------------------ services
    def _ds_get(self, session: str, key: str) -> Any:
        """An item published by an earlier invocation of this execution (a Map's input for
        its join, the execution input). It exists from before any continuation of its
        publisher was invoked until the session ends, so a missing one means this execution
        is stale: raises StaleExecution, which the engine drops."""
        eng = self.engine
        item = eng.ds.get(session, key)
        try:
            if item is None:
                raise KeyError(key)
            return eng.load(session, item)
        except KeyError:
            raise StaleExecution(f"datastore item {key!r} is gone: the session has ended") from None

    # ------------------------------------------------------------------ call
    def __call__(self, call_user, value: Any, ctx) -> tuple[Any, Any]:
        self._m: Machine | None = None
        try:
            out = self._run(call_user, value, ctx)
            if self._offset is not None and isinstance(getattr(ctx, "extra", None), dict):
                ctx.extra["AslClockOffset"] = self._offset[0]  # virtual time already spent
            return out
        except AslError as err:
            if self._tolerated():
                return self._end(self.scope, {distributed.FAILED: {"Error": err.error, "Cause": err.cause}}, ctx)
            escalated = self._escalate(err)
            if escalated is not None:
                return escalated
            self._notify_parent(ctx, "FAILED", error=err.error, cause=err.cause)
            raise UserFunctionError(err.error, err.cause, state=err.state) from None  # type: ignore[arg-type]

    def _tolerated(self) -> bool:
        """True when this function is in the item processor of a Distributed Map that
        tolerates failed items: its uncaught error ends the branch as a failed item."""
        parent, _, last = self.scope.rpartition("/")
        return bool(self.scope) and "#" not in last and stop_key("m", parent, last) in self.tolerant

    def _notify_parent(self, ctx, status: str, output: Any = None, error: str | None = None,
                       cause: str | None = None) -> None:
        """At the end of an execution started by a `states:startExecution.sync` Task (its
        continuation, {"Token", "Version"}, in the execution's context "AslExec"."Parent"):
        complete the parent's task token with the execution's outcome
        (runtime.asl.integrations.states.notify). Before the end commits, so at least once;
        a repeated completion is ignored by the callback API."""
        extra = ctx.extra if isinstance(getattr(ctx, "extra", None), dict) else {}
        link = (extra.get("AslExec") or {}).get("Parent")
        m = self._m
        if not isinstance(link, dict) or m is None:
            return
        from .integrations import states
        inp = m.exec_info.get("Input")
        result = states.describe(link, m.exec_info, m.start_time, m.clock(), inp() if callable(inp) else inp,
                                 status, output, error, cause)
        states.notify(link, result)

    def _escalate(self, err: AslError) -> tuple[Any, Any] | None:
        """An error uncaught in a branch fails the enclosing Map/Parallel state: when that
        state (or one further out) has a matching Catch or Retry, send {"AslError": ...} to
        its join function, which applies the Retry (a new attempt of the whole state) or
        the Catch (ASL spec "Parallel"/"Map": a branch failure fails the state). Returns
        None when no enclosing Catch or Retry matches."""
        from .machine import _matches_error, scope_states
        scope = self.scope
        while scope:
            parent, _, last = scope.rpartition("/")
            state, _, _ = last.partition("#")
            st = scope_states(self.definition, parent)[state]
            key = stop_key("m" if st["Type"] == "Map" else "p", parent, state)
            if key in self.catching and any(
                    _matches_error(c.get("ErrorEquals", []), err.error, err.error == "States.Runtime")
                    for c in st.get("Catch", []) + st.get("Retry", [])):
                return {"AslError": {"Error": err.error, "Cause": err.cause, "State": err.state}}, \
                    self.labels["x" + key[1:]]
            scope = parent
        return None

    def _machine(self, value: Any, ctx) -> tuple[Machine, bool]:
        extra = ctx.extra if isinstance(getattr(ctx, "extra", None), dict) else {}
        real_clock = self.engine.clock if self.engine is not None else time.time
        starting = self.start and not is_envelope(value) and "AslStarted" not in extra
        exec_meta = extra.setdefault("AslExec", {})
        if starting:
            # committed with the entry's checkpoint (context) and published from it, so
            # every continuation sees the start time and input of the winning execution
            # (and the continuation of a .sync parent, whose end reads the input)
            exec_meta.setdefault("Start", real_clock())
            extra["AslStarted"] = True
            if (self.uses_input or "Parent" in exec_meta) and hasattr(ctx, "publish"):
                ctx.publish("asl/input", {"Input": value})
        start = float(exec_meta.get("Start", real_clock()))
        if os.environ.get(ENV_VIRTUAL_CLOCK):
            offset = [float(extra.get("AslClockOffset", 0.0))]
            self._offset = offset  # carried to the continuations by __call__

            def clock() -> float:
                return start + offset[0]

            def sleep(s: float) -> None:
                offset[0] += s
        else:
            limit = float(os.environ.get(ENV_MAX_WAIT, DEFAULT_MAX_WAIT))
            clock = real_clock

            def sleep(s: float) -> None:
                if s > limit:
                    raise AslError("States.Runtime", f"a wait of {s:.0f} s exceeds the in-function "
                                   f"limit of {limit:.0f} s ({ENV_MAX_WAIT})")
                (self.engine.sleep if self.engine is not None else time.sleep)(s)

        if starting or self.engine is None:
            inp: Any = value
        else:
            session = ctx.session
            inp = lambda: self._ds_get(session, "asl/input")["Input"]  # noqa: E731
        arn = states_arn_prefix()
        info = {"Id": f"{arn}:execution:{self.machine}:{ctx.session}", "Name": ctx.session,
                "StartTime": iso(start), "Input": inp, "RoleArn": role_arn(arn),
                "Invocation": getattr(ctx, "instance", None),
                "StateMachine": {"Id": f"{arn}:stateMachine:{self.machine}", "Name": self.machine}}
        m = Machine(self.definition, info, clock, sleep, start_time=start)
        m.external = frozenset(self.ir.external)
        if self.engine is not None and self.engine.observing():
            # the states this execution walks and runs, recorded with its event when the
            # execution ends (compacted against the event's input and output)
            m.steps = StepLog(clock)
            self.engine.observe("states", m.steps.compact)
        return m, starting

    def _attempts(self, ctx) -> Any:
        """The journal and timers of this execution's Task (runtime.asl.attempts), or None
        without an engine (unit tests: timeouts use the in-function timer)."""
        if self.engine is None:
            return None
        from ..session import SESSION_CONTEXT
        from .attempts import TaskAttempts
        start = float(ctx.extra.get(SESSION_CONTEXT, {}).get("Start", self.engine.clock()))
        return TaskAttempts(self.engine, ctx, self.machine, self.engine.retention.item_expiry(start))

    def _invoke(self, call_user, ctx):
        def invoke(resource: str, event: Any) -> Any:
            try:
                return call_user(event, ctx)
            except UserFunctionError as err:
                raise AslError(err.error_type, lambda_cause(err.error_type, err.message, err.trace)) from None
        return invoke

    def _run_colocated(self, m: Machine, key: str, scope: str, name: str, value: Any, call_user, ctx,
                       variables: dict[str, Any], ran: set[str]) -> tuple[str | None, Any]:
        """Run the co-located Task of stop `key` (issue 25, `CoLocated`) in this execution as its
        own function would (its handler, context and invocation name: member_context), but
        without the attempt journal (runtime.asl.attempts), as an inline Map/Parallel runs its
        Tasks: the journal replays an attempt's outcome for the invocation's committed input,
        and a co-located Task's input is recomputed by every execution of the group (the
        head's Task may compute another one). So its TimeoutSeconds uses the in-function timer
        on every target, and its attempts restart with the group after a crash or a platform
        timeout (docs/fusion.md "Compiled Step Functions"). Returns run_task's (next state or
        None, output)."""
        if key in ran:  # apply refuses members on a loop
            raise AslError("States.Runtime", f"internal: {ctx.function} reached the co-located Task "
                           f"{name!r} twice in one execution")
        ran.add(key)
        mctx = member_context(ctx, self.colocated[key]["Function"])
        return m.run_task(scope, name, value, self._invoke(call_user, mctx), variables, None)

    def _iterates(self, label: str) -> int:
        """1 when the fan-out edge for `label` is a back edge (a loop increments the
        iteration counter of the branches and so of their join), else 0."""
        if self.engine is None:
            return 0
        for e in self.engine.ir.next:
            if e.conditional is not None and e.conditional.source == f"$route == '{label}'":
                return 1 if e.iterate else 0
        return 0

    def _end(self, scope: str, out: Any, ctx=None) -> tuple[Any, Any]:
        if scope == "":
            if ctx is not None:
                self._notify_parent(ctx, "SUCCEEDED", out)
            return out, None
        if self.terminal and ctx is not None and self._lane_scope(scope) is not None:
            out = fanout.lane_exit(ctx, scope, out, lambda k: self._ds_get(ctx.session, k))
        return out, self.labels[stop_key("e", scope)]

    def _lane_scope(self, scope: str) -> str | None:
        """`scope` when it is the iterator of a laned Map (MaxConcurrency), else None."""
        parent, _, last = scope.rpartition("/")
        return scope if "#" not in last and stop_key("m", parent, last) in self.laned else None

    def _fan_key(self, scope: str, name: str) -> str:
        kind = scope_states_type(self.definition, scope, name)
        return stop_key("m" if kind == "Map" else "p", scope, name)

    def _envelopes(self, m: Machine, scope: str, name: str, raw: Any,
                   variables: dict[str, Any]) -> list[Any]:
        """The branch envelopes of Map/Parallel `name` on its raw input (one per item or
        branch, each carrying the outer `variables`); AslError when the state's input
        processing fails."""
        if scope_states_type(self.definition, scope, name) == "Map":
            items = m.map_items(scope, name, raw, variables)
            sub = f"{scope}/{name}"
            return [envelope(scope_start(self.definition, sub), it, variables) for it in items]
        inp2 = m.parallel_input(scope, name, raw, variables)
        n = len(m_states(m, scope)[name]["Branches"])
        return [envelope(scope_start(self.definition, f"{scope}/{name}#{k}"), inp2, variables)
                for k in range(n)]

    def _fan_out(self, m: Machine, ctx, scope: str, name: str, raw: Any, envs: list[Any],
                 label: str, counts: list[int] | None, variables: dict[str, Any]) -> tuple[Any, Any]:
        """Start an attempt of Map/Parallel `name`: publish its join's items and return the
        fan-out values with `label` (runtime.asl.fanout)."""
        key = self._fan_key(scope, name)
        join_inst = instance_name(self.joins[key], ctx.indexes, ctx.iteration + self._iterates(label),
                                  getattr(ctx, "bases", None))
        lane_scope = f"{scope}/{name}" if key in self.laned else None
        n = m.map_concurrency(scope, name, raw, variables) if lane_scope is not None else 0
        dist = distributed.is_distributed(m_states(m, scope)[name])
        m.fan_started(scope, name, raw, len(envs), m.map_run_arn(scope, name, join_inst) if dist else None)
        inputs = [e["AslInput"] for e in envs] if dist else None
        return fanout.start(ctx, join_inst, raw, envs, counts, lane_scope, n, variables, inputs), label

    def _read_fan(self, ctx) -> tuple[Any, list[int], dict[str, Any]]:
        return fanout.read_fan(self._ds_get(ctx.session, fanout.fan_key(ctx.instance)))

    def _retry_or_catch(self, m: Machine, ctx, scope: str, error: dict[str, Any]):
        """A branch of the state this function joins failed with `error`: apply the state's
        Retry (re-run the whole state as a new attempt, its counters committed in the new
        attempt's `asl/fan/` item) or its Catch; re-raises the error when neither applies.
        Returns ("fan", (values, label), variables) or ("go", (state, input), variables):
        the variables as they were before the state, after a catcher's Assign."""
        assert self.join is not None  # called only in the function that joins the state
        raw, counts, variables = self._read_fan(ctx)
        st = m_states(m, scope)[self.join]
        err = AslError(error.get("Error"), error.get("Cause"), error.get("State"))
        retriers = st.get("Retry", [])
        counts = (counts + [0] * len(retriers))[:len(retriers)]
        decision = next_retry(retriers, counts, err.error, err.error == "States.Runtime")
        if decision is not None:
            idx, delay = decision
            counts[idx] += 1
            m.sleep(delay)
            try:
                envs = self._envelopes(m, scope, self.join, raw, variables)
            except AslError as err2:
                state, inp, _ = m._catch(st, self.join, raw, err2, err2.error == "States.Runtime",
                                         variables)
                return "go", (state, inp), variables
            if envs:
                key = self._fan_key(scope, self.join)
                return "fan", self._fan_out(m, ctx, scope, self.join, raw, envs,
                                            self.labels["r" + key[1:]], counts, variables), variables
            return "go", m.finish(scope, self.join, raw, [], variables), variables
        state, inp, _ = m._catch(st, self.join, raw, err, False, variables)
        return "go", (state, inp), variables

    def _run(self, call_user, value: Any, ctx) -> tuple[Any, Any]:
        self._offset = None  # this call's virtual clock offset: set by _machine, read by __call__
        extra = ctx.extra if isinstance(getattr(ctx, "extra", None), dict) else None
        if self.start and extra is not None and not is_envelope(value) and "AslStarted" not in extra:
            from .integrations.states import take_parent
            value, link = take_parent(value)  # a .sync parent's continuation, not the input
            if link is not None:
                extra.setdefault("AslExec", {})["Parent"] = link
        m, starting = self._machine(value, ctx)
        self._m = m
        scope = self.scope
        variables: dict[str, Any] = {}  # workflow variables visible here (committed values only)
        if starting:
            state, inp = self.definition["StartAt"], value
        elif self.join is not None and isinstance(value, list):
            doc = self._ds_get(ctx.session, fanout.fan_key(ctx.instance))
            raw, _, variables = fanout.read_fan(doc)
            key = self._fan_key(scope, self.join)
            results = fanout.join_values(ctx, f"{scope}/{self.join}" if key in self.laned else None, value)
            concluded = True
            if distributed.is_distributed(m_states(m, scope)[self.join]):
                try:  # the failure threshold, the ResultWriter (runtime.asl.distributed)
                    results = m.conclude(scope, self.join, raw, results, list(doc.get("Items") or []),
                                         ctx.instance, variables)
                except AslError as err:  # the Map state's own Retry or Catch applies
                    concluded = False
                    how, what, variables = self._retry_or_catch(
                        m, ctx, scope, {"Error": err.error, "Cause": err.cause})
                    if how == "fan":
                        return what
                    state, inp = what
                    if state is None:
                        return self._end(scope, inp, ctx)
            if concluded:
                nxt, out = m.finish(scope, self.join, raw, results, variables)
                if nxt is None:
                    return self._end(scope, out, ctx)
                state, inp = nxt, out
        elif self.join is not None and isinstance(value, dict) and set(value) == {"AslError"}:
            # a branch failed: the Map/Parallel state's Retry or Catch applies
            how, what, variables = self._retry_or_catch(m, ctx, scope, value["AslError"])
            if how == "fan":
                return what
            state, inp = what
            if state is None:
                return self._end(scope, inp, ctx)
        elif self.end:
            return self._end(scope, value, ctx)
        elif is_envelope(value):
            state, inp = value["AslState"], value["AslInput"]
            variables = dict(value.get("AslVars") or {})
        else:
            raise AslError("States.Runtime", f"internal: {ctx.function} received a value that is "
                           "neither an ASL envelope nor a fan-in list")
        invoke = self._invoke(call_user, ctx)
        if self.engine is not None:  # for runtime.asl.callback.client(context) in user code
            from .callback import CallbackClient
            ctx.task_callbacks = CallbackClient(self.engine.ds, self.engine.invoker, self.engine.clock,
                                                retention=self.engine.retention)
        ran_task = False
        ran_colocated: set[str] = set()  # stop keys of co-located Tasks run (each at most once)
        # A positive Wait becomes a timer (a delayed invocation of the Wait's function) when
        # the platform's invoker can defer invocations (local target); elsewhere, and under
        # the virtual clock, the function waits in place, bounded by UNUM_ASL_MAX_WAIT_SECONDS.
        timers = (not os.environ.get(ENV_VIRTUAL_CLOCK) and self.engine is not None
                  and getattr(self.engine.invoker, "supports_delay", False))
        waited = self.wait is not None and state == self.wait and is_envelope(value) \
            and "AslDelay" in value
        while True:
            stop = m.walk(scope, state, inp, stop_at_wait=timers, waited=waited,
                          variables=variables, stop_at_callback=True)
            waited = False
            if stop.kind == "End":
                return self._end(scope, stop.value, ctx)
            name = stop.name
            assert name is not None
            if stop.kind == "Wait":
                key = stop_key("w", scope, name)
                st = m_states(m, scope)[name]
                delay = m.wait_delay(st, stop.value, m._lazy_ctx(name, variables=variables),
                                     variables=variables, name=name)
                out = envelope(name, stop.value, variables)
                out["AslDelay"] = delay
                return out, self.labels[key]
            if stop.kind == "Task":
                if not ran_task and name == self.task:
                    ran_task = True
                    nxt, out = m.run_task(scope, name, stop.value, invoke, variables,
                                          self._attempts(ctx))
                elif stop_key("t", scope, name) in self.colocated:
                    nxt, out = self._run_colocated(m, stop_key("t", scope, name), scope, name, stop.value,
                                                   call_user, ctx, variables, ran_colocated)
                elif stop_key("t", scope, name) in self.labels:
                    return envelope(name, stop.value, variables), self.labels[stop_key("t", scope, name)]
                else:  # FunctionName chosen at run time: route to the variant for it
                    try:
                        fn = m.task_input(scope, name, stop.value, dict(variables))
                    except AslError:  # raised again by run_task below, under Retry/Catch
                        fn = None
                    fname = lambda_name(fn.get("FunctionName", "")) if isinstance(fn, dict) else ""
                    label = self.labels.get(stop_key("t", scope, name, fname))
                    if stop_key("t", scope, name, fname) in self.colocated:  # issue 25: a fused variant
                        nxt, out = self._run_colocated(m, stop_key("t", scope, name, fname), scope, name,
                                                       stop.value, call_user, ctx, variables, ran_colocated)
                        if nxt is None:
                            return self._end(scope, out, ctx)
                        state, inp = nxt, out
                        continue
                    if label is not None:
                        return envelope(name, stop.value, variables), label
                    ref = fn.get("FunctionName") if isinstance(fn, dict) else None

                    def missing(resource, event, ref=ref):
                        raise AslError("Lambda.ResourceNotFoundException",
                                       f"Function not found: {ref}:$LATEST (Service: AWSLambda; "
                                       "Status Code: 404; Error Code: ResourceNotFoundException)")
                    nxt, out = m.run_task(scope, name, stop.value, missing, variables)
                if nxt is None:
                    return self._end(scope, out, ctx)
                state, inp = nxt, out
                continue
            key = stop_key("m" if stop.kind == "Map" else "p", scope, name)
            if key in self.inline:
                nxt, out = m.run_fanout_inline(scope, name, stop.value, invoke, variables)
            else:
                try:
                    outs = self._envelopes(m, scope, name, stop.value, variables)
                except AslError as err:  # the state's own input processing failed
                    if key not in self.catching:
                        raise
                    state, inp, _ = m._catch(m_states(m, scope)[name], name, stop.value, err,
                                             err.error == "States.Runtime", variables)
                    continue
                if outs:
                    return self._fan_out(m, ctx, scope, name, stop.value, outs, self.labels[key], None,
                                         variables)
                nxt, out = m.finish(scope, name, stop.value, [], variables)
            if nxt is None:
                return self._end(scope, out, ctx)
            state, inp = nxt, out


def member_context(ctx: Any, function: str) -> Any:
    """The context of co-located `function`'s Task (a `CoLocated` member): the execution's
    (runtime.engine.UserContext) with the member's function and the invocation name it would
    have had unfused (same indexes and iteration: it is reached by a Scalar route), so its
    handler sees its own name. The extra context, `created` and the callback client are shared.
    A context of another type (a unit test's) is returned unchanged."""
    if not hasattr(ctx, "indexes") or not hasattr(ctx, "function"):
        return ctx
    out = replace(ctx, function=function,
                  instance=instance_name(function, tuple(ctx.indexes), ctx.iteration, tuple(ctx.bases)))
    if hasattr(ctx, "task_callbacks"):
        out.task_callbacks = ctx.task_callbacks
    return out


def colocated_handler(own: Callable[[Any, Any], Any],
                      members: dict[str, Callable[[Any, Any], Any]]) -> Callable[[Any, Any], Any]:
    """The handler of a function whose Wrapper has `CoLocated` members: calls the member's
    handler when the context names a member (member_context), else `own`. The engine thus
    applies its IR Retry, timing and output checks to every member's call alike."""
    def handler(event: Any, ctx: Any) -> Any:
        return members.get(str(getattr(ctx, "function", "")), own)(event, ctx)
    handler.__name__ = f"colocated_{getattr(own, '__name__', 'handler')}"
    return handler


def scope_states_type(definition: dict[str, Any], scope: str, name: str) -> str:
    """The Type of state `name` in `scope`."""
    from .machine import scope_states
    return scope_states(definition, scope)[name]["Type"]


def m_states(m: Machine, scope: str) -> dict[str, Any]:
    """The States mapping of `scope` in `m`'s definition."""
    from .machine import scope_states
    return scope_states(m.definition, scope)


def factory(spec: dict[str, Any]) -> AslWrapper:
    """The runtime.wrappers factory for Kind "asl"."""
    return AslWrapper(spec)
