"""TestState on `unumctl serve`: run one state of a definition on an input, with the ASL
interpreter the compiled functions use (runtime/asl/machine.py), and answer what AWS answers.

Source: the Step Functions API reference, TestState (request `definition`, `stateName`,
`input`, `roleArn`, `inspectionLevel` INFO | DEBUG | TRACE, `revealSecrets`, `variables`,
`mock` {`result` | `errorOutput` {error, cause}, `fieldValidationMode`}, `context`,
`stateConfiguration` {`retrierRetryCount`, ...}; response `status` SUCCEEDED | FAILED |
RETRIABLE | CAUGHT_ERROR, `output`, `error`, `cause`, `nextState`, `inspectionData`
{input, afterInputPath, afterParameters, afterArguments, result, afterResultSelector,
afterResultPath, variables, errorDetails {catchIndex, retryIndex,
retryBackoffIntervalSeconds}}) and the developer guide "Using TestState API to test a state".

- `definition` is one state (an object with `Type`), or, with `stateName`, a whole state
  machine whose state of that name (at any depth) is tested, under the machine's
  `QueryLanguage`.
- A Task, Map or Parallel state runs only with `mock` on serve: its `result` (JSON text) is
  the state's raw result, its `errorOutput` the error the state's Retry and Catch see
  (`stateConfiguration.retrierRetryCount` = the attempts already made). A mocked error that
  a retrier matches is RETRIABLE (no wait: `retryBackoffIntervalSeconds` says how long AWS
  would wait, the upper bound of a FULL jitter), one a catcher matches CAUGHT_ERROR (with
  the catcher's output and Next), else FAILED. Without `mock`, such a state is
  ValidationException: serve does not call a Lambda function or a service from TestState.
- `mock` on a Pass, Wait, Choice, Succeed or Fail state is ValidationException (AWS: "A mock
  can only be specified for Task, Map, or Parallel states"); so is `context` without `mock`.
- A Wait state does not wait: its delay is evaluated (and checked) and the input passes.
- `fieldValidationMode` is accepted; the mocked result is not checked against the service's
  API model (only that it is JSON). `roleArn` and `revealSecrets` are accepted and unused.
- INFO answers status, output, error, cause and nextState; DEBUG and TRACE add
  `inspectionData` (TRACE's HTTP request and response exist only for HTTP Tasks, which
  serve does not run).
"""

from __future__ import annotations

import copy
import json
import time
from typing import Any

from runtime.asl import paths
from runtime.asl.errors import AslError, matches, next_retry
from runtime.asl.machine import Machine, iso

from ..asl.validate import AslValidationError, validate
from .shapes import SfnError, json_text, parse_json_field, required

__all__ = ["run_test_state"]

LEVELS = ("INFO", "DEBUG", "TRACE")
MOCKABLE = ("Task", "Map", "Parallel")
TESTABLE = MOCKABLE + ("Pass", "Wait", "Choice", "Succeed", "Fail")
TEST_STATE = "TestState"  # the name of a state given alone (AWS's console shows none)


class _TestMachine(Machine):
    """The interpreter with the request's `context` merged over the context object."""

    def __init__(self, definition: dict[str, Any], exec_info: dict[str, Any], context: dict[str, Any]):
        super().__init__(definition, exec_info, time.time, lambda s: None)
        self.override = context

    def context(self, name: str | None, retry_count: int | None = None,
                item: tuple[int, Any] | None = None, token: str | None = None) -> dict[str, Any]:
        return _merge(super().context(name, retry_count, item, token), self.override)


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _find(states: Any, name: str) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(the state `name`, the States mapping holding it), searched depth-first through Map
    iterators and Parallel branches; None when absent."""
    if not isinstance(states, dict):
        return None
    if isinstance(states.get(name), dict):
        return states[name], states
    for st in states.values():
        if not isinstance(st, dict):
            continue
        inner = [st.get("ItemProcessor") or st.get("Iterator") or {}] + list(st.get("Branches") or [])
        for scope in inner:
            found = _find(scope.get("States") if isinstance(scope, dict) else None, name)
            if found is not None:
                return found
    return None


def _the_state(definition: Any, state_name: Any) -> tuple[str, dict[str, Any], str | None]:
    """(name, state, machine-level QueryLanguage) of the state under test; SfnError
    InvalidDefinition naming what is wrong."""
    if not isinstance(definition, str):
        raise SfnError("ValidationException", "definition must be a string of ASL JSON")
    try:
        doc = json.loads(definition)
    except ValueError as exc:
        raise SfnError("InvalidDefinition", f"definition is not JSON: {exc}") from None
    except RecursionError:
        raise SfnError("InvalidDefinition", "definition is nested too deep") from None
    if not isinstance(doc, dict):
        raise SfnError("InvalidDefinition", "definition must be a JSON object (a state, or a state "
                       "machine with stateName)")
    if state_name is not None:
        if not isinstance(state_name, str) or not isinstance(doc.get("States"), dict):
            raise SfnError("InvalidDefinition", "with stateName, definition must be a state machine "
                           "(an object with States)")
        try:
            validate(doc, "definition")
        except AslValidationError as exc:
            raise SfnError("InvalidDefinition", str(exc)) from None
        found = _find(doc["States"], state_name)
        if found is None:
            raise SfnError("ValidationException", f"stateName: no state {state_name[:80]!r} in the definition")
        return state_name, found[0], doc.get("QueryLanguage")
    if "Type" not in doc:
        raise SfnError("InvalidDefinition", "definition must be one state (an object with Type), or a "
                       "state machine with stateName")
    # validate the state as the only one of a machine, its transitions leading to stubs
    stubs = {n: {"Type": "Succeed"} for n in _targets(doc)}
    stubs.pop(TEST_STATE, None)
    try:
        validate({"StartAt": TEST_STATE, "States": {TEST_STATE: doc, **stubs}}, "definition")
    except AslValidationError as exc:
        raise SfnError("InvalidDefinition", str(exc)) from None
    return TEST_STATE, doc, None


def _targets(st: dict[str, Any]) -> list[str]:
    """The names a state transitions to (Next, Default, Choices' and Catchers' Next)."""
    out = [st.get("Next"), st.get("Default")]
    out += [c.get("Next") for c in st.get("Choices") or [] if isinstance(c, dict)]
    out += [c.get("Next") for c in st.get("Catch") or [] if isinstance(c, dict)]
    return [n for n in out if isinstance(n, str)]


def _object(body: dict[str, Any], field: str) -> dict[str, Any]:
    value = parse_json_field(body.get(field), field, "ValidationException") if body.get(field) else {}
    if not isinstance(value, dict):
        raise SfnError("ValidationException", f"{field} must be a JSON object")
    return value


def run_test_state(body: dict[str, Any], execution_arn: str) -> dict[str, Any]:
    """Answer a TestState request `body` (module docstring); `execution_arn` is the
    `$$.Execution.Id` the state sees. SfnError InvalidDefinition, InvalidExecutionInput or
    ValidationException for a request AWS refuses."""
    name, st, language = _the_state(required(body, "definition"), body.get("stateName"))
    level = body.get("inspectionLevel") or "INFO"
    if level not in LEVELS:
        raise SfnError("ValidationException", f"inspectionLevel must be one of {', '.join(LEVELS)}")
    if st["Type"] not in TESTABLE:
        raise SfnError("InvalidDefinition", f"state {name!r}: Type {st['Type']!r} cannot be tested")
    value = parse_json_field(body.get("input"), "input")
    variables = _object(body, "variables")
    mock = body.get("mock")
    if mock is not None and st["Type"] not in MOCKABLE:
        raise SfnError("ValidationException", f"mock: a mock can only be specified for Task, Map or "
                       f"Parallel states, not {st['Type']}")
    if body.get("context") and mock is None:
        raise SfnError("ValidationException", "context may only be specified with mock")
    if mock is None and st["Type"] in MOCKABLE:
        raise SfnError("ValidationException", f"state {name!r}: unumctl serve tests a {st['Type']} state "
                       "only with mock (a mocked result or errorOutput); it calls no function or service "
                       "from TestState")
    if mock is not None and (not isinstance(mock, dict) or ("result" in mock) == ("errorOutput" in mock)):
        raise SfnError("ValidationException", "mock must have exactly one of result and errorOutput")
    context = _object(body, "context")
    retries = int((body.get("stateConfiguration") or {}).get("retrierRetryCount") or 0)
    definition = {"StartAt": name, "States": {name: st}}
    if language:
        definition["QueryLanguage"] = language
    now = time.time()
    m = _TestMachine(definition, {"Id": execution_arn, "Name": execution_arn.rsplit(":", 1)[-1],
                                  "StartTime": iso(now), "Input": value,
                                  "StateMachine": {"Id": execution_arn, "Name": TEST_STATE}}, context)
    if body.get("roleArn"):
        m.exec_info["RoleArn"] = body["roleArn"]
    data: dict[str, Any] = {"input": json_text(value)}
    try:
        out = _run(m, name, st, copy.deepcopy(value), variables, mock, retries, data)
    except AslError as err:
        out = {"status": "FAILED", "error": err.error or "", "cause": err.cause or ""}
    if level != "INFO":
        data["variables"] = json_text(variables)
        out["inspectionData"] = data
    return out


def _run(m: _TestMachine, name: str, st: dict[str, Any], value: Any, variables: dict[str, Any],
         mock: Any, retries: int, data: dict[str, Any]) -> dict[str, Any]:
    """Run state `st` once; fills `data` (inspectionData) and returns the response's status,
    output, error, cause and nextState. AslError for an error the state does not handle."""
    ja = m.is_jsonata(st)
    ctx = m._lazy_ctx(name, retries if st["Type"] == "Task" else None, variables=variables)
    t = st["Type"]
    nxt = None if st.get("End") else st.get("Next")
    if t == "Choice":
        if not ja:
            data["afterInputPath"] = json_text(_after_input_path(st, value, ctx))
        out, nxt, _ = m._choice(st, name, value, ctx, variables, ja)
        return _succeeded(out, nxt)
    if t == "Succeed":
        stop = m.walk("", name, value, variables=variables)
        return _succeeded(stop.value, None)
    if t == "Fail":
        m.walk("", name, value, variables=variables)  # raises the state's error
        raise AslError("States.Runtime", f"state {name!r} did not fail")  # not reached
    if t == "Wait":
        m.wait_delay(st, value, ctx, variables=variables, name=name)
        return _succeeded(m._passthrough(st, name, value, ctx, variables, ja), nxt)
    # Pass, and mocked Task / Map / Parallel: the effective input, the result, the output
    if ja:
        eff = m.task_input("", name, value, variables, retries) if t == "Task" else value
        if "Arguments" in st:
            data["afterArguments"] = json_text(eff)
    else:
        data["afterInputPath"] = json_text(_after_input_path(st, value, ctx))
        # a Map's Parameters/ItemSelector shape each item, not the state's input
        eff = _after_input_path(st, value, ctx) if t == "Map" else m._input(st, value, ctx)
        if "Parameters" in st and t != "Map":
            data["afterParameters"] = json_text(eff)
    if t == "Pass":
        result = st["Result"] if "Result" in st else eff
    elif "errorOutput" in mock:
        return _error(m, name, st, value, variables, mock["errorOutput"], retries, data)
    else:
        result = parse_json_field(mock.get("result"), "mock.result", "ValidationException")
    data["result"] = json_text(result)
    if not ja:
        selected = m._select(st, result, ctx)
        if "ResultSelector" in st:
            data["afterResultSelector"] = json_text(selected)
        rp = st.get("ResultPath", "$")
        data["afterResultPath"] = json_text(value if rp is None else paths.write(rp, value, selected))
    out = m._finish_state(st, name, value, result, ctx, variables, ja)
    return _succeeded(out, nxt)


def _after_input_path(st: dict[str, Any], value: Any, ctx: Any) -> Any:
    ip = st.get("InputPath", "$")
    return {} if ip is None else paths.read(ip, value, ctx)


def _succeeded(out: Any, nxt: str | None) -> dict[str, Any]:
    res: dict[str, Any] = {"status": "SUCCEEDED", "output": json_text(out)}
    if nxt is not None:
        res["nextState"] = nxt
    return res


def _error(m: _TestMachine, name: str, st: dict[str, Any], value: Any, variables: dict[str, Any],
           spec: Any, retries: int, data: dict[str, Any]) -> dict[str, Any]:
    """The mocked error `spec` ({error, cause}) under the state's Retry (the matching retrier
    has made `retries` attempts) and Catch: RETRIABLE, CAUGHT_ERROR, or AslError (FAILED)."""
    if not isinstance(spec, dict) or not isinstance(spec.get("error"), str):
        raise SfnError("ValidationException", "mock.errorOutput.error is required (a string)")
    err = AslError(spec["error"], spec.get("cause") or "")
    retriers = st.get("Retry") or []
    decision = next_retry(retriers, [retries] * len(retriers), err.error, err.error == "States.Runtime",
                          uniform=lambda low, high: high)
    base = {"error": err.error, "cause": err.cause}
    if decision is not None:
        idx, delay = decision
        data["errorDetails"] = {"retryIndex": idx, "retryBackoffIntervalSeconds": int(delay)}
        return {"status": "RETRIABLE", **base}
    catchers = [] if err.error == "States.Runtime" else st.get("Catch") or []
    index = next((i for i, c in enumerate(catchers) if matches(c.get("ErrorEquals", []), err.error)), None)
    if index is None:
        raise err
    nxt, out, _ = m._catch(st, name, value, err, False, variables)
    data["errorDetails"] = {"catchIndex": index}
    return {"status": "CAUGHT_ERROR", **base, "output": json_text(out), "nextState": nxt}
